// Command fleet runs mysqlfleet on a local fleet from clusters/: a hub and its members, each a real control plane
// with fake nodes (kwok) and a storage provisioner, so workloads run. It is what `make demo` and `make demo-down`
// call.
//
//	fleet up     start the fleet and mysqlfleet in the background (a supervisor process): the chart installed on
//	             the hub with helm, two manager replicas with the chart's ServiceAccount and leader election;
//	             then, as a user would, join every member with `mysqlfleet join`, apply the sample MySQLCluster
//	             placed on aws, azure and gcp, wait until its Pods are ready and print the fleet view
//	fleet down   stop the supervisor, which stops every process, and remove the fleet's directory
//	fleet status print the fleet's clusters
//
// The supervisor owns the fleet's processes (they die with it) and runs each member's storage provisioner.
// Kubeconfigs land in .fleet/clusters/<cluster>/kubeconfig; manager logs in .fleet/manager-*.log.
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

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/mysqlfleet/mysqlfleet/internal/localfleet"
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
			if err := status(dir); err != nil {
				return err
			}
			return demo(dir)
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
	replicas, err := startMysqlfleet(ctx, dir, f.Hub)
	if err != nil {
		return err
	}
	defer func() {
		for _, p := range replicas {
			p.Stop(10 * time.Second)
		}
	}()
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
		exited := func(context.Context) (bool, error) { return syscall.Kill(pid, 0) != nil, nil }
		if wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, exited) != nil {
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

const (
	managerNamespace = "mysqlfleet-system"
	release          = "mysqlfleet"
)

// startMysqlfleet installs the chart on the hub and starts two manager replicas as the chart's ServiceAccount.
// The local hub runs no Pods, so the replicas of the chart's Deployment run here as processes.
func startMysqlfleet(ctx context.Context, dir string, hub *testfleet.Cluster) ([]*localfleet.Process, error) {
	fmt.Println("installing the chart on the hub")
	if err := localfleet.InstallChart(hub.KubeconfigPath, filepath.Join("charts", "mysqlfleet"), managerNamespace, release, nil); err != nil {
		return nil, err
	}
	kc, err := localfleet.ServiceAccountKubeconfig(ctx, hub.Config, managerNamespace, release, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	kcPath := filepath.Join(dir, "manager.kubeconfig")
	if err := os.WriteFile(kcPath, kc, 0o600); err != nil {
		return nil, err
	}
	bin, err := localfleet.Build(".", "./cmd/manager", dir)
	if err != nil {
		return nil, err
	}
	var replicas []*localfleet.Process
	for _, name := range []string{"manager-a", "manager-b"} {
		p, err := localfleet.StartManager(bin, name, dir, "--kubeconfig="+kcPath, "--namespace="+managerNamespace,
			"--leader-elect=true", "--metrics-bind-address=0", "--health-probe-bind-address=0")
		if err != nil {
			return replicas, err
		}
		replicas = append(replicas, p)
	}
	return replicas, nil
}

// demo does what a user does once mysqlfleet runs: join the members, create a MySQLCluster across the three
// clouds, wait for it, look at the fleet.
func demo(dir string) error {
	data, err := os.ReadFile(stateFile(dir))
	if err != nil {
		return err
	}
	var infos []clusterInfo
	if err := json.Unmarshal(data, &infos); err != nil {
		return err
	}
	var hub string
	for _, c := range infos {
		if c.Role == "hub" {
			hub = c.Kubeconfig
		}
	}
	for _, c := range infos {
		if c.Role != "member" {
			continue
		}
		// The local members run no token controller, so join falls back to a TokenRequest token at once. Their
		// Pods are kwok's and run no server, so no member controller is installed: the hub then says that
		// nothing reports on replication, instead of showing a state nobody saw.
		if err := show("bin/mysqlfleet", "--kubeconfig", hub, "join", c.Name, "--member-kubeconfig", c.Kubeconfig,
			"--cloud", c.Cloud, "--region", c.Region, "--token-wait=1s", "--skip-member-controller"); err != nil {
			return err
		}
	}
	kubectl := func(args ...string) error {
		return show("bin/kubectl", append([]string{"--kubeconfig", hub}, args...)...)
	}
	sample := filepath.Join("config", "samples", "mysqlfleet.io_v1alpha1_mysqlcluster.yaml")
	steps := [][]string{
		{"apply", "--server-side", "-f", filepath.Join("hack", "fleet", "shop-namespace.yaml")},
		{"apply", "--server-side", "-f", sample},
		// Ready would mean a replicating database; on kwok the most there is to wait for is every Pod ready.
		{"wait", "--for=jsonpath={.status.readyReplicas}=9/9", "mysqlclusters.mysqlfleet.io/orders", "-n", "shop",
			"--timeout=5m"},
		{"get", "mysqlclusters.mysqlfleet.io", "-A", "-o", "wide"},
	}
	for _, s := range steps {
		if err := kubectl(s...); err != nil {
			return err
		}
	}
	if err := show("bin/mysqlfleet", "--kubeconfig", hub, "members"); err != nil {
		return err
	}
	return show("bin/mysqlfleet", "--kubeconfig", hub, "get", "-A")
}

// show runs a command as the user would type it, echoing it first.
func show(name string, args ...string) error {
	fmt.Printf("\n$ %s %s\n", name, strings.Join(args, " "))
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	return cmd.Run()
}
