package mysqlcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/fleet"
)

// Sharded, the manager's replicas divide the members among them (internal/fleet/shard) and share each
// MySQLCluster's status:
//
//   - every replica reconciles every MySQLCluster, but only in the members whose claims it holds, and writes
//     those members' rows of status.members together with the summary of all the rows the status then holds
//     (rows.go: one write per pass, against the version it was computed from, so that no status ever carries
//     a summary of other rows than its own);
//   - the elected leader (the Lease of --leader-election-id) summarises what changes no row (spec, placement,
//     registry, deletion) and removes the rows of members no longer placed, the same way (summary.go); it also
//     puts the finalizers on and ends deletions.
//
// A member's objects are written only once the MySQLCluster carries the member's finalizer
// (memberFinalizerPrefix + member), which the leader puts on when it first places the MySQLCluster there and
// which stays while anything of it may remain there (its volumes stay in a member it left). On deletion each
// owner tears down in its members and takes their finalizers off; the leader then removes its own. So deletion
// waits for exactly the members that may hold something, whichever replica works in them.
//
// Not yet one seam (issue 43 item 4). Sharding is off by default, but the reconciler still forks on r.Sharded:
// pass (reconcileShare instead of the phases and reconcileStatus), SetupWithManager (the summary controller,
// finalizersChanged, every replica instead of the leader), MemberChanged (summaryMembers), and the leader-only
// switch of the pending teardowns and the orphan scan. What unifying would take, so that the member set a
// replica works in is an input and nothing forks:
//
//   - Two inputs instead of the flag, both from the fleet's provider or coordinator: the members this replica
//     works in (fleet.State.Owned already says it; unsharded it must be every member on the elected replica and
//     none on a standby, which today leader election gives by not running the controller there), and whether
//     this replica summarises (the elected leader; unsharded, the same replica).
//   - One pass for both: the phases over the owned members, then one status write. That write is writeShare's
//     (rows.go: the owned rows and the summary computed from every row the status then holds, a merge patch
//     against the version read); reconcileStatus's whole-status update would go. What only the leader does
//     today (summary.go: finalizers, the restore source, rows of members no longer placed, the summary of
//     spec, placement and registry changes, ending deletions) becomes phases that run when this replica
//     summarises, in the same pass and the same write, so that an unsharded replica still writes once per pass.
//   - One deletion: deleteShare over the owned members, then, on the summarising replica, reconcileDelete's
//     end of the deletion once no member's finalizer is left; the shardedFinalizer mark and
//     unshardedFinalizers would go once no MySQLCluster carries finalizers of the other kind.
//   - Every controller on every replica (unelectedManager), each working only in the owned members, so the
//     NeedLeaderElection switches go.
//   - Proof before it is the default path: TestIdleFleetMakesNoWrites, one reconcile per MySQLCluster and the
//     convergence targets of make bench against the current unsharded runs in docs/benchmarks.md, since the
//     merge patch, with its conflicts and re-reads between writers, replaces an update that has no other writer.

const (
	// memberFinalizerPrefix starts a member's finalizer on a MySQLCluster; the member's name follows.
	memberFinalizerPrefix = "member.mysqlfleet.io/"
	// shardedFinalizer marks a MySQLCluster whose members' finalizers sharded replicas keep: one that carries the
	// MySQLCluster's own finalizer without it was reconciled unsharded, and may have objects in any member.
	shardedFinalizer = "mysqlfleet.io/sharded"
)

func memberFinalizer(member string) string { return memberFinalizerPrefix + member }

// isMemberFinalizer tells the finalizers that sharded replicas keep: the members' and the mark.
func isMemberFinalizer(f string) bool {
	return strings.HasPrefix(f, memberFinalizerPrefix) || f == shardedFinalizer
}

// unshardedFinalizers tells a MySQLCluster that carries its own finalizer without the mark of sharded replicas:
// one that unsharded replicas reconciled, whose objects may be in any member.
func unshardedFinalizers(c *v1alpha1.MySQLCluster) bool {
	return slices.Contains(c.Finalizers, v1alpha1.Finalizer) && !slices.Contains(c.Finalizers, shardedFinalizer)
}

// finalizersChanged passes updates whose finalizers changed: a member's finalizer is what an owner waits for.
func finalizersChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !slices.Equal(e.ObjectOld.GetFinalizers(), e.ObjectNew.GetFinalizers())
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// unelectedManager adds runnables that run on every replica, elected or not. multicluster-runtime's controllers
// (v0.24.1) do not pass controller-runtime's NeedLeaderElection option on: the runnable the manager sees does
// not implement NeedLeaderElection, so the manager would run it on the leader only.
type unelectedManager struct{ mcmanager.Manager }

func (m unelectedManager) Add(r mcmanager.Runnable) error { return m.Manager.Add(unelected{r}) }

// unelected is a runnable that runs whether or not its replica leads.
type unelected struct{ mcmanager.Runnable }

func (unelected) NeedLeaderElection() bool { return false }

// reconcileShare is one replica's pass over a MySQLCluster, sharded: the members it holds (those of only, if not
// nil), their rows.
func (r *MySQLClusterReconciler) reconcileShare(ctx context.Context, c *v1alpha1.MySQLCluster, only map[string]bool) (ctrl.Result, error) {
	if !c.DeletionTimestamp.IsZero() {
		return r.deleteShare(ctx, c)
	}
	s := &scope{cluster: c, before: c.Status.DeepCopy(), only: only}
	r.resolvePlacement(s)
	placed := s.placed
	s.placed = nil
	waiting := false
	for _, m := range placed {
		switch {
		case !m.Owned:
		case !slices.Contains(c.Finalizers, memberFinalizer(m.Name)):
			waiting = true // the leader puts it on; the change brings this back
		default:
			// Until its row is written: a replica handing the member over waits for this pass first.
			if done, ok := r.Fleet.Use(m.Name); ok {
				defer done()
				s.placed = append(s.placed, m)
			}
		}
	}
	if len(s.placed) > 0 && c.Spec.Restore != nil && c.Status.RestoredFrom == nil {
		// Where to restore from is decided once, by the leader, and kept in status: every member's restore Job
		// must use the same backups.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if len(s.placed) > 0 {
		r.resolveRestore(ctx, s)
		if err := r.reconcileCredentials(ctx, s); err != nil {
			return ctrl.Result{}, err
		}
		r.reconcileMembers(ctx, s)
	}
	r.reconcileDeparted(ctx, s)
	// A member handed over during the pass is the next owner's to report: what this pass saw there is about
	// work it stopped (its requests were ended when the member was let go).
	s.members = slices.DeleteFunc(s.members, func(m v1alpha1.MemberStatus) bool { return r.Fleet.Leaving(m.Name) })
	written, err := r.writeShare(ctx, c, s.before, s.members)
	if err != nil {
		return ctrl.Result{}, err
	}
	if written != nil {
		// The summary this write changed is announced by its writer, once: the leader, passing next, finds it
		// written already.
		r.emitTransitions(written)
	}
	r.emitRowEvents(s)
	reportRows(c, s.members)
	if s.retry {
		return ctrl.Result{RequeueAfter: retryAfter}, nil
	}
	if waiting {
		ctrl.LoggerFrom(ctx).V(4).Info("Waiting for the leader to put the members' finalizers on")
	}
	return ctrl.Result{}, nil
}

// findRow is a member's row in a status, nil if it has none.
func findRow(st *v1alpha1.MySQLClusterStatus, member string) *v1alpha1.MemberStatus {
	for i := range st.Members {
		if st.Members[i].Name == member {
			return &st.Members[i]
		}
	}
	return nil
}

// emitRowEvents records the changes of primary this replica read in its members (emitReplicationEvents over its
// rows only: the other rows are other replicas' news).
func (r *MySQLClusterReconciler) emitRowEvents(s *scope) {
	view := *s
	cluster := *s.cluster
	cluster.Status.Members = s.members
	view.cluster = &cluster
	r.emitReplicationEvents(&view)
}

// deleteShare tears the MySQLCluster down in the members this replica holds that still carry its finalizer, and
// takes the finalizer off each member that is done. The leader ends the deletion once no member's finalizer is
// left, or when it gives up on them (deletion timeout, force-detach).
func (r *MySQLClusterReconciler) deleteShare(ctx context.Context, c *v1alpha1.MySQLCluster) (ctrl.Result, error) {
	var states []fleet.State
	var done []string
	unsharded := unshardedFinalizers(c)
	for _, m := range r.Fleet.Members() {
		if !m.Owned || !unsharded && !slices.Contains(c.Finalizers, memberFinalizer(m.Name)) {
			continue
		}
		if !m.AllowsNamespace(c.Namespace) {
			done = append(done, m.Name) // its credential cannot have put anything there
			continue
		}
		states = append(states, m)
	}
	if len(states)+len(done) == 0 {
		return ctrl.Result{}, nil
	}
	var pending, unreachable []string
	for _, res := range r.teardownMembers(ctx, c, states, c.Spec.DeletionPolicy == v1alpha1.DeletionPolicyDelete) {
		switch {
		case res.done:
			done = append(done, res.member)
		case res.unreachable:
			unreachable = append(unreachable, res.member)
		default:
			if res.err != nil {
				ctrl.LoggerFrom(ctx).Error(res.err, "Deleting member objects", "member", res.member)
			}
			pending = append(pending, res.member)
		}
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Deleting from members", "done", done, "pending", pending, "unreachable", unreachable)
	if !unsharded {
		if err := removeFinalizers(ctx, r.Hub, c, done...); err != nil {
			return ctrl.Result{}, err
		}
	}
	switch {
	case len(pending) > 0:
		return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
	case len(unreachable) > 0:
		return ctrl.Result{RequeueAfter: retryAfter}, nil
	}
	return ctrl.Result{}, nil
}

// removeFinalizers takes the members' finalizers off the MySQLCluster with a JSON patch that tests each entry
// before removing it: replicas take theirs off at the same time, and a test that fails (an index moved) is
// retried on a fresh read, where an update would fail on every other replica's change.
func removeFinalizers(ctx context.Context, hub client.Client, c *v1alpha1.MySQLCluster, members ...string) error {
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = memberFinalizer(m)
	}
	return removeFinalizer(ctx, hub, c, names...)
}

// removeFinalizer takes finalizers off the MySQLCluster, as removeFinalizers does.
func removeFinalizer(ctx context.Context, hub client.Client, c *v1alpha1.MySQLCluster, names ...string) error {
	if len(names) == 0 {
		return nil
	}
	drop := map[string]bool{}
	for _, f := range names {
		drop[f] = true
	}
	obj := c.DeepCopy()
	for attempt := 0; ; attempt++ {
		var ops []map[string]any
		for i := len(obj.Finalizers) - 1; i >= 0; i-- {
			if f := obj.Finalizers[i]; drop[f] {
				path := fmt.Sprintf("/metadata/finalizers/%d", i)
				ops = append(ops, map[string]any{"op": "test", "path": path, "value": f}, map[string]any{"op": "remove", "path": path})
			}
		}
		if len(ops) == 0 {
			return nil
		}
		patch, err := json.Marshal(ops)
		if err != nil {
			return err
		}
		err = hub.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch))
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return nil
		case !apierrors.IsInvalid(err) || attempt == 2:
			return fmt.Errorf("failed to remove finalizers %s from %s/%s: %w", strings.Join(names, ", "),
				c.Namespace, c.Name, err)
		}
		// A test failed: read the finalizers as they are now.
		if err := hub.Get(ctx, client.ObjectKeyFromObject(c), obj); err != nil {
			return client.IgnoreNotFound(err)
		}
	}
}
