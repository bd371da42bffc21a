package testfleet

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// guardian is a small shell, in a session of its own, that waits on a pipe whose only writer is the fleet's
// owner. The pipe closes when the owner releases it or dies in any way, even by SIGKILL; the shell then kills
// every process whose command line names the fleet's directory (envtest starts etcd and kube-apiserver in their
// own process groups, so they would otherwise outlive a killed test binary) and removes the directory.
type guardian struct {
	cmd *exec.Cmd
	w   *os.File
}

func startGuardian(dir string, removeDir bool) (*guardian, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// The directory comes through the environment, not argv: pkill -f matches command lines, and the guardian
	// must not match itself. Processes name files inside the directory, hence the trailing slash.
	script := `cat >/dev/null; d="$MYSQLFLEET_FLEET_DIR"; pkill -KILL -f -- "$d/"; sleep 0.2; pkill -KILL -f -- "$d/"
[ "$MYSQLFLEET_FLEET_RM" = rm ] && rm -rf -- "$d"; exit 0`
	rm := "keep"
	if removeDir {
		rm = "rm"
	}
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = append(os.Environ(), "MYSQLFLEET_FLEET_DIR="+dir, "MYSQLFLEET_FLEET_RM="+rm)
	cmd.Stdin = r
	// Its own session: a Ctrl-C in the terminal must not kill the guardian before the processes it guards.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		_ = r.Close()
		_ = w.Close()
		return nil, fmt.Errorf("testfleet: starting guardian: %w", err)
	}
	_ = r.Close()
	return &guardian{cmd: cmd, w: w}, nil
}

// release closes the pipe and waits for the guardian to finish its sweep.
func (g *guardian) release() error {
	_ = g.w.Close()
	if err := g.cmd.Wait(); err != nil {
		return fmt.Errorf("testfleet: guardian: %w", err)
	}
	return nil
}
