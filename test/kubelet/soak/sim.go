package soak

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// simClient speaks the NVML simulator's control protocol (one command line
// per connection, answered "ok [payload]" or "error <message>"; see
// docs/nvml-simulator.md) on the socket of the simulator inside gpulet.
type simClient struct{ socket string }

// do sends one command and returns the payload of an "ok" answer. A
// connection error (gpulet is starting or was just killed) is returned as
// errSimDown so the driver can tell it from a refused command.
func (c simClient) do(line string) (string, error) {
	conn, err := net.DialTimeout("unix", c.socket, 5*time.Second)
	if err != nil {
		return "", fmt.Errorf("%w: %v", errSimDown, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := conn.Write([]byte(line + "\n")); err != nil {
		return "", fmt.Errorf("%w: %v", errSimDown, err)
	}
	// The answer is "ok", "ok <payload>" or "ok\n<payload>" (status), or
	// "error <message>"; the simulator closes the connection after it.
	data, err := io.ReadAll(conn)
	if err != nil && len(data) == 0 {
		return "", fmt.Errorf("%w: reading the answer to %q: %v", errSimDown, line, err)
	}
	reply := strings.TrimRight(string(data), "\n")
	if rest, ok := strings.CutPrefix(reply, "ok"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\n') {
		return strings.TrimSpace(rest), nil
	}
	return "", fmt.Errorf("simulator refused %q: %s", line, reply)
}

type simDownError struct{}

func (simDownError) Error() string { return "simulator socket not answering" }

var errSimDown = simDownError{}

// dropped returns how many events the simulator discarded from full event
// queues (a client that does not read, e.g. while it backs off after
// failed waits, loses the oldest events), since the process started.
func (c simClient) dropped() (int, error) {
	payload, err := c.do("status")
	if err != nil {
		return 0, err
	}
	var status struct {
		Events struct {
			Dropped int `json:"dropped"`
		} `json:"events"`
	}
	if err := json.Unmarshal([]byte(payload), &status); err != nil {
		return 0, fmt.Errorf("simulator status %q: %w", payload, err)
	}
	return status.Events.Dropped, nil
}
