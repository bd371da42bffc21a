//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/test/localfleet"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

// localProvider runs the fleet of clusters/ as local control planes with workloads (kube-controller-manager,
// kube-scheduler, kwok nodes and a provisioner), from the binaries in ./bin. Its hub runs no Pods, so the
// manager replicas run as local processes with the chart's ServiceAccount.
type localProvider struct {
	fleet    *testfleet.Fleet
	hub      *Cluster
	managers []*localfleet.Process
}

func (p *localProvider) Name() string { return "local" }

func (p *localProvider) Up(ctx context.Context) (*Cluster, []*Cluster, error) {
	f, err := testfleet.Start(ctx, testfleet.Options{Workloads: true})
	if err != nil {
		return nil, nil, err
	}
	p.fleet = f
	wrap := func(c *testfleet.Cluster) *Cluster {
		return &Cluster{Definition: c.Definition, Config: c.Config, KubeconfigPath: c.KubeconfigPath, MemberKubeconfig: c.Kubeconfig}
	}
	var members []*Cluster
	for _, m := range f.Members {
		members = append(members, wrap(m))
	}
	p.hub = wrap(f.Hub)
	return p.hub, members, nil
}

// Database: kwok's Pods run no containers, so the engine is only what the manager renders; MySQL 8.4 is the
// API's reference.
func (p *localProvider) Database() (v1alpha1.Engine, string) { return v1alpha1.EngineMySQL, "8.4" }

func (p *localProvider) Capabilities() []Capability { return nil }

// Join writes the registration Secret with the member's admin kubeconfig: the local fleet's kube-controller-manager
// fills no token Secrets (join would wait for one), and there is no member controller to install.
func (p *localProvider) Join(ctx context.Context, m *Cluster, _ string) error {
	cl, err := client.New(p.hub.Config, client.Options{})
	if err != nil {
		return err
	}
	return cl.Create(ctx, registration(m.Name, m.Cloud, m.Region, m.MemberKubeconfig))
}

func (p *localProvider) InstallManager(ctx context.Context, chartDir, workDir string) error {
	if err := localfleet.InstallChart(p.hub.KubeconfigPath, chartDir, namespace, release, nil); err != nil {
		return err
	}
	// The replicas of the chart's Deployment run as processes, authenticated as the chart's ServiceAccount: the
	// chart's RBAC is what they are allowed.
	kc, err := localfleet.ServiceAccountKubeconfig(ctx, p.hub.Config, namespace, release, 2*time.Hour)
	if err != nil {
		return err
	}
	kcPath := filepath.Join(workDir, "manager.kubeconfig")
	if err := os.WriteFile(kcPath, kc, 0o600); err != nil {
		return err
	}
	bin, err := localfleet.Build("..", "./cmd/manager", workDir)
	if err != nil {
		return err
	}
	for _, name := range []string{"manager-a", "manager-b"} {
		proc, err := localfleet.StartManager(bin, name, workDir,
			"--kubeconfig="+kcPath, "--namespace="+namespace, "--leader-elect=true",
			"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms",
			"--metrics-bind-address=0", "--health-probe-bind-address=0", "--member-health-interval=1s",
			"--member-timeout=5s", "--deletion-timeout=20s")
		if err != nil {
			return err
		}
		p.managers = append(p.managers, proc)
	}
	return nil
}

func (p *localProvider) Managers(context.Context) ([]ManagerReplica, error) {
	out := make([]ManagerReplica, 0, len(p.managers))
	for _, m := range p.managers {
		out = append(out, processReplica{m})
	}
	return out, nil
}

func (p *localProvider) member(name string) (*testfleet.Cluster, error) {
	if m := p.fleet.Member(name); m != nil {
		return m, nil
	}
	return nil, fmt.Errorf("no member %q", name)
}

func (p *localProvider) StopAPIServer(name string) error {
	m, err := p.member(name)
	if err != nil {
		return err
	}
	return m.StopAPIServer()
}

func (p *localProvider) StartAPIServer(name string) error {
	m, err := p.member(name)
	if err != nil {
		return err
	}
	return m.StartAPIServer()
}

func (p *localProvider) Down() error {
	for _, m := range p.managers {
		m.Kill()
	}
	if p.fleet == nil {
		return nil
	}
	return p.fleet.Stop()
}

// processReplica is a manager replica run as a local process.
type processReplica struct{ p *localfleet.Process }

func (r processReplica) Name() string                  { return r.p.Name }
func (r processReplica) Running(context.Context) bool  { return r.p.Running() }
func (r processReplica) IsLeader(context.Context) bool { return r.p.Running() && r.p.IsLeader() }
func (r processReplica) Kill(context.Context) error    { r.p.Kill(); return nil }
func (r processReplica) Log(context.Context) string    { return r.p.Tail(30000) }
