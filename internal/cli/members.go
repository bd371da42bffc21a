package cli

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/kubeconfig"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
)

// MembersOptions tune `members`.
type MembersOptions struct {
	// Output is OutputTable, OutputWide, OutputJSON or OutputYAML.
	Output string
	// Timeout bounds the probe of each member. Default 10s.
	Timeout time.Duration
}

// Reachability of a member, as probed from this machine.
const (
	Reachable   = "Reachable"
	Unreachable = "Unreachable"
	// Refused is a registration whose kubeconfig the manager's gate refuses: it is never used, not even to probe.
	Refused = "Refused"
)

// MemberView is one registered member.
type MemberView struct {
	Name   string `json:"name"`
	Cloud  string `json:"cloud"`
	Region string `json:"region"`
	// Invalid says why the manager cannot use the registration's labels (e.g. an unknown cloud), if so.
	Invalid         string `json:"invalid,omitempty"`
	StorageClass    string `json:"storageClass,omitempty"`
	Namespaces      string `json:"namespaces,omitempty"`
	TokenExpiration string `json:"tokenExpiration,omitempty"`
	// Reachability is Reachable, Unreachable or Refused; Reason says why not.
	Reachability string `json:"reachability"`
	Reason       string `json:"reason,omitempty"`
	// Version is the member API server's gitVersion.
	Version string `json:"version,omitempty"`
	// Placed counts the MySQLClusters whose status lists this member; nil when they could not be listed.
	Placed *int `json:"placed"`
	// PendingTeardowns counts the deletions the hub still owes the member (pending teardown records): MySQLClusters
	// deleted while it was away or unreachable. nil when they could not be listed.
	PendingTeardowns *int `json:"pendingTeardowns"`
	// Owner is the manager replica that works in the member: the leader, which works in every member. Empty
	// when none leads (or its Lease could not be read).
	Owner string `json:"owner,omitempty"`
}

// ManagerLease is the manager's leader election Lease, as the chart runs it (--leader-election-id).
const ManagerLease = "mysqlfleet-manager"

// registrations lists the members' registration Secrets on the hub.
func registrations(ctx context.Context, hc *hubClients, ns string) (*corev1.SecretList, error) {
	secrets, err := hc.cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{
		LabelSelector: v1alpha1.MemberSecretLabel + "=true",
	})
	if err != nil {
		return nil, fmt.Errorf("failed to list registration Secrets in %s on the hub: %w", ns, err)
	}
	return secrets, nil
}

// ListMembers reads every registration Secret and probes each member concurrently: GET /readyz and /version,
// with a client built only from a kubeconfig that the manager's gate accepts.
func ListMembers(ctx context.Context, hub Hub, opts MembersOptions) ([]MemberView, error) {
	if opts.Timeout == 0 {
		opts.Timeout = 10 * time.Second
	}
	hc, err := hub.connect()
	if err != nil {
		return nil, err
	}
	secrets, err := registrations(ctx, hc, hub.namespace())
	if err != nil {
		return nil, err
	}
	placed, placedErr := placements(ctx, hc)
	pending := pendingTeardowns(ctx, hc, hub.namespace())
	leader := managerLeader(ctx, hc, hub.namespace())

	views := make([]MemberView, len(secrets.Items))
	var wg sync.WaitGroup
	for i := range secrets.Items {
		s := &secrets.Items[i]
		v := &views[i]
		*v = MemberView{
			Name: s.Name, Cloud: s.Labels[v1alpha1.CloudLabel], Region: s.Labels[v1alpha1.RegionLabel],
			StorageClass:    s.Annotations[v1alpha1.StorageClassAnnotation],
			Namespaces:      s.Annotations[v1alpha1.NamespacesAnnotation],
			TokenExpiration: s.Annotations[v1alpha1.TokenExpirationAnnotation],
		}
		if _, err := placement.MemberFromSecret(s); err != nil {
			v.Invalid = err.Error()
		}
		if placedErr == nil {
			n := placed[s.Name]
			v.Placed = &n
		}
		if pending != nil {
			n := pending[s.Name]
			v.PendingTeardowns = &n
		}
		v.Owner = leader
		wg.Add(1)
		go func() {
			defer wg.Done()
			probe(ctx, s, v, opts.Timeout)
		}()
	}
	wg.Wait()
	sort.Slice(views, func(i, j int) bool { return views[i].Name < views[j].Name })
	return views, nil
}

// probe fills in reachability and version. The kubeconfig passes the gate first: a registration that the
// manager refuses could make this machine run a command or read a file just as it would the manager.
func probe(ctx context.Context, s *corev1.Secret, v *MemberView, timeout time.Duration) {
	cfg, err := kubeconfig.RESTConfig(s.Name, s.Data[v1alpha1.KubeconfigKey], kubeconfig.Options{Timeout: timeout})
	if err != nil {
		v.Reachability, v.Reason = Refused, strings.TrimPrefix(err.Error(), kubeconfig.ErrRefused.Error()+": ")
		return
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		v.Reachability, v.Reason = Unreachable, err.Error()
		return
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	if err != nil {
		v.Reachability, v.Reason = Unreachable, "readyz: "+firstLine(err.Error())
		return
	}
	if strings.TrimSpace(string(body)) != "ok" {
		v.Reachability, v.Reason = Unreachable, "readyz: "+firstLine(string(body))
		return
	}
	v.Reachability = Reachable
	if info, err := cs.Discovery().ServerVersion(); err == nil {
		v.Version = info.GitVersion
	}
}

// placements counts, per member, the MySQLClusters whose status lists it.
func placements(ctx context.Context, hc *hubClients) (map[string]int, error) {
	var list v1alpha1.MySQLClusterList
	if err := hc.cl.List(ctx, &list); err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, c := range list.Items {
		for _, m := range c.Status.Members {
			out[m.Name]++
		}
	}
	return out, nil
}

// managerLeader reads the holder of the manager's Lease: the replica that works in every member. Empty when the
// Lease cannot be read.
func managerLeader(ctx context.Context, hc *hubClients, namespace string) string {
	l, err := hc.cs.CoordinationV1().Leases(namespace).Get(ctx, ManagerLease, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

// Members prints the registered members.
func Members(ctx context.Context, hub Hub, opts MembersOptions, streams genericiooptions.IOStreams) error {
	if err := ValidateOutput(opts.Output); err != nil {
		return err
	}
	views, err := ListMembers(ctx, hub, opts)
	if err != nil {
		return err
	}
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		column("Name", false), column("Cloud", false), column("Region", false), column("Reachable", false),
		column("Version", false), column("Placed", false), column("Owner", false),
		column("Storage Class", true), column("Namespaces", true), column("Token Expires", true),
		column("Pending Teardowns", true),
	}}
	unknownPlaced := false
	for _, v := range views {
		placed := "?"
		if v.Placed != nil {
			placed = strconv.Itoa(*v.Placed)
		} else {
			unknownPlaced = true
		}
		cloud := orDash(v.Cloud)
		if v.Invalid != "" {
			cloud += " (invalid)"
		}
		table.Rows = append(table.Rows, row(v.Name, cloud, orDash(v.Region), reachableCell(v), orDash(v.Version), placed, orDash(v.Owner),
			orDash(v.StorageClass), orDash(v.Namespaces), orDash(v.TokenExpiration), countOrUnknown(v.PendingTeardowns)))
	}
	if unknownPlaced && opts.Output != OutputJSON && opts.Output != OutputYAML {
		say(errOut(streams), "warning: MySQLClusters could not be listed on the hub; PLACED is unknown\n")
	}
	return printView(streams, opts.Output, views, table, "No members registered in namespace "+hub.namespace()+".")
}

func countOrUnknown(n *int) string {
	if n == nil {
		return "?"
	}
	return strconv.Itoa(*n)
}

func reachableCell(v MemberView) string {
	switch v.Reachability {
	case Reachable:
		return "yes"
	case Refused:
		return "refused: " + v.Reason
	}
	return "no: " + v.Reason
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i]
	}
	return s
}
