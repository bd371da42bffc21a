package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/kubeconfig"
	"github.com/mysqlfleet/mysqlfleet/internal/leftovers"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
)

// OrphansOptions tune `orphans`.
type OrphansOptions struct {
	// Member, if set, is the only member searched; Delete needs it.
	Member string
	// UID, if set, keeps only the orphans of that MySQLCluster UID.
	UID string
	// Delete deletes the orphans found in Member, except volumes; DeleteVolumes deletes the volumes
	// (PersistentVolumeClaims) too.
	Delete        bool
	DeleteVolumes bool
	// Output is OutputTable, OutputWide, OutputJSON or OutputYAML.
	Output string
	// Timeout bounds the requests to each member. Default 30s.
	Timeout time.Duration
}

// OrphansView is what `orphans` found: the orphans, and the members that could not be searched.
type OrphansView struct {
	Orphans []leftovers.Orphan `json:"orphans"`
	// Unsearched says, per member, why it could not be searched.
	Unsearched map[string]string `json:"unsearched,omitempty"`
}

// ListOrphans searches the registered members (or opts.Member) for objects that carry mysqlfleet's labels and a
// MySQLCluster UID that no MySQLCluster on the hub and no pending teardown record has. Each member is reached with
// its registration's kubeconfig, only once the manager's gate accepted it (as members does), and in the
// namespaces the registration allows. The members are read before the hub: an object the manager makes meanwhile
// is then made for a MySQLCluster the hub already shows, and is not taken for an orphan.
func ListOrphans(ctx context.Context, hub Hub, opts OrphansOptions) (*OrphansView, error) {
	if opts.Timeout == 0 {
		opts.Timeout = 30 * time.Second
	}
	hc, err := hub.connect()
	if err != nil {
		return nil, err
	}
	secrets, err := registrations(ctx, hc, hub.namespace())
	if err != nil {
		return nil, err
	}
	var regs []*corev1.Secret
	for i := range secrets.Items {
		if opts.Member == "" || secrets.Items[i].Name == opts.Member {
			regs = append(regs, &secrets.Items[i])
		}
	}
	if opts.Member != "" && len(regs) == 0 {
		return nil, fmt.Errorf("member %s is not registered in %s on the hub", opts.Member, hub.namespace())
	}
	found := make([][]leftovers.Object, len(regs))
	errs := make([]error, len(regs))
	var wg sync.WaitGroup
	for i, s := range regs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			found[i], errs[i] = scanMember(ctx, s, opts.Timeout)
		}()
	}
	wg.Wait()

	var clusters v1alpha1.MySQLClusterList
	if err := hc.cl.List(ctx, &clusters); err != nil {
		return nil, fmt.Errorf("failed to list MySQLClusters on the hub: %w", err)
	}
	records, bad, err := leftovers.ListRecords(ctx, hc.cl, hub.namespace(), "")
	if err != nil {
		return nil, fmt.Errorf("failed to list pending teardowns in %s on the hub: %w", hub.namespace(), err)
	}
	if len(bad) > 0 {
		// A record that cannot be read still names its UID in a label; its objects are not called orphans.
		return nil, fmt.Errorf("pending teardown records cannot be read, fix or delete them first: %w", errors.Join(bad...))
	}
	known := leftovers.Known(clusters.Items, records)
	view := &OrphansView{Orphans: []leftovers.Orphan{}}
	for i, s := range regs {
		if errs[i] != nil {
			if view.Unsearched == nil {
				view.Unsearched = map[string]string{}
			}
			view.Unsearched[s.Name] = errs[i].Error()
			continue
		}
		for _, o := range leftovers.Orphans(s.Name, found[i], known) {
			if opts.UID == "" || string(o.ClusterUID) == opts.UID {
				view.Orphans = append(view.Orphans, o)
			}
		}
	}
	sort.SliceStable(view.Orphans, func(i, j int) bool { return view.Orphans[i].Member < view.Orphans[j].Member })
	return view, nil
}

// scanMember lists what mysqlfleet labelled with a MySQLCluster UID in one member.
func scanMember(ctx context.Context, s *corev1.Secret, timeout time.Duration) ([]leftovers.Object, error) {
	mc, err := memberClient(s, timeout)
	if err != nil {
		return nil, err
	}
	facts, _ := placement.MemberFromSecret(s) // the namespaces are read even when other facts are wrong
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return leftovers.Scan(ctx, mc, facts.Namespaces)
}

// memberClient is a client of the member built from its registration, once the manager's gate accepted it.
func memberClient(s *corev1.Secret, timeout time.Duration) (client.Client, error) {
	cfg, err := kubeconfig.RESTConfig(s.Name, s.Data[v1alpha1.KubeconfigKey], kubeconfig.Options{Timeout: timeout})
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}

// Orphans lists the orphans; with Delete, it deletes those of opts.Member, volumes only with DeleteVolumes. Each
// delete names the object's UID as a precondition, so that only what was listed goes.
func Orphans(ctx context.Context, hub Hub, opts OrphansOptions, streams genericiooptions.IOStreams) error {
	if err := ValidateOutput(opts.Output); err != nil {
		return err
	}
	if (opts.Delete || opts.DeleteVolumes) && opts.Member == "" {
		return errors.New("--delete deletes in one member only: name it with --member")
	}
	if opts.DeleteVolumes && !opts.Delete {
		return errors.New("--delete-volumes goes with --delete")
	}
	view, err := ListOrphans(ctx, hub, opts)
	if err != nil {
		return err
	}
	if opts.Delete {
		if reason, ok := view.Unsearched[opts.Member]; ok {
			return fmt.Errorf("member %s could not be searched: %s", opts.Member, reason)
		}
		return deleteOrphans(ctx, hub, opts, view.Orphans, streams)
	}
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		column("Member", false), column("Kind", false), column("Namespace", false), column("Name", false),
		column("Cluster", false), column("Cluster UID", false), column("UID", true),
	}}
	for _, o := range view.Orphans {
		cluster := "-"
		if o.ClusterName != "" {
			cluster = o.ClusterNamespace + "/" + o.ClusterName
		}
		table.Rows = append(table.Rows, row(o.Member, o.Kind, o.Namespace, o.Name, cluster, string(o.ClusterUID), string(o.UID)))
	}
	if len(view.Unsearched) > 0 && opts.Output != OutputJSON && opts.Output != OutputYAML {
		names := make([]string, 0, len(view.Unsearched))
		for m := range view.Unsearched {
			names = append(names, m)
		}
		sort.Strings(names)
		for _, m := range names {
			say(errOut(streams), "warning: member %s could not be searched: %s\n", m, view.Unsearched[m])
		}
	}
	return printView(streams, opts.Output, view, table, "No orphans found.")
}

// deleteOrphans deletes the orphans in order (workloads first, volumes last), with background propagation: the
// member's garbage collector removes the StatefulSet's Pods and the CronJob's Jobs.
func deleteOrphans(ctx context.Context, hub Hub, opts OrphansOptions, orphans []leftovers.Orphan, streams genericiooptions.IOStreams) error {
	hc, err := hub.connect()
	if err != nil {
		return err
	}
	s, err := hc.cs.CoreV1().Secrets(hub.namespace()).Get(ctx, opts.Member, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("failed to read the registration of %s: %w", opts.Member, err)
	}
	mc, err := memberClient(s, opts.Timeout)
	if err != nil {
		return err
	}
	if len(orphans) == 0 {
		say(streams.Out, "No orphans found in %s.\n", opts.Member)
		return nil
	}
	var errs []error
	kept := 0
	for _, o := range orphans {
		what := fmt.Sprintf("%s %s/%s (cluster uid %s)", o.Kind, o.Namespace, o.Name, o.ClusterUID)
		if o.Kind == leftovers.VolumeKind && !opts.DeleteVolumes {
			kept++
			say(streams.Out, "kept %s\n", what)
			continue
		}
		uid := o.UID
		err := mc.Delete(ctx, o.Object, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &uid})
		switch {
		case apierrors.IsNotFound(err):
			say(streams.Out, "gone already: %s\n", what)
		case err != nil:
			errs = append(errs, fmt.Errorf("failed to delete %s in %s: %w", what, opts.Member, err))
		default:
			say(streams.Out, "deleted %s\n", what)
		}
	}
	if kept > 0 {
		say(streams.Out, "%d volume(s) kept: --delete-volumes deletes them, and their data, too\n", kept)
	}
	return errors.Join(errs...)
}

// pendingTeardowns counts the pending teardown records per member; nil when they could not be listed.
func pendingTeardowns(ctx context.Context, hc *hubClients, namespace string) map[string]int {
	records, _, err := leftovers.ListRecords(ctx, hc.cl, namespace, "")
	if err != nil {
		return nil
	}
	out := map[string]int{}
	for _, r := range records {
		out[r.Member]++
	}
	return out
}

// forgetPending deletes the pending teardown records of a member.
func forgetPending(ctx context.Context, hc *hubClients, namespace, member string) (int, error) {
	records, _, err := leftovers.ListRecords(ctx, hc.cl, namespace, member)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range records {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: r.Cluster().PendingTeardownName(r.Member)}}
		if err := hc.cl.Delete(ctx, cm); client.IgnoreNotFound(err) != nil {
			return n, fmt.Errorf("failed to delete pending teardown record %s: %w", cm.Name, err)
		}
		n++
	}
	return n, nil
}
