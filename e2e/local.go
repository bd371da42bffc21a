//go:build e2e

package e2e

import (
	"context"
	"fmt"

	"github.com/mysqlfleet/mysqlfleet/internal/testfleet"
)

// localProvider runs the fleet of clusters/ as local control planes with workloads (kube-controller-manager,
// kube-scheduler, kwok nodes and a provisioner), from the binaries in ./bin.
type localProvider struct {
	fleet *testfleet.Fleet
}

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
	return wrap(f.Hub), members, nil
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
	if p.fleet == nil {
		return nil
	}
	return p.fleet.Stop()
}
