/* The library an attacker's image names in LD_PRELOAD (exploit tests for
 * the ld-cache hook, docs/runtime.md "Threat model"): loaded into any
 * dynamically linked process, its constructor records that process in a
 * marker directory on the runtime side, which does not exist inside the
 * container. The directory is named by GPULET_POC_MARKER_DIR, or else by
 * the file poc-marker-dir beside the library (the image's own copy of it,
 * reached as /proc/self/cwd/poc-marker-dir by a process whose working
 * directory is the rootfs). A process inside the container cannot write
 * there, so a marker means the library ran outside it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void MarkerDirFromFile(char* out, size_t size) {
  Dl_info info;
  char path[PATH_MAX];
  out[0] = '\0';
  if (dladdr((void*)MarkerDirFromFile, &info) == 0 || info.dli_fname == NULL)
    return;
  snprintf(path, sizeof(path), "%s", info.dli_fname);
  char* slash = strrchr(path, '/');
  if (slash == NULL) return;
  snprintf(slash, sizeof(path) - (size_t)(slash - path), "/poc-marker-dir");
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n = read(fd, out, size - 1);
  close(fd);
  out[n > 0 ? n : 0] = '\0';
  char* newline = strchr(out, '\n');
  if (newline != NULL) *newline = '\0';
}

__attribute__((constructor)) static void RecordLoad(void) {
  char dir[PATH_MAX];
  const char* named = getenv("GPULET_POC_MARKER_DIR");
  if (named != NULL && named[0] != '\0') {
    snprintf(dir, sizeof(dir), "%s", named);
  } else {
    MarkerDirFromFile(dir, sizeof(dir));
  }
  if (dir[0] == '\0') return;
  char exe[PATH_MAX] = "?";
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  exe[n > 0 ? n : 1] = '\0';
  char marker[PATH_MAX + 32];
  snprintf(marker, sizeof(marker), "%s/loaded-%d", dir, (int)getpid());
  int fd = open(marker, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  dprintf(fd, "uid %d exe %s\n", (int)getuid(), exe);
  close(fd);
}
