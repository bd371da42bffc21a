package mysqlcluster

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// Sharded, each MySQLCluster's status is written by several replicas: every owner writes the rows of
// status.members of the members it works in, and the leader the rows' removal and a summary when the spec, the
// placement or the registry changed. Whatever a write carries, the status it leaves is consistent in itself:
//
//   - every write that changes rows also writes the summary (phase, counts, conditions, observedGeneration),
//     computed from the very rows that the status holds after the write: the rows as read, with the writer's rows
//     in their places and the rows of members no longer placed removed (summarizeRows, the same function for an
//     owner and for the leader);
//   - every write is a merge patch against the resourceVersion it was computed from (optimistic locking): a
//     write that would land beside rows, a spec or finalizers it did not see is refused with a conflict, and the
//     owner computes it again from the MySQLCluster as the API server has it now (the leader passes again).
//
// So no reader ever sees a summary computed from older rows beside newer ones, whichever instant it reads:
// `kubectl wait`, a GitOps health check and `mysqlfleet get` read an object whose counts, conditions and phase
// are those of its rows, and whose observedGeneration N means that every row it carries is about N.
//
// Two other designs were weighed (issue 51). The leader alone summarising a moment after the owners' rows (as
// before) left the object contradicting itself for that moment: rows Ready beside "0/3 members
// ready", under an observedGeneration that said the spec had been seen. A marker of the rows a summary was
// computed from (a summary generation or rows revision) would make the contradiction detectable, not absent:
// every reader would have to know to compare it, and printer columns, `kubectl wait --for=condition=Ready` and
// kstatus do not. The price of the design taken is that owners writing at the same moment conflict: one wins,
// each other reads again and writes once more (a GET and a refused PATCH each), where per-row JSON patches never
// conflicted. A converged fleet still writes nothing, and the leader's summary after the owners' rows, which
// was a second write of the whole object, now finds nothing to change.

// statusAttempts bounds how often an owner computes and writes its rows and summary again after a conflict
// within one pass; then the pass fails and is retried with the controller's backoff. Each attempt reads the
// MySQLCluster afresh, and of the writers that race one always wins, so three replicas settle within three.
const statusAttempts = 5

// mergeRows is the list of rows as read with each of own in its place (a row of a member not listed is
// appended), the order of the others kept.
func mergeRows(read, own []v1alpha1.MemberStatus) []v1alpha1.MemberStatus {
	rows := make([]v1alpha1.MemberStatus, 0, len(read)+len(own))
	for _, row := range read {
		rows = append(rows, *row.DeepCopy())
	}
	for _, row := range own {
		if i := slices.IndexFunc(rows, func(m v1alpha1.MemberStatus) bool { return m.Name == row.Name }); i >= 0 {
			rows[i] = *row.DeepCopy()
		} else {
			rows = append(rows, *row.DeepCopy())
		}
	}
	return rows
}

// rowsDiffer tells whether any of rows differs from the row of its member in st (or st has none).
func rowsDiffer(st *v1alpha1.MySQLClusterStatus, rows []v1alpha1.MemberStatus) bool {
	for _, row := range rows {
		if was := findRow(st, row.Name); was == nil || !equality.Semantic.DeepEqual(*was, row) {
			return true
		}
	}
	return false
}

// writeShare writes an owner's rows, those that differ from the status as read (before), together with the
// summary of every row the status then carries; nothing when none of its rows changed (a summary to mend
// otherwise is the leader's). c is the MySQLCluster as the pass read it. On a conflict it reads the MySQLCluster
// from the API server and computes the write again, with the same rows: only those the pass changed, since a row
// it kept as read (a member it did not look at) may be older than the one written meanwhile. It returns the
// scope of the write that was made, whose before is the status it replaced (for the Events of the transitions
// it made), or nil.
func (r *MySQLClusterReconciler) writeShare(ctx context.Context, c *v1alpha1.MySQLCluster, before *v1alpha1.MySQLClusterStatus,
	rows []v1alpha1.MemberStatus) (*scope, error) {
	var changed []v1alpha1.MemberStatus
	for _, row := range rows {
		if rowsDiffer(before, []v1alpha1.MemberStatus{row}) {
			changed = append(changed, row)
		}
	}
	obj := c.DeepCopy()
	obj.Status = *before.DeepCopy()
	for attempt := 1; ; attempt++ {
		if !rowsDiffer(&obj.Status, changed) {
			return nil, nil
		}
		s, err := r.summarizeRows(ctx, obj.DeepCopy(), changed)
		if err != nil {
			return nil, err
		}
		err = patchStatus(ctx, r.Hub, s)
		switch {
		case err == nil:
			return s, nil
		case apierrors.IsNotFound(err):
			return nil, nil
		case !apierrors.IsConflict(err) || attempt == statusAttempts:
			return nil, fmt.Errorf("failed to write the status rows of %s/%s: %w", c.Namespace, c.Name, err)
		}
		// Written meanwhile (another owner's rows, the leader's summary, the spec): read it as it is now.
		if err := r.reader().Get(ctx, client.ObjectKeyFromObject(c), obj); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		if obj.UID != c.UID {
			return nil, nil // another MySQLCluster of the same name
		}
	}
}

// patchStatus writes s.cluster's status, if it differs from s.before, as a merge patch against the
// resourceVersion that s.cluster was read at: it is refused with a conflict if the MySQLCluster changed since,
// so the status written is the one computed from what it replaces. Every sharded status write goes through it.
func patchStatus(ctx context.Context, w client.Client, s *scope) error {
	c := s.cluster
	if equality.Semantic.DeepEqual(*s.before, c.Status) {
		return nil
	}
	base, want := c.DeepCopy(), c.DeepCopy()
	base.Status = *s.before.DeepCopy()
	// A copy is written: the pass may read s.cluster meanwhile (the leader makes the credentials concurrently).
	patch := client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})
	if err := w.Status().Patch(ctx, want, patch, client.FieldOwner(v1alpha1.FieldManager)); err != nil {
		return fmt.Errorf("failed to write the status of %s/%s: %w", c.Namespace, c.Name, err)
	}
	return nil
}

// reader reads MySQLClusters from the hub's API server, for a write that must not be computed against a cache
// that is behind.
func (r *MySQLClusterReconciler) reader() client.Reader {
	if r.HubReader != nil {
		return r.HubReader
	}
	return r.Hub
}

// summaryWriter writes the leader's summaries.
func (r *MySQLClusterReconciler) summaryWriter() client.Client {
	if r.Summary != nil {
		return r.Summary
	}
	return r.Hub
}

// summaryDiffers tells whether c's status differs from before in a field other than the rows.
func summaryDiffers(c *v1alpha1.MySQLCluster, before *v1alpha1.MySQLClusterStatus) bool {
	now, was := c.Status.DeepCopy(), before.DeepCopy()
	now.Members, was.Members = nil, nil
	return !equality.Semantic.DeepEqual(now, was)
}
