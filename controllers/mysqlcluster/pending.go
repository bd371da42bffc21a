package mysqlcluster

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/fleet"
	"github.com/mysqlfleet/mysqlfleet/internal/leftovers"
)

// Pending teardowns finish the deletions that could not reach a member (recordTeardowns writes their records). A
// controller on the hub reconciles the records: in the replica that works in the record's member, once the member
// is registered, engaged and answering, it tears the deleted MySQLCluster down there by its UID, exactly as its
// deletion policy said, then deletes the record and says so in an Event on the member's registration Secret.
// Nothing polls: a record is looked at when it is written, at start-up, and whenever its member registers, answers
// again or changes (MemberChanged).

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;delete,namespace=mysqlfleet-system

// setupPendingTeardowns registers the controller of the pending teardown records; it runs on the leader only.
func (r *MySQLClusterReconciler) setupPendingTeardowns(mgr mcmanager.Manager) error {
	r.owedWake = make(chan event.GenericEvent, 1)
	isRecord := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == r.Namespace && o.GetLabels()[v1alpha1.PendingTeardownLabel] == "true"
	})
	return ctrl.NewControllerManagedBy(mgr.GetLocalManager()).
		Named("pending-teardown").
		For(&corev1.ConfigMap{}, builder.WithPredicates(isRecord)).
		WatchesRawSource(source.Channel(r.owedWake, handler.EnqueueRequestsFromMapFunc(r.recordsOfChangedMembers))).
		Complete(reconcile.Func(r.reconcilePendingTeardown))
}

// noteOwedMember has the records of a member that changed looked at again. It never blocks.
func (r *MySQLClusterReconciler) noteOwedMember(member string) {
	r.changedMu.Lock()
	if r.owedMembers == nil {
		r.owedMembers = map[string]bool{}
	}
	r.owedMembers[member] = true
	r.changedMu.Unlock()
	if r.owedWake == nil {
		return // not set up yet: the records are all looked at when the controller starts
	}
	select {
	case r.owedWake <- event.GenericEvent{Object: &corev1.ConfigMap{}}:
	default: // a wake-up is pending and will take this member
	}
}

// recordsOfChangedMembers are the records of the members changed since its last call.
func (r *MySQLClusterReconciler) recordsOfChangedMembers(ctx context.Context, _ client.Object) []reconcile.Request {
	r.changedMu.Lock()
	changed := r.owedMembers
	r.owedMembers = nil
	r.changedMu.Unlock()
	if len(changed) == 0 {
		return nil
	}
	var list corev1.ConfigMapList
	if err := r.Hub.List(ctx, &list, client.InNamespace(r.Namespace), leftovers.RecordLabels("")); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing pending teardowns after a member change")
		time.AfterFunc(time.Second, func() {
			for m := range changed {
				r.noteOwedMember(m)
			}
		})
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if changed[list.Items[i].Data[v1alpha1.PendingTeardownMemberKey]] {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// reconcilePendingTeardown finishes one pending teardown if its member can be worked in now.
func (r *MySQLClusterReconciler) reconcilePendingTeardown(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var cm corev1.ConfigMap
	if err := r.Hub.Get(ctx, req.NamespacedName, &cm); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !cm.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil
	}
	rec, err := leftovers.FromConfigMap(&cm)
	if err != nil {
		// A teardown is done exactly as recorded or not at all; the record stays for a person to look at.
		log.Error(err, "Ignoring a pending teardown record that cannot be read")
		return reconcile.Result{}, nil
	}
	log = log.WithValues("member", rec.Member, "cluster", klog.KRef(rec.Namespace, rec.Name), "uid", rec.UID)
	ctx = ctrl.LoggerInto(ctx, log)
	var st *fleet.State
	for _, m := range r.Fleet.Members() {
		if m.Name == rec.Member {
			st = &m
			break
		}
	}
	if st == nil {
		return reconcile.Result{}, nil // its registration brings it back
	}
	if adopter, err := r.adopterOf(ctx, rec); err != nil {
		return reconcile.Result{}, err
	} else if adopter != "" {
		// Adopting is the later and explicit word: the adopter takes over what it finds, nothing is deleted.
		return reconcile.Result{}, r.closeRecord(ctx, &cm, rec, "PendingTeardownCancelled",
			fmt.Sprintf("MySQLCluster %s adopts uid %s: the teardown of %s/%s there is cancelled, its objects are left to the adopter",
				adopter, rec.UID, rec.Namespace, rec.Name))
	}
	if !st.AllowsNamespace(rec.Namespace) {
		// Its credential cannot have put anything there, and cannot look.
		return reconcile.Result{}, r.closeRecord(ctx, &cm, rec, "PendingTeardownFinished",
			fmt.Sprintf("nothing of MySQLCluster %s/%s (uid %s) can be there: the registration does not allow namespace %s",
				rec.Namespace, rec.Name, rec.UID, rec.Namespace))
	}
	if st.Err != nil || !st.Engaged {
		log.V(4).Info("Member not usable; the pending teardown waits for it")
		return reconcile.Result{}, nil // answering again is a member change, which brings it back
	}
	res := r.teardownMembers(ctx, rec.Cluster(), []fleet.State{*st}, rec.DeletionPolicy == v1alpha1.DeletionPolicyDelete)[0]
	switch {
	case res.unreachable:
		log.V(1).Info("Member unreachable; the pending teardown waits for it", "err", res.err)
		return reconcile.Result{}, nil
	case res.err != nil:
		log.Error(res.err, "Finishing a pending teardown")
		return reconcile.Result{RequeueAfter: 2 * time.Second}, nil
	case !res.done:
		return reconcile.Result{RequeueAfter: 2 * time.Second}, nil // deletions under way; volumes wait for the StatefulSet
	}
	return reconcile.Result{}, r.closeRecord(ctx, &cm, rec, "PendingTeardownFinished",
		fmt.Sprintf("finished the deletion of MySQLCluster %s/%s (uid %s) under deletionPolicy %s: %s",
			rec.Namespace, rec.Name, rec.UID, rec.DeletionPolicy, policyOutcome(rec.DeletionPolicy)))
}

func policyOutcome(p v1alpha1.DeletionPolicy) string {
	if p == v1alpha1.DeletionPolicyDelete {
		return "everything carrying its UID is removed, volumes included"
	}
	return "its workloads, Services, configuration and credentials are removed, its volumes kept"
}

// adopterOf names the MySQLCluster, if any, whose adopt annotation names the record's UID.
func (r *MySQLClusterReconciler) adopterOf(ctx context.Context, rec leftovers.Record) (string, error) {
	var list v1alpha1.MySQLClusterList
	if err := r.Hub.List(ctx, &list); err != nil {
		return "", err
	}
	for i := range list.Items {
		if c := &list.Items[i]; adoptSet(c)[string(rec.UID)] {
			return c.Namespace + "/" + c.Name, nil
		}
	}
	return "", nil
}

// closeRecord deletes a record whose teardown is over (its UID as precondition: a record written again since is
// another's), then says so in an Event on the member's registration Secret, which outlives the MySQLCluster.
func (r *MySQLClusterReconciler) closeRecord(ctx context.Context, cm *corev1.ConfigMap, rec leftovers.Record, reason, note string) error {
	uid := cm.UID
	if err := r.Hub.Delete(ctx, cm, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to delete pending teardown record %s: %w", cm.Name, err)
	}
	ctrl.LoggerFrom(ctx).Info("Pending teardown over", "reason", reason)
	var secret corev1.Secret
	if r.Recorder != nil && r.Hub.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: rec.Member}, &secret) == nil {
		r.Recorder.Eventf(&secret, nil, corev1.EventTypeNormal, reason, "Delete", "%s", note)
	}
	return nil
}
