//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/clusters"
)

// Cluster is one cluster of the fleet under test, as the suite sees it.
type Cluster struct {
	clusters.Definition
	// Config is an admin client configuration, for the suite's own checks.
	Config *rest.Config
	// KubeconfigPath is an admin kubeconfig on disk, for helm and kubectl.
	KubeconfigPath string
	// MemberKubeconfig is what the hub's registration Secret holds for this member: self-contained, no file
	// paths, reachable from where the manager runs.
	MemberKubeconfig []byte
}

// Capability is something a provider's clusters can do beyond what every provider offers (API servers,
// controllers, scheduled Pods that become Ready). A spec that needs one carries it as a Ginkgo label; on a
// provider without it the spec is filtered out by default (counted as skipped in Ginkgo's summary, and the suite
// says why before it starts), and fails if it is selected explicitly.
type Capability string

const (
	// RealPods: Pods run their containers (kind), rather than being marked Running by a fake kubelet (kwok): the
	// database serves SQL, the manager runs as the chart's Deployment.
	RealPods Capability = "real-pods"
	// Replication: the member controller runs in each member (installed by `mysqlfleet join`) and the servers
	// replicate, fail over, and are reported on the hub. Needs real Pods.
	Replication Capability = "replication"
	// Backup: the backup runner dumps real servers into a real volume, and a restore loads it into new ones.
	Backup Capability = "backup"
)

// capabilities are every Capability the suite knows.
var capabilities = []Capability{RealPods, Replication, Backup}

// ManagerReplica is one replica of the hub manager: a process on the local fleet, a Pod of the chart's
// Deployment on kind.
type ManagerReplica interface {
	Name() string
	// Running tells whether the replica is alive (not killed, not being deleted).
	Running(ctx context.Context) bool
	// IsLeader tells whether the replica holds the leader Lease.
	IsLeader(ctx context.Context) bool
	// Kill ends the replica at once, as a crash: it does not release the Lease.
	Kill(ctx context.Context) error
	// Log returns the end of the replica's log.
	Log(ctx context.Context) string
}

// Provider gives the suite its clusters and runs the manager on them. The same specs run on the local fleet
// (real control planes on loopback with kwok nodes) and on kind clusters (real nodes, real Pods).
type Provider interface {
	Name() string
	// Up starts (or finds) the hub and the members of clusters/.
	Up(ctx context.Context) (hub *Cluster, members []*Cluster, err error)
	// InstallManager installs the chart on the hub with helm and runs two manager replicas with leader election
	// (lease 4s, renew 3s, retry 500ms), member health every second, member timeout 5s, deletion timeout 20s.
	InstallManager(ctx context.Context, chartDir, workDir string) error
	// Managers returns the manager replicas as they are now.
	Managers(ctx context.Context) ([]ManagerReplica, error)
	// Database is the engine and version of the suite's MySQLClusters: one the provider's nodes can run.
	Database() (v1alpha1.Engine, string)
	// Capabilities are what this provider offers of the suite's Capability list.
	Capabilities() []Capability
	// Join registers a member with the hub, cli being the mysqlfleet binary. The local fleet writes the
	// registration Secret that `mysqlfleet join --skip-member-controller` would (its kwok Pods run no server for
	// a member controller to manage); kind runs `mysqlfleet join`, which installs the member controller too.
	Join(ctx context.Context, m *Cluster, cli string) error
	// StopAPIServer makes a member unreachable; StartAPIServer brings it back with its data.
	StopAPIServer(member string) error
	StartAPIServer(member string) error
	// Down removes everything Up made.
	Down() error
}

// registration is the Secret on the hub that registers a member, as `mysqlfleet join` writes it.
func registration(name, cloud, region string, kubeconfig []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{
			v1alpha1.MemberSecretLabel: "true", v1alpha1.CloudLabel: cloud, v1alpha1.RegionLabel: region,
		}},
		Data: map[string][]byte{v1alpha1.KubeconfigKey: kubeconfig},
	}
}

// missingCapabilities are the suite's capabilities the provider lacks.
func missingCapabilities(p Provider) []Capability {
	var out []Capability
	for _, c := range capabilities {
		if !slices.Contains(p.Capabilities(), c) {
			out = append(out, c)
		}
	}
	return out
}

// defaultLabelFilter leaves out the specs that need a capability the provider lacks, and the failover bench,
// which runs only when its label is selected (make bench-failover-kind).
func defaultLabelFilter(p Provider) string {
	terms := []string{"!" + Bench}
	for _, c := range missingCapabilities(p) {
		terms = append(terms, "!"+string(c))
	}
	return strings.Join(terms, " && ")
}

// checkCapabilities fails a spec whose labels name a capability the provider lacks.
func checkCapabilities(p Provider, labels []string) error {
	for _, c := range missingCapabilities(p) {
		if slices.Contains(labels, string(c)) {
			return fmt.Errorf("this spec needs %q, which the %s provider does not offer: run it on kind (make test-e2e-kind), or leave it out with -ginkgo.label-filter='!%s'", c, p.Name(), c)
		}
	}
	return nil
}
