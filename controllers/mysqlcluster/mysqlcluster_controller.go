// Package controllers holds the hub's MySQLCluster reconciler: it resolves each MySQLCluster's placement into
// members, renders and applies what every member needs, reads back how ready it is, and writes one status.
package mysqlcluster

import (
	"context"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
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
	"github.com/mysqlfleet/mysqlfleet/internal/apply"
	"github.com/mysqlfleet/mysqlfleet/internal/fleet"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
)

// MemberObjects are the kinds mysqlfleet writes into members and watches there. The fleet provider syncs their
// informers when a member registers.
func MemberObjects() []client.Object {
	return []client.Object{
		&appsv1.StatefulSet{}, &corev1.Service{}, &corev1.ConfigMap{}, &corev1.Secret{},
		&policyv1.PodDisruptionBudget{}, &batchv1.CronJob{}, &batchv1.Job{}, &corev1.PersistentVolumeClaim{},
		&corev1.Namespace{},
	}
}

// MySQLClusterReconciler reconciles MySQLClusters on the hub into their members.
type MySQLClusterReconciler struct {
	// Hub reads and writes MySQLClusters and credentials on the hub; HubReader reads from its API server, not
	// the cache, what a write just found to exist (nil: Hub).
	Hub       client.Client
	HubReader client.Reader
	// Fleet knows the registered members and their clusters.
	Fleet *fleet.Provider
	// Recorder emits Events on MySQLClusters.
	Recorder events.EventRecorder
	// Namespace is the manager's namespace, which keeps the generated credentials on the hub.
	Namespace string
	// RunnerImage is the image backup and restore Jobs copy the backup runner from (the manager's own).
	RunnerImage string
	// DeletionTimeout is how long deletion waits for unreachable members before the MySQLCluster is released
	// and their leftovers recorded. Default 5m.
	DeletionTimeout time.Duration
	// Workers is how many MySQLClusters are reconciled at once; zero means DefaultWorkers.
	Workers int
	// OrphanScanInterval is how often the member caches are searched for orphans (orphans.go); zero means
	// DefaultOrphanScanInterval.
	OrphanScanInterval time.Duration

	// memberChanged wakes the handler that requeues the MySQLClusters on the members in changedMembers.
	memberChanged  chan event.GenericEvent
	changedMu      sync.Mutex
	changedMembers map[string]bool
	// pace makes the passes a member change asks for wait while placement passes are in flight (pace.go).
	pace *pace
	// owedWake wakes the pending teardown controller (pending.go) after a member change, with owedMembers
	// (guarded by changedMu).
	owedWake    chan event.GenericEvent
	owedMembers map[string]bool
	// orphanWake has the orphans counted again soon (orphans.go).
	orphanWake chan struct{}
	// memory is what the appliers remember across passes: the echoes of this manager's member writes, the
	// object versions known to hold what mysqlfleet wants, and the applies under way.
	memory apply.Memory
	// writers are the members' apply.Writers, by member.
	writersMu sync.Mutex
	writers   map[string]memberWriter
}

// +kubebuilder:rbac:groups=mysqlfleet.io,resources=mysqlclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=mysqlfleet.io,resources=mysqlclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=mysqlfleet.io,resources=mysqlclusters/finalizers,verbs=update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete,namespace=mysqlfleet-system
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete,namespace=mysqlfleet-system

// SetupWithManager registers the reconciler. It reconciles MySQLClusters on the hub only; objects in members
// map back to their MySQLCluster by the labels every member object carries.
func (r *MySQLClusterReconciler) SetupWithManager(mgr mcmanager.Manager) error {
	if r.DeletionTimeout == 0 {
		r.DeletionTimeout = 5 * time.Minute
	}
	r.memberChanged = make(chan event.GenericEvent, 1)
	r.pace = newPace()
	// An event that passes the predicate asks for a pass that must not wait behind placement passes.
	intent := predicate.And(intentChanged(), predicate.NewPredicateFuncs(func(o client.Object) bool {
		r.pace.intent(client.ObjectKeyFromObject(o))
		return true
	}))
	b := mcbuilder.ControllerManagedBy(mgr).
		Named("mysqlcluster").
		For(&v1alpha1.MySQLCluster{},
			mcbuilder.WithEngageWithLocalCluster(true), mcbuilder.WithEngageWithProviderClusters(false),
			mcbuilder.WithPredicates(intent)).
		// Several MySQLClusters reconcile at once, so that one waiting on a slow member holds up no other.
		WithOptions(controller.TypedOptions[mcreconcile.Request]{
			MaxConcurrentReconciles: r.workers(),
			// multicluster-runtime's builder does not take the manager's default, so pass it on.
			SkipNameValidation: mgr.GetLocalManager().GetControllerOptions().SkipNameValidation,
		}).
		WatchesRawSource(source.TypedChannel(r.memberChanged, handler.TypedFuncs[client.Object, mcreconcile.Request]{
			GenericFunc: r.requeueChangedMembers,
		}))
	for _, obj := range MemberObjects() {
		if _, ok := obj.(*corev1.Namespace); ok {
			continue // shared by every MySQLCluster of a namespace; it carries no cluster labels
		}
		b = b.Watches(obj, r.memberEvents,
			mcbuilder.WithEngageWithLocalCluster(false), mcbuilder.WithEngageWithProviderClusters(true))
	}
	if err := b.Complete(r); err != nil {
		return err
	}
	if r.OrphanScanInterval <= 0 {
		r.OrphanScanInterval = DefaultOrphanScanInterval
	}
	r.orphanWake = make(chan struct{}, 1)
	if err := mgr.GetLocalManager().Add(orphanScanner{r: r, interval: r.OrphanScanInterval, wake: r.orphanWake}); err != nil {
		return err
	}
	return r.setupPendingTeardowns(mgr)
}

// DefaultWorkers is how many MySQLClusters are reconciled at once by default. Passes wait on member round trips,
// not CPU, and the requests they send to one member are bounded by the fleet's in-flight slots whatever their
// number, so more of them in flight only keep every member's slots busy.
const DefaultWorkers = 32

func (r *MySQLClusterReconciler) workers() int {
	if r.Workers > 0 {
		return r.Workers
	}
	return DefaultWorkers
}

// MemberChanged requeues the MySQLClusters placed on a member after it registered, left, or changed its facts
// or its reachability, and has the teardowns pending there looked at. It never blocks: the member is noted, and one wake-up of the handler takes every member
// noted by then.
func (r *MySQLClusterReconciler) MemberChanged(member string) {
	r.noteOwedMember(member)
	r.wakeOrphanScan()
	r.changedMu.Lock()
	if r.changedMembers == nil {
		r.changedMembers = map[string]bool{}
	}
	r.changedMembers[member] = true
	r.changedMu.Unlock()
	if r.memberChanged == nil {
		return // not set up yet: the first wake-up after set-up takes this member too
	}
	select {
	case r.memberChanged <- event.GenericEvent{Object: &corev1.Secret{}}:
	default: // a wake-up is pending and will take this member
	}
}

// requeueChangedMembers requeues the MySQLClusters on the members changed since its last call, at low priority:
// a change of a member is a reason to look again at what is placed there, but MySQLClusters whose spec changed
// (new ones above all) come first. When a member of a large fleet goes away, its hundreds of MySQLClusters then
// update their status without holding up the placement of new ones.
func (r *MySQLClusterReconciler) requeueChangedMembers(ctx context.Context, _ event.TypedGenericEvent[client.Object],
	q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
	r.changedMu.Lock()
	changed := r.changedMembers
	r.changedMembers = nil
	r.changedMu.Unlock()
	if len(changed) == 0 {
		return
	}
	states := r.requeuePlaced(ctx, changed, q)
	if states == nil {
		return
	}
	registered := map[string]bool{}
	for _, st := range states {
		registered[st.Name] = true
	}
	for m := range changed {
		if !registered[m] {
			r.memory.ForgetMember(m) // left: what was verified there means nothing any more
			r.forgetWriter(m)
		}
	}
}

// requeuePlaced adds the MySQLClusters placed on any of the changed members to the queue at low priority, and
// returns the registry it resolved placements against; nil when the MySQLClusters could not be listed (the
// members are then noted again for a later try).
func (r *MySQLClusterReconciler) requeuePlaced(ctx context.Context, changed map[string]bool,
	q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) []fleet.State {
	var list v1alpha1.MySQLClusterList
	if err := r.Hub.List(ctx, &list); err != nil {
		// Keep the members for the next try: a change that requeues nothing would leave status stale.
		ctrl.LoggerFrom(ctx).Error(err, "Listing MySQLClusters to requeue after a member change")
		time.AfterFunc(time.Second, func() {
			for m := range changed {
				r.MemberChanged(m)
			}
		})
		return nil
	}
	states := r.Fleet.Members()
	facts := make([]placement.Member, 0, len(states))
	for _, st := range states {
		facts = append(facts, st.Member)
	}
	add := func(key types.NamespacedName) {
		req := mcreconcile.Request{Request: reconcile.Request{NamespacedName: key}}
		if pq, ok := q.(priorityqueue.PriorityQueue[mcreconcile.Request]); ok {
			pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(handler.LowPriority)}, req)
		} else {
			q.Add(req)
		}
	}
	for i := range list.Items {
		if c := &list.Items[i]; placedOnAny(c, facts, changed) {
			if key := client.ObjectKeyFromObject(c); r.pace.memberChanged(key, changed, add) {
				add(key)
			}
		}
	}
	return states
}

// placedOnAny tells whether a MySQLCluster is, or was last seen, on one of the members: its status lists one,
// or its placement chooses or names one. A placement that cannot be resolved counts as placed everywhere.
func placedOnAny(c *v1alpha1.MySQLCluster, facts []placement.Member, members map[string]bool) bool {
	for _, m := range c.Status.Members {
		if members[m.Name] {
			return true
		}
	}
	selected, unknown, err := placement.Resolve(c.Spec.Placement, facts)
	if err != nil {
		return true
	}
	for _, m := range selected {
		if members[m.Name] {
			return true
		}
	}
	for _, name := range unknown {
		if members[name] {
			return true
		}
	}
	return false
}

// intentChanged passes the hub events that can change what a pass does: creation, deletion (which bumps the
// generation too), a new generation (the spec), labels and annotations (force-detach). The manager's own status
// and finalizer writes change none of them, so they do not come back as another pass.
func intentChanged() predicate.Predicate {
	return predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{},
		predicate.AnnotationChangedPredicate{}, predicate.Funcs{
			UpdateFunc: func(e event.UpdateEvent) bool {
				return e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
			},
			CreateFunc: func(event.CreateEvent) bool { return false }, DeleteFunc: func(event.DeleteEvent) bool { return false },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})
}

// memberEvents maps events of objects in a member to the MySQLCluster on the hub named by their labels, except
// the echoes of the manager's own applies there and what the member's cache found when it started (its initial
// list): engaging a member, at start-up, on a new kubeconfig or on taking it over from another replica, requeues
// every MySQLCluster placed there once its caches have synced (the provider's OnChange, MemberChanged), so the
// initial list's creates would only pass the same MySQLClusters again, one more time for each object of theirs
// that arrives after their pass began.
func (r *MySQLClusterReconciler) memberEvents(name multicluster.ClusterName, _ cluster.Cluster) handler.TypedEventHandler[client.Object, mcreconcile.Request] {
	member := string(name)
	enqueue := handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []mcreconcile.Request {
		reqs := toHubObject(ctx, obj)
		for _, req := range reqs {
			r.pace.drift(req.NamespacedName, member) // repaired at once, not after the placement passes
		}
		return reqs
	})
	return handler.TypedFuncs[client.Object, mcreconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			if e.IsInInitialList {
				return
			}
			r.memory.Filter(member, e.Object, func() { enqueue.Create(ctx, e, q) })
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			r.memory.Filter(member, e.ObjectNew, func() { enqueue.Update(ctx, e, q) })
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[mcreconcile.Request]) {
			r.memory.Forget(member, e.Object)
			enqueue.Delete(ctx, e, q)
		},
		GenericFunc: enqueue.Generic,
	}
}

// toHubObject maps an object in a member to the MySQLCluster on the hub named by its labels.
func toHubObject(_ context.Context, obj client.Object) []mcreconcile.Request {
	l := obj.GetLabels()
	ns, name := l[v1alpha1.ClusterNamespaceLabel], l[v1alpha1.ClusterNameLabel]
	if ns == "" || name == "" || l[v1alpha1.ManagedByLabel] != v1alpha1.ManagedByValue {
		return nil
	}
	return []mcreconcile.Request{{Request: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}}
}

// Reconcile brings every member of one MySQLCluster in line with its spec and reports what it found.
func (r *MySQLClusterReconciler) Reconcile(ctx context.Context, req mcreconcile.Request) (ctrl.Result, error) {
	if req.ClusterName != multicluster.ClusterName("") {
		return ctrl.Result{}, nil // member events are mapped to the hub object; nothing reconciles in members
	}
	log := ctrl.LoggerFrom(ctx)
	c := &v1alpha1.MySQLCluster{}
	if err := r.Hub.Get(ctx, req.NamespacedName, c); err != nil {
		if apierrors.IsNotFound(err) {
			r.pace.forget(req.NamespacedName)
			forgetPhase(req.NamespacedName)
			forgetPrimaries(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// Until every registration Secret has been processed once, the registry is incomplete: placement would call
	// registered members unknown and deletion would skip them.
	if synced, err := r.Fleet.Synced(ctx); err != nil || !synced {
		return ctrl.Result{RequeueAfter: time.Second}, err
	}
	settled := c.DeletionTimestamp.IsZero() && c.Status.ObservedGeneration == c.Generation
	run, only, end := r.pace.begin(req.NamespacedName, settled)
	if !run {
		log.V(4).Info("A member changed; passing again once the placement passes in flight have ended")
		return ctrl.Result{}, nil
	}
	defer end()
	if only != nil && len(only) == 0 {
		only = unsettled(c)
	}
	res, err := r.pass(ctx, c, only)
	// A requeue within retryAfter is a retry (a member failed, a conflict, a wait); a later one is a timer's
	// (lookAgain: a backup growing stale), after which the members need no look.
	if err != nil || (res.RequeueAfter > 0 && res.RequeueAfter <= retryAfter) {
		r.pace.retry(req.NamespacedName, only)
	} else {
		r.pace.done(req.NamespacedName, only)
	}
	return res, err
}

// unsettled are the members whose rows do not report this generation applied with every Pod ready: a pass that
// nothing asked for (pace.take) looks at them, so that a member still converging is looked at again, and a member
// that has converged is not passed for nothing.
func unsettled(c *v1alpha1.MySQLCluster) map[string]bool {
	out := map[string]bool{}
	for _, row := range c.Status.Members {
		for _, t := range []string{v1alpha1.MemberConditionApplied, v1alpha1.MemberConditionPodsReady} {
			if cond := meta.FindStatusCondition(row.Conditions, t); cond == nil ||
				cond.Status != metav1.ConditionTrue || cond.ObservedGeneration != c.Generation {
				out[row.Name] = true
			}
		}
	}
	return out
}
