package testfleet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mysqlfleet/mysqlfleet/clusters"
)

// Cluster is one running cluster of the fleet.
type Cluster struct {
	clusters.Definition
	// Dir holds the cluster's certificates, etcd data, kubeconfig and process logs.
	Dir string
	// Config is an admin (system:masters) client configuration.
	Config *rest.Config
	// Kubeconfig is the admin kubeconfig with certificates embedded: no file paths, usable in a member Secret.
	Kubeconfig []byte
	// KubeconfigPath is where Kubeconfig is written.
	KubeconfigPath string

	env *envtest.Environment
	bin string
	// workloads is set when the cluster runs controllers, a scheduler and kwok.
	workloads bool
	// apiStopped is set between StopAPIServer and StartAPIServer.
	apiStopped atomic.Bool

	mu         sync.Mutex
	jobs       *jobsRunner
	procs      []*exec.Cmd
	cancelLoop context.CancelFunc
	loops      sync.WaitGroup
}

func (c *Cluster) start(ctx context.Context, crds []string, workloads bool) error {
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return err
	}
	apiLog, err := logFile(c.Dir, "kube-apiserver")
	if err != nil {
		return err
	}
	etcdLog, err := logFile(c.Dir, "etcd")
	if err != nil {
		return err
	}
	api := &envtest.APIServer{CertDir: filepath.Join(c.Dir, "pki"), Out: apiLog, Err: apiLog, StartTimeout: 2 * time.Minute}
	if err := os.MkdirAll(api.CertDir, 0o700); err != nil {
		return err
	}
	// kubeadm's Service range. envtest's default is a /24: 254 ClusterIPs, which a fleet benchmark (three runs of
	// 100 databases into one member) or a long test session exhausts, after which every Service create fails.
	api.Configure().Set("service-cluster-ip-range", "10.96.0.0/12")
	// Short watch-cache and event TTLs are irrelevant here; what matters is that requests made by the workload
	// controllers are served like a real cluster's, so the defaults stay.
	etcd := &envtest.Etcd{DataDir: filepath.Join(c.Dir, "etcd"), Out: etcdLog, Err: etcdLog, StartTimeout: time.Minute}
	c.env = &envtest.Environment{
		BinaryAssetsDirectory: c.bin,
		ControlPlane:          envtest.ControlPlane{APIServer: api, Etcd: etcd},
		CRDDirectoryPaths:     crds,
		ErrorIfCRDPathMissing: len(crds) > 0,
	}
	if _, err := c.env.Start(); err != nil {
		return fmt.Errorf("testfleet: starting %s: %w", c.Name, err)
	}
	user, err := c.env.AddUser(envtest.User{Name: "fleet-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("testfleet: admin user for %s: %w", c.Name, err)
	}
	c.Config = user.Config()
	c.Config.QPS, c.Config.Burst = 200, 400
	if c.Kubeconfig, err = user.KubeConfig(); err != nil {
		return err
	}
	c.KubeconfigPath = filepath.Join(c.Dir, "kubeconfig")
	if err := os.WriteFile(c.KubeconfigPath, c.Kubeconfig, 0o600); err != nil {
		return err
	}
	if workloads {
		return c.startWorkloads(ctx)
	}
	return nil
}

// Clientset returns a typed admin client.
func (c *Cluster) Clientset() *kubernetes.Clientset {
	return kubernetes.NewForConfigOrDie(c.Config)
}

// Renice sets the CPU priority (nice value, -20 to 19) of the cluster's kube-apiserver and etcd, as they run now
// (a kube-apiserver started again later runs at the default). It needs root, or CAP_SYS_NICE, for a value below
// the current one. A benchmark that runs a hub and 10 to 30 members on two cores gives the hub's control plane a
// higher priority, as a hub on machines of its own would not share its CPU with the members'.
func (c *Cluster) Renice(nice int) error {
	var pids []int
	for _, arg := range []string{"--cert-dir=" + c.env.ControlPlane.APIServer.CertDir, "--data-dir=" + c.env.ControlPlane.Etcd.DataDir} {
		found, err := processesWith(arg)
		if err != nil {
			return err
		}
		pids = append(pids, found...)
	}
	if len(pids) != 2 {
		return fmt.Errorf("testfleet: renice %s: found %d control-plane processes, want kube-apiserver and etcd", c.Name, len(pids))
	}
	// On Linux a nice value belongs to a thread, and a thread takes its creator's: every thread of each process
	// is set (a Go program starts most of its threads early; later ones are made by these).
	for _, pid := range pids {
		tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
		if err != nil {
			return err
		}
		for _, task := range tasks {
			tid, err := strconv.Atoi(task.Name())
			if err != nil {
				continue
			}
			if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, nice); err != nil {
				return fmt.Errorf("testfleet: renice %s (pid %d, thread %d) to %d: %w", c.Name, pid, tid, nice, err)
			}
		}
	}
	return nil
}

// StopAPIServer kills the cluster's kube-apiserver, and with workloads its controller manager and scheduler,
// leaving etcd, its data and the kwok kubelets: the cluster becomes unreachable, as a member does when its
// control plane crashes. It kills rather than terminates: a kube-apiserver with open watches can take longer to
// shut down gracefully than envtest waits, and envtest then cannot start it again.
func (c *Cluster) StopAPIServer() error {
	c.apiStopped.Store(true)
	if c.workloads {
		c.stopControllers()
	}
	api := c.env.ControlPlane.APIServer
	pids, err := processesWith("--cert-dir=" + api.CertDir)
	if err != nil {
		return err
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	gone := func(context.Context) (bool, error) {
		left, _ := processesWith("--cert-dir=" + api.CertDir)
		return len(left) == 0, nil
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, gone); err != nil {
		return fmt.Errorf("testfleet: kube-apiserver of %s did not die: %w", c.Name, err)
	}
	// The process is gone; Stop only reaps it, and may report that it could not signal a process that died.
	_ = api.Stop()
	return nil
}

// StartAPIServer starts a kube-apiserver again on the same address, with the same certificates, client CA and
// data. envtest keeps a killed server marked as running, so a fresh server takes the old one's configuration.
// It does nothing when the API server was not stopped, so that a test may both start it and defer a start for
// when it fails midway: a second start would find the old server answering on the address, and start a second
// controller manager and scheduler beside the first (two StatefulSet controllers and two schedulers racing
// each other, which once left a StatefulSet's status stale for minutes).
func (c *Cluster) StartAPIServer() error {
	if !c.apiStopped.Load() {
		return nil
	}
	old := c.env.ControlPlane.APIServer
	fresh := &envtest.APIServer{
		SecureServing: old.SecureServing, Path: old.Path, CertDir: old.CertDir,
		EtcdURL: old.EtcdURL, StartTimeout: old.StartTimeout, StopTimeout: old.StopTimeout, Out: old.Out, Err: old.Err,
	}
	*fresh.Configure() = *old.Configure()
	if err := fresh.Start(); err != nil {
		return fmt.Errorf("testfleet: restarting kube-apiserver of %s: %w", c.Name, err)
	}
	c.env.ControlPlane.APIServer = fresh
	c.apiStopped.Store(false)
	if c.workloads {
		return c.startControllers()
	}
	return nil
}

// processesWith lists the processes whose command line contains arg.
func processesWith(arg string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, a := range strings.Split(string(cmdline), "\x00") {
			if a == arg {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids, nil
}

// run starts a helper process whose output goes to a log in the cluster's directory. The kernel kills it if
// this process dies (Pdeathsig).
func (c *Cluster) run(name string, args ...string) error {
	out, err := logFile(c.Dir, name)
	if err != nil {
		return err
	}
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return fmt.Errorf("testfleet: starting %s in %s: %w", name, c.Name, err)
	}
	c.mu.Lock()
	c.procs = append(c.procs, cmd)
	c.mu.Unlock()
	go func() { _ = cmd.Wait(); _ = out.Close() }()
	return nil
}

// stop ends the helper processes, then the API server before etcd (an API server whose etcd is gone may hang
// on SIGTERM).
func (c *Cluster) stop() error {
	c.mu.Lock()
	procs := c.procs
	c.procs = nil
	cancel := c.cancelLoop
	c.mu.Unlock()
	if cancel != nil {
		cancel()
		c.loops.Wait()
	}
	var errs []error
	for _, p := range procs {
		if p.Process != nil {
			_ = p.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, p := range procs {
		if p.Process == nil {
			continue
		}
		exited := func(context.Context) (bool, error) { return p.Process.Signal(syscall.Signal(0)) != nil, nil }
		if wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 10*time.Second, true, exited) != nil {
			_ = p.Process.Kill()
		}
	}
	if c.env != nil {
		if err := c.env.Stop(); err != nil {
			errs = append(errs, fmt.Errorf("testfleet: stopping %s: %w", c.Name, err))
		}
	}
	return errors.Join(errs...)
}
