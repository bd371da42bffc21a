package mysqlcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/fleet"
	"github.com/mysqlfleet/mysqlfleet/internal/leftovers"
)

// teardown removes one MySQLCluster's objects from one member: those that carry its UID label, never an object
// of the same name that another MySQLCluster (a predecessor, say) or a person made. Workloads, Services,
// configuration and credentials go; PersistentVolumeClaims (data and backups) only when deleteVolumes, and only
// once no StatefulSet of it is left, since the StatefulSet's Pods use them. The StatefulSet keeps its claims
// (whenDeleted Retain), so mysqlfleet is the only one that deletes them. The Namespace is never deleted: other
// databases or the retained volumes live there. It returns whether nothing is left to remove.
func teardown(ctx context.Context, mc client.Client, c *v1alpha1.MySQLCluster, deleteVolumes bool) (bool, error) {
	sel := client.MatchingLabels{v1alpha1.ClusterUIDLabel: string(c.UID), v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}
	lists := leftovers.TeardownLists(deleteVolumes)
	done := true
	var errs []error
	for _, list := range lists {
		if _, ok := list.(*corev1.PersistentVolumeClaimList); ok && !done {
			break // a StatefulSet (listed first) is still there: its Pods may still use the claims
		}
		if err := mc.List(ctx, list, client.InNamespace(c.Namespace), sel); err != nil {
			errs = append(errs, err)
			done = false
			continue
		}
		items, err := metaItems(list)
		if err != nil {
			return false, err
		}
		for _, obj := range items {
			done = false
			if !obj.GetDeletionTimestamp().IsZero() {
				continue
			}
			// Background propagation: the member's garbage collector removes the CronJob's Jobs and the
			// StatefulSet's Pods. The UID precondition makes sure that what is deleted is what was listed.
			uid := obj.GetUID()
			err := mc.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &uid})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("failed to delete %T %s: %w", obj, client.ObjectKeyFromObject(obj), err))
			}
		}
	}
	return done && len(errs) == 0, errors.Join(errs...)
}

func metaItems(list client.ObjectList) ([]client.Object, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	out := make([]client.Object, 0, len(items))
	for _, item := range items {
		obj, ok := item.(client.Object)
		if !ok {
			return nil, fmt.Errorf("unexpected %T in %T", item, list)
		}
		out = append(out, obj)
	}
	return out, nil
}

// teardownResult is what tearing down in one member found.
type teardownResult struct {
	member string
	done   bool
	err    error
	// unreachable: the member cannot be reached or its registration was refused; waiting is all there is to do.
	unreachable bool
}

// teardownMembers tears the MySQLCluster down in the given members at once, each request bounded by the fleet's
// request timeout and all of it stopped as soon as its member is found unreachable. A member that is registering (a new kubeconfig, say) is
// not done: it is waited for, never skipped.
func (r *MySQLClusterReconciler) teardownMembers(ctx context.Context, c *v1alpha1.MySQLCluster, states []fleet.State,
	deleteVolumes bool) []teardownResult {
	results := make([]teardownResult, len(states))
	var wg sync.WaitGroup
	for i, m := range states {
		results[i].member = m.Name
		if m.Err != nil {
			results[i].unreachable, results[i].err = true, m.Err
			continue
		}
		if !m.Engaged {
			results[i].err = errors.New("member is registering")
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			mctx, cancel := r.memberContext(ctx, m)
			defer cancel()
			cl, err := r.Fleet.Get(mctx, multicluster.ClusterName(m.Name))
			if err != nil {
				results[i].unreachable, results[i].err = true, err
				return
			}
			done, err := teardown(mctx, cl.GetClient(), c, deleteVolumes)
			if err != nil && m.Alive != nil && m.Alive.Err() != nil {
				err = context.Cause(m.Alive)
			}
			results[i].done, results[i].err, results[i].unreachable = done, err, isUnreachable(err)
		}()
	}
	wg.Wait()
	return results
}

// reconcileDeparted removes this MySQLCluster's objects, except its volumes, from the members that are no longer
// placed. Leaving the placement never deletes data: a member leaves when someone edits a label of its
// registration or the selector, and that is no request to destroy a database. The claims stay, carrying this
// MySQLCluster's UID: a member that comes back into the placement finds its data again, and deleting the
// MySQLCluster removes them as its deletionPolicy says. The search is by UID and reads the member caches only,
// so members this MySQLCluster never used cost no request; a member whose registration was deleted cannot be
// reached any more and keeps its objects.
func (r *MySQLClusterReconciler) reconcileDeparted(ctx context.Context, s *scope) {
	if s.cluster.Spec.Paused || s.placementErr != nil || s.chosen == nil {
		return // nothing departs from a placement that was not resolved
	}
	departed := departedMembers(s, r.Fleet.Members())
	for _, res := range r.teardownMembers(ctx, s.cluster, departed, false) {
		if res.err != nil {
			ctrl.LoggerFrom(ctx).Error(res.err, "Removing objects from a member that left the placement", "member", res.member)
		}
		if !res.done {
			s.retry = true
		}
	}
}

// departedMembers are the members, of the registry now, that this MySQLCluster's placement left: judged against
// every member the placement chose, not the ones this pass works in (a pass asked for by a member change works
// in that member only), and only among the members registered when the placement was resolved (one registered
// since was not judged by it). Only members engaged, healthy and allowed the namespace count.
func departedMembers(s *scope, now []fleet.State) []fleet.State {
	var departed []fleet.State
	for _, m := range now {
		if s.registered[m.Name] && !s.chosen[m.Name] && m.Engaged && m.Err == nil &&
			m.AllowsNamespace(s.cluster.Namespace) {
			departed = append(departed, m)
		}
	}
	return departed
}

// reconcileDelete tears the MySQLCluster down in every member, then releases the finalizer. While members are
// unreachable, registering or failing, the MySQLCluster is held (and its status says Deleting) for at most
// DeletionTimeout, or until the force-detach annotation is set; then it is released, and what was left behind
// is named in an Event and a log line and recorded as a pending teardown, finished once the member answers again
// (pending.go). Members it was placed on that are not registered now are not waited for: their teardown is
// recorded at once. A recreated MySQLCluster of the same name does not take those objects over unless it adopts
// them (see AdoptAnnotation), which also cancels their pending teardown.
func (r *MySQLClusterReconciler) reconcileDelete(ctx context.Context, c *v1alpha1.MySQLCluster) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if !controllerutil.ContainsFinalizer(c, v1alpha1.Finalizer) {
		return ctrl.Result{}, nil
	}
	reportPhase(c, v1alpha1.PhaseDeleting)
	if err := r.markDeleting(ctx, c); err != nil {
		return ctrl.Result{}, err
	}
	var states []fleet.State
	registered := map[string]bool{}
	for _, m := range r.Fleet.Members() {
		registered[m.Name] = true
		if m.AllowsNamespace(c.Namespace) { // otherwise its credential cannot have put anything there
			states = append(states, m)
		}
	}
	var pending, unreachable []string
	for _, res := range r.teardownMembers(ctx, c, states, c.Spec.DeletionPolicy == v1alpha1.DeletionPolicyDelete) {
		switch {
		case res.unreachable:
			unreachable = append(unreachable, res.member)
		case res.err != nil:
			log.Error(res.err, "Deleting member objects", "member", res.member)
			pending = append(pending, res.member)
		case !res.done:
			pending = append(pending, res.member)
		}
	}
	log.V(1).Info("Deleting from members", "pending", pending, "unreachable", unreachable)
	waited := time.Since(c.DeletionTimestamp.Time)
	release := waited >= r.DeletionTimeout || c.Annotations[v1alpha1.ForceDetachAnnotation] == "true"
	if len(pending)+len(unreachable) > 0 && !release {
		after := min(10*time.Second, r.DeletionTimeout-waited)
		if len(pending) > 0 {
			after = min(2*time.Second, after)
		}
		return ctrl.Result{RequeueAfter: after}, nil
	}
	left := append(append([]string{}, unreachable...), pending...)
	if err := r.recordTeardowns(ctx, c, awayMembers(c, registered), left, waited); err != nil {
		return ctrl.Result{}, err
	}
	if c.Spec.DeletionPolicy == v1alpha1.DeletionPolicyDelete {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: credentialsSecretName(c)}}
		if err := r.Hub.Delete(ctx, secret); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
	}
	controllerutil.RemoveFinalizer(c, v1alpha1.Finalizer)
	// The members' finalizers: every member was torn down above, or its teardown recorded.
	c.Finalizers = slices.DeleteFunc(c.Finalizers, isMemberFinalizer)
	if err := r.Hub.Update(ctx, c); err != nil {
		return ctrl.Result{}, err
	}
	forgetPhase(client.ObjectKeyFromObject(c))
	forgetPrimaries(client.ObjectKeyFromObject(c))
	return ctrl.Result{}, nil
}

// awayMembers are the members whose finalizers the MySQLCluster carries (it may have objects there) that are not
// registered: nothing can be deleted there now.
func awayMembers(c *v1alpha1.MySQLCluster, registered map[string]bool) []string {
	var away []string
	for _, f := range c.Finalizers {
		if m, ok := strings.CutPrefix(f, memberFinalizerPrefix); ok && !registered[m] {
			away = append(away, m)
		}
	}
	return away
}

// recordTeardowns records, before the MySQLCluster is released, the teardown it still owes each member it could
// not finish in: away, the members not registered now (the MySQLCluster may have objects there, and is not held for
// them: a member may stay away for long), and left, the registered ones it gave up on (unreachable or failing at
// the deletion timeout, or force-detached). Each record is a ConfigMap in the manager's namespace (internal/
// leftovers); once its member is registered and reachable again, the deletion is finished there as the policy
// says, and the record deleted (pending.go). A record already there (a pass that failed after writing it) is
// fine. Events name the members.
func (r *MySQLClusterReconciler) recordTeardowns(ctx context.Context, c *v1alpha1.MySQLCluster, away, left []string,
	waited time.Duration) error {
	sort.Strings(away)
	sort.Strings(left)
	for _, m := range append(append([]string{}, away...), left...) {
		rec := leftovers.NewRecord(c, m).ConfigMap(r.Namespace)
		if err := r.Hub.Create(ctx, rec); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed to record the pending teardown of %s/%s in member %s: %w", c.Namespace, c.Name, m, err)
		}
	}
	log := ctrl.LoggerFrom(ctx)
	policy := leftovers.NewRecord(c, "").DeletionPolicy
	if len(away) > 0 {
		log.Info("Released MySQLCluster with its teardown pending in members not registered", "members", away)
		if r.Recorder != nil {
			r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, "TeardownPending", "Delete",
				"members %s are not registered: the deletion (deletionPolicy %s) is finished there once they are registered again",
				strings.Join(away, ", "), policy)
		}
	}
	if len(left) > 0 {
		log.Info("Released MySQLCluster with leftovers in members", "members", left)
		if r.Recorder != nil {
			r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, "LeftoversInUnreachableMembers", "Delete",
				"released after %s without finishing in members %s: their objects for this database remain there until "+
					"the deletion (deletionPolicy %s) is finished once they answer again",
				waited.Round(time.Second), strings.Join(left, ", "), policy)
		}
	}
	return nil
}

// markDeleting writes, once, that the MySQLCluster is being deleted: phase Deleting and Ready False.
func (r *MySQLClusterReconciler) markDeleting(ctx context.Context, c *v1alpha1.MySQLCluster) error {
	before := c.Status.DeepCopy()
	c.Status.Phase = v1alpha1.PhaseDeleting
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: v1alpha1.ReasonDeleting, Message: "deleting from members", ObservedGeneration: c.Generation})
	if equality.Semantic.DeepEqual(before, &c.Status) {
		return nil
	}
	if err := r.Hub.Status().Update(ctx, c); err != nil {
		return fmt.Errorf("failed to mark %s/%s as deleting: %w", c.Namespace, c.Name, err)
	}
	return nil
}
