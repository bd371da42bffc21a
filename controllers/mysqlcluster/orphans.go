package mysqlcluster

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/leftovers"
)

// Orphans are objects in a member that carry mysqlfleet's labels and a MySQLCluster UID that no MySQLCluster and
// no pending teardown has (internal/leftovers): a deletion released before this release kept records, labels
// copied by hand, a hub restored from a backup that lost MySQLClusters. mysqlfleet never deletes them on its own;
// it counts them, per member and kind, for the alert MySQLFleetOrphanedObjects, and `mysqlfleet orphans` lists
// them and deletes them when asked.

// DefaultOrphanScanInterval is how often the members' caches are searched for orphans.
const DefaultOrphanScanInterval = time.Minute

var orphanedObjects = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "mysqlfleet_member_orphaned_objects",
	Help: "Objects in the member that carry mysqlfleet's labels and a MySQLCluster UID that no MySQLCluster and no pending teardown has, by kind (PersistentVolumeClaim: volumes, which deletionPolicy Retain keeps on purpose).",
}, []string{"member", "kind"})

// orphanMembers are the members whose series are exported, guarded by orphanMu.
var (
	orphanMu      sync.Mutex
	orphanMembers = map[string]bool{}
)

// orphanScanner counts the orphans in the members this replica works in, every interval and soon after a member
// changed (one that engages has its count at once, not an interval later). It reads caches only, the members' and
// the hub's, so it costs the API servers nothing.
type orphanScanner struct {
	r        *MySQLClusterReconciler
	interval time.Duration
	wake     <-chan struct{}
}

// NeedLeaderElection: the leader counts, in every member.
func (o orphanScanner) NeedLeaderElection() bool { return true }

func (o orphanScanner) Start(ctx context.Context) error {
	t := time.NewTicker(o.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			o.scan(ctx)
		case <-o.wake:
			o.scan(ctx)
			// Members engage in bursts (start-up, a hand-over): one count a second is enough.
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(time.Second):
			}
		}
	}
}

// wakeOrphanScan has the orphans counted again soon. It never blocks.
func (r *MySQLClusterReconciler) wakeOrphanScan() {
	if r.orphanWake == nil {
		return
	}
	select {
	case r.orphanWake <- struct{}{}:
	default:
	}
}

// scan counts. The members are read before the hub, so that an object seen there was made for a MySQLCluster the
// hub's cache already had (it is written only after its MySQLCluster is read from that cache). The other way
// round, an object made between the two reads would be counted once as an orphan.
func (o orphanScanner) scan(ctx context.Context) {
	r := o.r
	log := ctrl.LoggerFrom(ctx).WithName("orphans")
	found := map[string][]leftovers.Object{}
	for _, m := range r.Fleet.Members() {
		if !m.Engaged || m.Err != nil {
			continue
		}
		cl, err := r.Fleet.Get(ctx, multicluster.ClusterName(m.Name))
		if err != nil {
			continue
		}
		objs, err := leftovers.Scan(ctx, cl.GetCache(), nil) // the cache holds the namespaces the member allows
		if err != nil {
			log.V(4).Info("Searching a member's cache for orphans", "member", m.Name, "err", err.Error())
			continue
		}
		found[m.Name] = objs
	}
	var clusters v1alpha1.MySQLClusterList
	if err := r.Hub.List(ctx, &clusters); err != nil {
		log.Error(err, "Listing MySQLClusters to count orphans")
		return
	}
	records, _, err := leftovers.ListRecords(ctx, r.Hub, r.Namespace, "")
	if err != nil {
		log.Error(err, "Listing pending teardowns to count orphans")
		return
	}
	reportOrphans(found, leftovers.Known(clusters.Items, records))
}

// orphanKinds are the kinds a member's series are exported for, zero included, so that a query for one never finds
// a gap.
var orphanKinds = []string{"StatefulSet", "CronJob", "Job", "PodDisruptionBudget", "Service", "ConfigMap", "Secret",
	leftovers.VolumeKind}

// reportOrphans sets each scanned member's series and removes those of members no longer scanned here.
func reportOrphans(found map[string][]leftovers.Object, known map[types.UID]bool) {
	orphanMu.Lock()
	defer orphanMu.Unlock()
	for m := range orphanMembers {
		if _, ok := found[m]; !ok {
			orphanedObjects.DeletePartialMatch(prometheus.Labels{"member": m})
			delete(orphanMembers, m)
		}
	}
	for m, objs := range found {
		counts := map[string]float64{}
		for _, orphan := range leftovers.Orphans(m, objs, known) {
			counts[orphan.Kind]++
		}
		for _, k := range orphanKinds {
			orphanedObjects.WithLabelValues(m, k).Set(counts[k])
		}
		orphanMembers[m] = true
	}
}
