//go:build e2e

package e2e

import (
	"context"

	"k8s.io/client-go/rest"

	"github.com/mysqlfleet/mysqlfleet/clusters"
)

// Cluster is one cluster of the fleet under test, as the suite sees it.
type Cluster struct {
	clusters.Definition
	// Config is an admin client configuration, for the suite's own checks.
	Config *rest.Config
	// KubeconfigPath is an admin kubeconfig on disk, for helm and the manager.
	KubeconfigPath string
	// MemberKubeconfig is what the hub's registration Secret holds for this member: self-contained, no file
	// paths, reachable from where the manager runs.
	MemberKubeconfig []byte
}

// Provider gives the suite its clusters. The same specs run on the local fleet (real control planes on
// loopback with kwok nodes) and, where Docker and the node image exist, on kind clusters.
type Provider interface {
	// Up starts (or finds) the hub and the members of clusters/.
	Up(ctx context.Context) (hub *Cluster, members []*Cluster, err error)
	// StopAPIServer makes a member unreachable; StartAPIServer brings it back with its data.
	StopAPIServer(member string) error
	StartAPIServer(member string) error
	// Down removes everything Up made.
	Down() error
}
