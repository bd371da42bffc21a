package member

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/clustering"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// Rebuilds (clustering's ActionRebuild). The engine decides to rebuild an errant server when that provably
// discards no acknowledged commit, a replica that cannot catch up from the primary's binary logs and holds
// nothing the primary lacks, or a server a human asked for (v1alpha1.RebuildAnnotation, which the hub copies from
// the MySQLCluster to the StatefulSet). The controller empties the server in place, as root over the reserved
// administrative port, behind the lease guard (mysql.Server.Empty): its databases dropped, its binary logs and
// GTID state reset, the rendered init script run again, the volume and server_id kept. The next passes seed it
// from a replica in sync (a seed Job, seed.go), as they seed any empty server. Each rebuild is reported in the
// report's Rebuilds, with what it discarded, and as a Normal Event ServerRebuilt on the StatefulSet.

// rebuildTimeout bounds emptying one server: dropping its databases takes as long as the files take to go.
const rebuildTimeout = 5 * time.Minute

// ReasonServerRebuilt is the reason of the Event of a rebuilt server.
const ReasonServerRebuilt = "ServerRebuilt"

// rebuild empties instance i, which had executed executed when the plan was decided, and says what it did.
func (r *Reconciler) rebuild(ctx context.Context, s *scope, f mysql.Flavor, t target, c credentials,
	plan clustering.Plan, i int, executed mysql.GTIDSet) (v1alpha1.ServerRebuild, error) {
	if t.err != nil {
		return v1alpha1.ServerRebuild{}, t.err
	}
	if c.root == "" {
		return v1alpha1.ServerRebuild{}, fmt.Errorf("the credentials Secret has no root password to empty %s with",
			podName(s.sts, i))
	}
	ctx, cancel := context.WithTimeout(ctx, rebuildTimeout)
	defer cancel()
	root, err := mysql.Open(f, dsn("root", c.root, t.addr, r.StatusTimeout))
	if err != nil {
		return v1alpha1.ServerRebuild{}, err
	}
	defer func() { _ = root.Close() }()
	if err := root.Guarded(r.lease.guard()).Empty(ctx, executed, c.init); err != nil {
		return v1alpha1.ServerRebuild{}, fmt.Errorf("failed to empty %s: %w", podName(s.sts, i), err)
	}
	rb := v1alpha1.ServerRebuild{Pod: podName(s.sts, i), Time: metav1.Now()}
	for _, step := range plan.Steps {
		if step.Action == clustering.ActionRebuild && step.Instance == i {
			rb.Request, rb.Reason = step.Request, step.Why
			if step.Discarded != nil {
				rb.Discarded = step.Discarded.String()
			}
		}
	}
	ctrl.LoggerFrom(ctx).Info("Rebuilt a server: emptied, to be seeded again", "pod", klog.KRef(s.sts.Namespace, rb.Pod),
		"discarded", rb.Discarded, "request", rb.Request, "reason", rb.Reason)
	if r.events != nil {
		discarded := rb.Discarded
		if discarded == "" {
			discarded = "nothing"
		}
		r.events.Eventf(s.sts, nil, corev1.EventTypeNormal, ReasonServerRebuilt, "Rebuild",
			"Emptied %s to seed it again, discarding %s: %s", rb.Pod, discarded, rb.Reason)
	}
	return rb, nil
}

// recentRebuilds is the report's Rebuilds: this pass's, then the earlier ones, newest first, at most
// v1alpha1.MaxRebuildsReported.
func recentRebuilds(now []v1alpha1.ServerRebuild, prev *v1alpha1.ReplicationReport) []v1alpha1.ServerRebuild {
	out := append([]v1alpha1.ServerRebuild{}, now...)
	if prev != nil {
		out = append(out, prev.Rebuilds...)
	}
	if len(out) > v1alpha1.MaxRebuildsReported {
		out = out[:v1alpha1.MaxRebuildsReported]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// rebuildRequests are the rebuilds the StatefulSet's RebuildAnnotation asks for, of its Pods 0..n-1.
func rebuildRequests(sts *appsv1.StatefulSet, n int) []clustering.RebuildRequest {
	var out []clustering.RebuildRequest
	for _, req := range v1alpha1.RebuildRequests(sts.Annotations[v1alpha1.RebuildAnnotation]) {
		for i := range n {
			if req.Pod == podName(sts, i) {
				out = append(out, clustering.RebuildRequest{Instance: i, ID: req.ID})
			}
		}
	}
	return out
}
