package controllers

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// ForceDetachAnnotation on a MySQLCluster being deleted releases it at once, without waiting for unreachable
// members; their objects stay where they are, and are listed in an Event.
const ForceDetachAnnotation = "mysqlfleet.io/force-detach"

// teardown removes one MySQLCluster's objects from one member, found by the labels naming it. Workloads,
// Services, configuration and credentials always go; PersistentVolumeClaims (data and backups) only with
// deletionPolicy Delete. The Namespace is never deleted: other databases or the retained volumes live there.
// It returns whether nothing is left to remove.
func teardown(ctx context.Context, mc client.Client, c *v1alpha1.MySQLCluster) (bool, error) {
	sel := client.MatchingLabels{v1alpha1.ClusterNameLabel: c.Name, v1alpha1.ClusterNamespaceLabel: c.Namespace,
		v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}
	lists := []client.ObjectList{
		&batchv1.CronJobList{}, &appsv1.StatefulSetList{}, &policyv1.PodDisruptionBudgetList{},
		&corev1.ServiceList{}, &corev1.ConfigMapList{}, &corev1.SecretList{},
	}
	if c.Spec.DeletionPolicy == v1alpha1.DeletionPolicyDelete {
		lists = append(lists, &corev1.PersistentVolumeClaimList{})
	}
	done := true
	var errs []error
	for _, list := range lists {
		if err := mc.List(ctx, list, client.InNamespace(c.Namespace), sel); err != nil {
			errs = append(errs, err)
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
			// StatefulSet's Pods (its own retention policy keeps or deletes the volumes).
			if err := mc.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil && !apierrors.IsNotFound(err) {
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

// reconcileDeparted removes this MySQLCluster's objects from engaged members that are no longer placed, per
// deletionPolicy. A member whose registration was deleted cannot be reached any more, and keeps its objects.
func (r *MySQLClusterReconciler) reconcileDeparted(ctx context.Context, s *scope) {
	if s.cluster.Spec.Paused || s.placementErr != nil {
		return
	}
	placed := map[string]bool{}
	for _, m := range s.placed {
		placed[m.Name] = true
	}
	for _, m := range r.Fleet.Members() {
		if placed[m.Name] || !m.Engaged || m.Err != nil || !m.AllowsNamespace(s.cluster.Namespace) {
			continue
		}
		cl, err := r.Fleet.Get(ctx, multicluster.ClusterName(m.Name))
		if err != nil {
			continue
		}
		mctx, cancel := context.WithTimeout(ctx, r.MemberTimeout)
		done, err := teardown(mctx, cl.GetClient(), s.cluster)
		cancel()
		if err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Removing objects from a member that left the placement", "member", m.Name)
		}
		if !done {
			s.retry = true
		}
	}
}

// reconcileDelete tears the MySQLCluster down in every engaged member, then releases the finalizer. Members
// that cannot be reached hold the finalizer for at most DeletionTimeout (or until the force-detach annotation
// is set); then the MySQLCluster is released and what was left behind is named in an Event and a log line.
// Nothing is deleted there later: a recreated MySQLCluster of the same name adopts those objects.
func (r *MySQLClusterReconciler) reconcileDelete(ctx context.Context, c *v1alpha1.MySQLCluster) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if !controllerutil.ContainsFinalizer(c, v1alpha1.Finalizer) {
		return ctrl.Result{}, nil
	}
	var pending, unreachable []string
	for _, m := range r.Fleet.Members() {
		if !m.AllowsNamespace(c.Namespace) {
			continue // its credential cannot have put anything there
		}
		if !m.Engaged || m.Err != nil {
			if m.Err != nil {
				unreachable = append(unreachable, m.Name)
			}
			continue
		}
		cl, err := r.Fleet.Get(ctx, multicluster.ClusterName(m.Name))
		if err != nil {
			unreachable = append(unreachable, m.Name)
			continue
		}
		mctx, cancel := context.WithTimeout(ctx, r.MemberTimeout)
		done, err := teardown(mctx, cl.GetClient(), c)
		cancel()
		switch {
		case err != nil && isUnreachable(err):
			unreachable = append(unreachable, m.Name)
		case err != nil:
			log.Error(err, "Deleting member objects", "member", m.Name)
			pending = append(pending, m.Name)
		case !done:
			pending = append(pending, m.Name)
		}
	}
	log.V(1).Info("Deleting from members", "pending", pending, "unreachable", unreachable)
	if len(pending) > 0 {
		return ctrl.Result{RequeueAfter: 2 * time.Second}, nil
	}
	waited := time.Since(c.DeletionTimestamp.Time)
	if len(unreachable) > 0 && waited < r.DeletionTimeout && c.Annotations[ForceDetachAnnotation] != "true" {
		return ctrl.Result{RequeueAfter: min(10*time.Second, r.DeletionTimeout-waited)}, nil
	}
	if len(unreachable) > 0 {
		sort.Strings(unreachable)
		msg := fmt.Sprintf("released after %s without reaching members %s: their objects for this database remain there",
			waited.Round(time.Second), strings.Join(unreachable, ", "))
		log.Info("Released MySQLCluster with leftovers in unreachable members", "members", unreachable)
		if r.Recorder != nil {
			r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, "LeftoversInUnreachableMembers", "Delete", "%s", msg)
		}
	}
	if c.Spec.DeletionPolicy == v1alpha1.DeletionPolicyDelete {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: credentialsSecretName(c)}}
		if err := r.Hub.Delete(ctx, secret); err != nil && !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
	}
	controllerutil.RemoveFinalizer(c, v1alpha1.Finalizer)
	return ctrl.Result{}, r.Hub.Update(ctx, c)
}
