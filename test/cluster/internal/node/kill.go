package node

import "syscall"

func killPid(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
