// Package localfleet installs and runs mysqlfleet on a local fleet the way a user does on real clusters: the
// chart installed on the hub with helm, the manager run as replicas with the chart's own ServiceAccount (so the
// chart's RBAC is what is exercised), and members registered with `mysqlfleet join`. The local fleet's hub runs
// no Pods, so the replicas run as local processes instead of the chart's Deployment. `make demo` and the e2e
// suite use it.
package localfleet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// InstallChart installs the chart at chartDir into the hub as release in namespace (created if missing), or
// upgrades it if the release exists, with helm's own Go packages.
func InstallChart(kubeconfigPath, chartDir, namespace, release string, values map[string]any) error {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return fmt.Errorf("loading chart %s: %w", chartDir, err)
	}
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = ptr.To(kubeconfigPath)
	flags.Namespace = ptr.To(namespace)
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, namespace, "secret", func(string, ...any) {}); err != nil {
		return err
	}
	if _, err := action.NewGet(cfg).Run(release); err == nil {
		up := action.NewUpgrade(cfg)
		up.Namespace, up.Timeout = namespace, 2*time.Minute
		_, err = up.Run(release, ch, values)
		return err
	}
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace, in.CreateNamespace, in.Timeout = release, namespace, true, 2*time.Minute
	_, err = in.Run(ch, values)
	return err
}

// ServiceAccountKubeconfig returns a kubeconfig that authenticates to the cluster of cfg as ServiceAccount
// namespace/name, with a token from the TokenRequest API, as the kubelet mounts one into a Pod.
func ServiceAccountKubeconfig(ctx context.Context, cfg *rest.Config, namespace, name string, ttl time.Duration) ([]byte, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(ttl.Seconds()))},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return nil, err
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["hub"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: ca}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts["hub"] = &clientcmdapi.Context{Cluster: "hub", AuthInfo: name, Namespace: namespace}
	kc.CurrentContext = "hub"
	return clientcmd.Write(*kc)
}

// Build compiles a command of this module (e.g. "./cmd/manager") from the module root into dir.
func Build(moduleRoot, pkg, dir string) (string, error) {
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", pkg, err, b)
	}
	return out, nil
}

// Process is one manager replica.
type Process struct {
	Name string
	// Log is the replica's log file.
	Log  string
	cmd  *exec.Cmd
	done chan struct{}
}

// StartManager starts a manager replica with args, logging to logDir/<name>.log. The kernel kills it if the
// starting process dies.
func StartManager(bin, name, logDir string, args ...string) (*Process, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, err
	}
	p := &Process{Name: name, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = f.Close(); close(p.done) }()
	return p, nil
}

// Pid is the replica's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Running tells whether the replica has not exited.
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// IsLeader tells from the replica's log whether it acquired the leader Lease: controller-runtime's identity is
// a hostname and a random UUID that no flag sets, so the log is the only tie between a process and the Lease.
func (p *Process) IsLeader() bool {
	b, err := os.ReadFile(p.Log)
	return err == nil && strings.Contains(strings.ToLower(string(b)), "successfully acquired lease")
}

// Kill ends the replica at once, as a crashed Pod.
func (p *Process) Kill() {
	if p.Running() {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Stop terminates the replica gracefully (it releases the Lease), killing it after a grace period.
func (p *Process) Stop(grace time.Duration) {
	if !p.Running() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}

// Tail returns the last n bytes of the replica's log.
func (p *Process) Tail(n int) string {
	b, _ := os.ReadFile(p.Log)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
