// Command fleet runs the local fleet from clusters/ on this machine: a hub and its members, each a real
// control plane with fake nodes (kwok) and a storage provisioner, so workloads run. It is what `make demo` and
// `make demo-down` call.
//
//	fleet up     start the fleet in the background (a supervisor process), wait until it is ready, print it
//	fleet down   stop the supervisor, which stops every process, and remove the fleet's directory
//	fleet status print the fleet
//
// The supervisor owns the fleet's processes (they die with it) and runs each member's storage provisioner.
// Kubeconfigs land in .fleet/<cluster>/kubeconfig.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/testfleet"
)

type clusterInfo struct {
	Name           string   `json:"name"`
	Role           string   `json:"role"`
	Cloud          string   `json:"cloud,omitempty"`
	Region         string   `json:"region,omitempty"`
	Server         string   `json:"server"`
	Kubeconfig     string   `json:"kubeconfig"`
	StorageClasses []string `json:"storageClasses,omitempty"`
}

func main() {
	dir := flag.String("dir", ".fleet", "directory of the fleet's state, kubeconfigs and logs")
	flag.Parse()
	abs, err := filepath.Abs(*dir)
	if err == nil {
		switch flag.Arg(0) {
		case "up":
			err = up(abs)
		case "serve":
			err = serve(abs)
		case "down":
			err = down(abs)
		case "status":
			err = status(abs)
		default:
			err = errors.New("usage: fleet [-dir DIR] up|down|status")
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

func pidFile(dir string) string   { return filepath.Join(dir, "supervisor.pid") }
func stateFile(dir string) string { return filepath.Join(dir, "fleet.json") }

// up starts `fleet serve` in its own session and waits for it to write the fleet's state.
func up(dir string) error {
	if pid, ok := running(dir); ok {
		fmt.Printf("The fleet is already running (supervisor pid %d).\n", pid)
		return status(dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	_ = os.Remove(stateFile(dir))
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logf, err := os.Create(filepath.Join(dir, "supervisor.log"))
	if err != nil {
		return err
	}
	defer func() { _ = logf.Close() }()
	cmd := exec.Command(self, "-dir", dir, "serve")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	fmt.Printf("Starting the fleet (supervisor pid %d, log %s)...\n", cmd.Process.Pid, logf.Name())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(5 * time.Minute)
	for {
		select {
		case err := <-exited:
			return fmt.Errorf("the supervisor exited (%v); see %s", err, logf.Name())
		case <-deadline:
			_ = cmd.Process.Signal(syscall.SIGTERM)
			return fmt.Errorf("the fleet did not start within 5 minutes; see %s", logf.Name())
		case <-time.After(500 * time.Millisecond):
		}
		if _, err := os.Stat(stateFile(dir)); err == nil {
			return status(dir)
		}
	}
}

// serve starts the fleet in the foreground and holds it until SIGTERM or SIGINT.
func serve(dir string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := os.WriteFile(pidFile(dir), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return err
	}
	defer func() { _ = os.Remove(pidFile(dir)) }()
	f, err := testfleet.Start(ctx, testfleet.Options{Dir: filepath.Join(dir, "clusters"), Workloads: true})
	if err != nil {
		return err
	}
	defer func() { _ = f.Stop() }()
	var infos []clusterInfo
	for _, c := range append([]*testfleet.Cluster{f.Hub}, f.Members...) {
		infos = append(infos, clusterInfo{
			Name: c.Name, Role: string(c.Role), Cloud: c.Cloud, Region: c.Region, Server: c.Config.Host,
			Kubeconfig: c.KubeconfigPath, StorageClasses: c.StorageClassNames(),
		})
	}
	data, err := json.MarshalIndent(infos, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(stateFile(dir), data, 0o600); err != nil {
		return err
	}
	fmt.Println("fleet ready")
	<-ctx.Done()
	fmt.Println("stopping the fleet")
	return nil
}

// down stops the supervisor, waits for it to stop the fleet, and removes the fleet's directory.
func down(dir string) error {
	if pid, ok := running(dir); ok {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		for i := 0; i < 600 && syscall.Kill(pid, 0) == nil; i++ {
			time.Sleep(100 * time.Millisecond)
		}
		if syscall.Kill(pid, 0) == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	// Processes die with the supervisor; sweep anything that names the directory, in case it was killed.
	_ = exec.Command("pkill", "-KILL", "-f", "--", dir+"/").Run()
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	fmt.Println("The fleet is down and", dir, "is removed.")
	return nil
}

func running(dir string) (int, bool) {
	data, err := os.ReadFile(pidFile(dir))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || syscall.Kill(pid, 0) != nil {
		return 0, false
	}
	return pid, true
}

func status(dir string) error {
	data, err := os.ReadFile(stateFile(dir))
	if err != nil {
		return fmt.Errorf("no fleet in %s: run `make demo`", dir)
	}
	var infos []clusterInfo
	if err := json.Unmarshal(data, &infos); err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "CLUSTER\tROLE\tCLOUD\tREGION\tSERVER\tSTORAGE CLASSES\tKUBECONFIG")
	for _, c := range infos {
		_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, c.Role, dash(c.Cloud), dash(c.Region), c.Server,
			dash(strings.Join(c.StorageClasses, ",")), c.Kubeconfig)
	}
	return w.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
