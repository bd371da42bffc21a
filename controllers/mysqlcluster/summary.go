package mysqlcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcbuilder "sigs.k8s.io/multicluster-runtime/pkg/builder"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"
	mcreconcile "sigs.k8s.io/multicluster-runtime/pkg/reconcile"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	v1alpha1ac "github.com/mysqlfleet/mysqlfleet/api/v1alpha1/applyconfiguration/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// setupSummary registers, sharded, the controller that runs on the elected leader only: it computes each
// MySQLCluster's summary from the rows the replicas wrote and writes it (a merge patch of the fields other than
// the rows), removes the rows of members no longer placed, puts the finalizers on and ends deletions. It never
// talks to a member.
func (r *MySQLClusterReconciler) setupSummary(mgr mcmanager.Manager) error {
	r.summaryChanged = make(chan event.GenericEvent, 1)
	return mcbuilder.ControllerManagedBy(mgr).
		Named("mysqlcluster-status").
		For(&v1alpha1.MySQLCluster{},
			mcbuilder.WithEngageWithLocalCluster(true), mcbuilder.WithEngageWithProviderClusters(false),
			mcbuilder.WithPredicates(predicate.Or(intentChanged(), finalizersChanged()))).
		// The owners' rows, a moment later: one summary for the rows that arrive together.
		Watches(&v1alpha1.MySQLCluster{}, rowsSettled,
			mcbuilder.WithEngageWithLocalCluster(true), mcbuilder.WithEngageWithProviderClusters(false),
			mcbuilder.WithPredicates(rowsChanged())).
		WithOptions(controller.TypedOptions[mcreconcile.Request]{
			// As many as the owners': a new MySQLCluster waits for this pass (its finalizers) before any owner
			// writes into a member.
			MaxConcurrentReconciles: 32,
			SkipNameValidation:      mgr.GetLocalManager().GetControllerOptions().SkipNameValidation,
		}).
		WatchesRawSource(source.TypedChannel(r.summaryChanged, handler.TypedFuncs[client.Object, mcreconcile.Request]{
			GenericFunc: r.requeueSummaries,
		})).
		Complete(mcreconcile.Func(r.reconcileSummary))
}

// rowsSettle is how long the summary waits after a replica wrote rows before it is computed again. The owners of a
// MySQLCluster's members write their rows each on its own (three replicas, three writes when it is created, and
// as many when its members turn ready together); a summary after each would be written as often, where one after
// the last is the same status. Each summary write costs the hub a decode, a validation and the managed fields of
// the whole object (a MySQLCluster of 30 members holds 30 rows). The price is a summary that shows a change of
// rows up to this much later; a change of spec, labels, annotations, finalizers or deletion is summarised at once.
const rowsSettle = 2 * time.Second

// summaryHold bounds how long the summary waits, while a generation's rows come in, for the rest of them. Each owner
// of a MySQLCluster's members writes their rows when its pass ends, seconds apart on a busy fleet, and a summary
// followed each (rowsSettle apart): while some rows are missing or still speak of an earlier generation, and the
// others tell of progress only, such a summary says "progressing" as the one before did, and costs the hub a
// write of the whole object, whose cost grows with its rows. So the summary waits for the
// last row, at most this long from the first pass it held back. Nothing else waits: the first summary (the owners
// wait for it), a spec, placement or restore error, a row that tells of an unreachable, failing or conflicting
// member, and every change once the rows are all current, are summarised as before.
const summaryHold = 10 * time.Second

// holdSummary tells how much longer the summary of key may wait for its remaining rows (summaryHold above); zero
// means write it now. now is the time of the pass.
func (r *MySQLClusterReconciler) holdSummary(key types.NamespacedName, s *scope, now time.Time) time.Duration {
	c := s.cluster
	sum := summarize(s.members, c.Generation)
	// Rows to remove are never held: they are the placement's, whose changes are summarised at once.
	hold := summaryDiffers(c, s.before) && len(c.Status.Members) == len(s.before.Members) &&
		!equality.Semantic.DeepEqual(*s.before, v1alpha1.MySQLClusterStatus{}) &&
		s.specErr == nil && s.placementErr == nil && s.restoreErr == nil && len(s.unknown) == 0 &&
		equality.Semantic.DeepEqual(c.Status.RestoredFrom, s.before.RestoredFrom) &&
		len(sum.unreachable)+len(sum.failed)+len(sum.conflicted) == 0 &&
		!rowsCurrent(s.members, c.Generation)
	r.heldMu.Lock()
	defer r.heldMu.Unlock()
	if !hold {
		delete(r.held, key)
		return 0
	}
	if r.held == nil {
		r.held = map[types.NamespacedName]time.Time{}
	}
	since, ok := r.held[key]
	if !ok {
		since = now
		r.held[key] = now
	}
	if left := summaryHold - now.Sub(since); left > 0 {
		return left
	}
	delete(r.held, key)
	return 0
}

// forgetHold drops the hold of a MySQLCluster that is gone.
func (r *MySQLClusterReconciler) forgetHold(key types.NamespacedName) {
	r.heldMu.Lock()
	defer r.heldMu.Unlock()
	delete(r.held, key)
}

// rowsSettled requeues a MySQLCluster whose rows changed after rowsSettle; the queue keeps one request per
// MySQLCluster, so the rows written meanwhile are summarised by the same pass.
func rowsSettled(multicluster.ClusterName, cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
	return handler.TypedFuncs[client.Object, mcreconcile.Request]{
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			key := client.ObjectKeyFromObject(e.ObjectNew)
			q.AddAfter(mcreconcile.Request{Request: reconcile.Request{NamespacedName: key}}, rowsSettle)
		},
	}
}

// rowsChanged passes updates that changed status.members: a replica wrote one of its rows.
func rowsChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			before, ok1 := e.ObjectOld.(*v1alpha1.MySQLCluster)
			after, ok2 := e.ObjectNew.(*v1alpha1.MySQLCluster)
			return !ok1 || !ok2 || !equality.Semantic.DeepEqual(before.Status.Members, after.Status.Members)
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// requeueSummaries requeues the MySQLClusters on the members that changed (registered, left, changed facts):
// their placement, hence their summary, may have changed.
func (r *MySQLClusterReconciler) requeueSummaries(ctx context.Context, _ event.TypedGenericEvent[client.Object],
	q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
	r.changedMu.Lock()
	changed := r.summaryMembers
	r.summaryMembers = nil
	r.changedMu.Unlock()
	if len(changed) > 0 {
		r.requeuePlaced(ctx, changed, q)
	}
}

// reconcileSummary is the leader's pass over a MySQLCluster, sharded.
func (r *MySQLClusterReconciler) reconcileSummary(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
	if req.ClusterName != multicluster.ClusterName("") {
		return ctrl.Result{}, nil
	}
	c := &v1alpha1.MySQLCluster{}
	if err := r.Hub.Get(ctx, req.NamespacedName, c); err != nil {
		if apierrors.IsNotFound(err) {
			r.forgetHold(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if synced, err := r.Fleet.Synced(ctx); err != nil || !synced {
		return ctrl.Result{RequeueAfter: time.Second}, err
	}
	if !c.DeletionTimestamp.IsZero() {
		r.forgetHold(req.NamespacedName)
		return r.finishShare(ctx, c)
	}
	s, err := r.summarizeRows(ctx, c, nil)
	if err != nil {
		return ctrl.Result{}, err // the hub did not answer: nothing to say yet
	}
	// The credentials (at once) and the status, then the finalizers: the owners start writing into members once
	// they see the finalizers, and then find the credentials made and the summary their rows go with. The
	// summary after the finalizers (tried on 2026-11-28, to take a hub write off the owners' way) made it slower:
	// queued behind the burst's other summaries, 40 of 50 first summaries came after an owner's rows and were
	// refused, and the owners' rows conflicted with each other (388 status PATCHes for 50 MySQLClusters instead
	// of 237).
	var credsErr error
	var wg sync.WaitGroup
	if len(s.placed) > 0 {
		wg.Go(func() { credsErr = r.reconcileCredentials(ctx, s) })
	}
	hold := r.holdSummary(req.NamespacedName, s, time.Now())
	if hold == 0 {
		err = patchStatus(ctx, r.summaryWriter(), s)
	}
	wg.Wait()
	if apierrors.IsConflict(err) && credsErr == nil {
		// Written meanwhile, by an owner (whose write carries its summary) or a user: what this pass computed is
		// about a status that is gone. The next pass computes it from the new one.
		ctrl.LoggerFrom(ctx).V(4).Info("Status changed since it was read; summarising again")
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if err := errors.Join(err, credsErr); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.putFinalizers(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	if hold > 0 {
		// Nothing of this summary was written: its transitions are announced with the write that brings them.
		return ctrl.Result{RequeueAfter: hold}, nil
	}
	r.emitTransitions(s)
	reportPhase(c, c.Status.Phase)
	if !s.lookAgain.IsZero() {
		return ctrl.Result{RequeueAfter: time.Until(s.lookAgain) + time.Second}, nil
	}
	return ctrl.Result{}, nil
}

// summarizeRows computes c's status as a write of own (an owner's rows; none for the leader) leaves it: the rows
// as read with own in their places, less the rows of members no longer placed (or no longer registered), and
// the summary of exactly those rows, a placed member without a row counting as progressing. The scope it
// returns holds the status as read in before and the status to write in cluster (c itself, changed). An
// error is a hub that did not answer (spec.restore's source): nothing to say yet. Owners and the leader
// summarise with this one function, so that whoever writes rows writes the summary they make (see rows.go).
func (r *MySQLClusterReconciler) summarizeRows(ctx context.Context, c *v1alpha1.MySQLCluster, own []v1alpha1.MemberStatus) (*scope, error) {
	s := &scope{cluster: c, before: c.Status.DeepCopy()}
	r.resolvePlacement(s)
	r.resolveRestore(ctx, s)
	if s.restoreErr != nil && !errors.Is(s.restoreErr, render.ErrInvalid) {
		return nil, s.restoreErr
	}
	rows := slices.DeleteFunc(mergeRows(s.before.Members, own), func(m v1alpha1.MemberStatus) bool { return !s.chosen[m.Name] })
	s.members, s.specErr = rowsOf(s, rows)
	s.computeStatus(time.Now())
	c.Status.Members = rows
	return s, nil
}

// rowsOf lines up the rows of the placed members, in placement order, with a placeholder for a member whose
// owner has not written its row yet (it counts as progressing), and finds a spec error a row or the spec itself
// reports.
func rowsOf(s *scope, rows []v1alpha1.MemberStatus) ([]v1alpha1.MemberStatus, error) {
	c := s.cluster
	var specErr error
	if s.restoreErr != nil {
		specErr = s.restoreErr
	}
	carried := &v1alpha1.MySQLClusterStatus{Members: rows}
	lined := make([]v1alpha1.MemberStatus, 0, len(s.placed))
	for _, m := range s.placed {
		row := findRow(carried, m.Name)
		if row == nil {
			lined = append(lined, v1alpha1.MemberStatus{Name: m.Name, Cloud: m.Cloud, Region: m.Region, Replicas: c.Spec.Replicas})
			continue
		}
		lined = append(lined, *row.DeepCopy())
		if specErr != nil {
			continue
		}
		if _, err := render.BackupSchedule(c, m.Name); err != nil {
			specErr = err
			continue
		}
		applied := meta.FindStatusCondition(row.Conditions, v1alpha1.MemberConditionApplied)
		if applied != nil && applied.ObservedGeneration == c.Generation && applied.Reason == v1alpha1.ReasonInvalidSpec {
			specErr = fmt.Errorf("%w: %s", render.ErrInvalid, applied.Message)
		}
	}
	return lined, specErr
}

// rowsCurrent tells whether every row's Applied condition is about this generation.
func rowsCurrent(rows []v1alpha1.MemberStatus, generation int64) bool {
	for _, m := range rows {
		applied := meta.FindStatusCondition(m.Conditions, v1alpha1.MemberConditionApplied)
		if applied == nil || applied.ObservedGeneration != generation {
			return false
		}
	}
	return true
}

// putFinalizers puts on the MySQLCluster's own finalizer, the mark of sharded replicas and a finalizer for each
// member it is placed on, before any replica writes there. Finalizers are a set: an apply under mysqlfleet adds
// what is missing and keeps what is there (a member it left keeps its finalizer while its volumes stay there). A
// MySQLCluster that unsharded replicas reconciled may have objects in any member that allows its namespace: those
// get a finalizer each, and their owners take it off at deletion once they find nothing there.
func (r *MySQLClusterReconciler) putFinalizers(ctx context.Context, s *scope) error {
	c := s.cluster
	want := slices.Clone(c.Finalizers)
	add := func(f string) {
		if !slices.Contains(want, f) {
			want = append(want, f)
		}
	}
	legacy := unshardedFinalizers(c)
	add(v1alpha1.Finalizer)
	add(shardedFinalizer)
	for _, m := range s.placed {
		add(memberFinalizer(m.Name))
	}
	if legacy {
		for _, m := range r.Fleet.Members() {
			if m.AllowsNamespace(c.Namespace) {
				add(memberFinalizer(m.Name))
			}
		}
	}
	if len(want) == len(c.Finalizers) {
		return nil
	}
	var ours []string
	for _, f := range want {
		if f == v1alpha1.Finalizer || isMemberFinalizer(f) {
			ours = append(ours, f)
		}
	}
	ac := v1alpha1ac.MySQLCluster(c.Name, c.Namespace).WithUID(c.UID).WithFinalizers(ours...)
	if err := r.Hub.Apply(ctx, ac, client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("failed to put finalizers on %s/%s: %w", c.Namespace, c.Name, err)
	}
	c.Finalizers = want
	return nil
}

// finishShare ends a deletion, sharded: once every member's finalizer is off (each owner takes its members' off
// when they are torn down), or when the deletion timeout or force-detach gives up on those left, it removes the
// MySQLCluster's own finalizer. Members no longer registered cannot be reached: their finalizers go at once, as
// unsharded deletion does not wait for them either, once their teardown is recorded as pending; the members given
// up on are recorded too (recordTeardowns).
func (r *MySQLClusterReconciler) finishShare(ctx context.Context, c *v1alpha1.MySQLCluster) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(c, v1alpha1.Finalizer) {
		return ctrl.Result{}, nil
	}
	reportPhase(c, v1alpha1.PhaseDeleting)
	before := c.Status.DeepCopy()
	c.Status.Phase = v1alpha1.PhaseDeleting
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonDeleting, Message: "deleting from members", ObservedGeneration: c.Generation})
	if err := patchStatus(ctx, r.summaryWriter(), &scope{cluster: c, before: before}); apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: time.Second}, nil // written meanwhile: say it again over what is there now
	} else if err != nil {
		return ctrl.Result{}, err
	}
	registered := map[string]bool{}
	for _, m := range r.Fleet.Members() {
		registered[m.Name] = true
	}
	var left, drop []string
	for _, f := range c.Finalizers {
		if m, ok := strings.CutPrefix(f, memberFinalizerPrefix); ok {
			if registered[m] {
				left = append(left, m)
			} else {
				drop = append(drop, m)
			}
		}
	}
	waited := time.Since(c.DeletionTimestamp.Time)
	release := waited >= r.DeletionTimeout || c.Annotations[v1alpha1.ForceDetachAnnotation] == "true"
	if unshardedFinalizers(c) && !release {
		// Deleted before this leader could put the members' finalizers on (no finalizer can be added to an object
		// being deleted): the owners tear down in their members without telling when they are done, and the
		// deletion waits for them as long as it waits for an unreachable member, unless no member can hold
		// anything of it.
		for _, m := range r.Fleet.Members() {
			if m.AllowsNamespace(c.Namespace) {
				return ctrl.Result{RequeueAfter: min(retryAfter, r.DeletionTimeout-waited)}, nil
			}
		}
	}
	var gaveUp []string
	if release && len(left) > 0 {
		gaveUp, left = left, nil
	}
	// Recorded before the finalizers come off: the record is then all that remembers these members.
	if err := r.recordTeardowns(ctx, c, drop, gaveUp, waited); err != nil {
		return ctrl.Result{}, err
	}
	if err := removeFinalizers(ctx, r.Hub, c, append(drop, gaveUp...)...); err != nil {
		return ctrl.Result{}, err
	}
	if len(left) > 0 {
		return ctrl.Result{RequeueAfter: min(retryAfter, r.DeletionTimeout-waited)}, nil
	}
	if c.Spec.DeletionPolicy == v1alpha1.DeletionPolicyDelete {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: credentialsSecretName(c)}}
		if err := r.Hub.Delete(ctx, secret); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
	}
	if err := removeFinalizer(ctx, r.Hub, c, v1alpha1.Finalizer, shardedFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	forgetPhase(client.ObjectKeyFromObject(c))
	forgetPrimaries(client.ObjectKeyFromObject(c))
	return ctrl.Result{}, nil
}
