//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// managerProcess is one replica of the hub manager, run as a process as the chart's Deployment would run it.
type managerProcess struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// buildManager compiles cmd/manager once for the suite.
func buildManager(dir string) (string, error) {
	out := filepath.Join(dir, "manager")
	cmd := exec.Command("go", "build", "-o", out, "../cmd/manager")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the manager: %v\n%s", err, b)
	}
	return out, nil
}

// startManager starts a manager replica with leader election; the kernel kills it if the suite dies.
func startManager(bin, name, kubeconfig, namespace, logDir string, extra ...string) (*managerProcess, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--kubeconfig=" + kubeconfig, "--namespace=" + namespace, "--leader-elect=true",
		"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms",
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--member-health-interval=1s",
		"--member-timeout=5s", "--deletion-timeout=20s",
	}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, err
	}
	p := &managerProcess{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = f.Close(); close(p.done) }()
	return p, nil
}

// isLeader tells from the replica's log whether it acquired the Lease: controller-runtime's identity is a
// hostname and a random UUID, which no flag sets, so the log is the only tie between a process and the Lease.
func (p *managerProcess) isLeader() bool {
	b, err := os.ReadFile(p.log)
	return err == nil && strings.Contains(strings.ToLower(string(b)), "successfully acquired lease")
}

func (p *managerProcess) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill ends the replica at once, as a crashed Pod.
func (p *managerProcess) kill() {
	if p.running() {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// tail returns the end of the replica's log.
func (p *managerProcess) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
