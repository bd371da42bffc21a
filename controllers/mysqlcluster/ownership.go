package mysqlcluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/apply"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// Ownership in members is by UID. Every object mysqlfleet writes carries the hub object's UID label
// (mysqlfleet.io/cluster-uid), and the claims of the StatefulSet are born with it. An object with a name this
// MySQLCluster needs but another UID (a predecessor of the same name that kept its volumes, or a database force-
// detached from an unreachable member) or none (made by hand) is a conflict: mysqlfleet does not write over it,
// does not let the StatefulSet use it, and never deletes it. The adopt annotation takes such objects over
// explicitly, by the UID of their owner or their own.

// adoptSet reads the adopt annotation: the UIDs whose objects this MySQLCluster may take over.
func adoptSet(c *v1alpha1.MySQLCluster) map[string]bool {
	set := map[string]bool{}
	for _, uid := range strings.Split(c.Annotations[v1alpha1.AdoptAnnotation], ",") {
		if uid = strings.TrimSpace(uid); uid != "" && uid != string(c.UID) {
			set[uid] = true
		}
	}
	return set
}

// conflictReason is VolumeConflict when a volume is among the conflicts, ObjectConflict otherwise.
func conflictReason(refs []v1alpha1.ObjectRef) string {
	for _, r := range refs {
		if r.Kind == "PersistentVolumeClaim" {
			return v1alpha1.ReasonVolumeConflict
		}
	}
	return v1alpha1.ReasonObjectConflict
}

// conflictMessage names the conflicting objects and what adopts them.
func conflictMessage(refs []v1alpha1.ObjectRef) string {
	parts := make([]string, 0, len(refs))
	uids := map[string]bool{}
	for _, r := range refs {
		parts = append(parts, (&apply.ConflictError{Ref: r}).Error())
		if r.OwnerUID != "" {
			uids[r.OwnerUID] = true
		} else {
			uids[r.UID] = true
		}
	}
	list := make([]string, 0, len(uids))
	for u := range uids {
		list = append(list, u)
	}
	sort.Strings(list)
	return fmt.Sprintf("%s; mysqlfleet neither uses nor deletes them: remove them, or adopt them with the annotation %s=%s",
		strings.Join(parts, ", "), v1alpha1.AdoptAnnotation, strings.Join(list, ","))
}

// reconcileClaims checks the names of the data claims the StatefulSet's Pods will use before the StatefulSet is
// created or scaled: the StatefulSet controller binds an existing claim by name, whoever made it. Claims this
// MySQLCluster owns pass; claims the adopt annotation names are relabelled as its own (and the adoption
// returned); any other is a conflict. A converged member costs only cache reads: its claims are all cached with
// this UID. A claim not in the cache (which holds only what mysqlfleet labels) is looked up on the API server,
// unless the StatefulSet is this MySQLCluster's and already as large as the spec asks: then nothing is created
// or scaled, and its claims were checked when it was.
func reconcileClaims(ctx context.Context, a apply.Applier, c *v1alpha1.MySQLCluster) (adopted []v1alpha1.ObjectRef, err error) {
	var sts appsv1.StatefulSet
	if err := a.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.StatefulSetName()}, &sts); err == nil &&
		sts.Labels[v1alpha1.ClusterUIDLabel] == string(c.UID) && ptr.Deref(sts.Spec.Replicas, 1) >= c.Spec.Replicas {
		return nil, nil
	}
	var errs []error
	for _, name := range render.DataVolumeClaimNames(c) {
		key := client.ObjectKey{Namespace: c.Namespace, Name: name}
		var pvc corev1.PersistentVolumeClaim
		err := a.Client.Get(ctx, key, &pvc)
		if err == nil && pvc.Labels[v1alpha1.ClusterUIDLabel] == string(c.UID) {
			continue
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return adopted, err
		}
		if err := a.Reader.Get(ctx, key, &pvc, apply.FromWatchCache); apierrors.IsNotFound(err) {
			continue
		} else if err != nil {
			return adopted, fmt.Errorf("failed to read PersistentVolumeClaim %s: %w", name, err)
		}
		from, err := apply.Claim(&pvc, "PersistentVolumeClaim", c.UID, a.Adopt)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if from == nil || a.DryRun {
			continue
		}
		if err := adoptClaim(ctx, a.Client, &pvc, c, a.Member, from.OwnerUID); err != nil {
			return adopted, err
		}
		adopted = append(adopted, *from)
	}
	return adopted, errors.Join(errs...)
}

// adoptClaim relabels a claim as this MySQLCluster's and records whose it was. It is a merge patch with the
// claim's resourceVersion, so that a claim changed since it was read is not taken; and not an apply, so that the
// labels do not join the fields mysqlfleet applies to claims (their size) and vanish with the next apply.
func adoptClaim(ctx context.Context, mc client.Client, pvc *corev1.PersistentVolumeClaim, c *v1alpha1.MySQLCluster,
	member, from string) error {
	before := pvc.DeepCopy()
	if pvc.Labels == nil {
		pvc.Labels = map[string]string{}
	}
	for k, v := range render.DataVolumeLabels(c, member) {
		pvc.Labels[k] = v
	}
	if pvc.Annotations == nil {
		pvc.Annotations = map[string]string{}
	}
	pvc.Annotations[v1alpha1.AdoptedFromAnnotation] = from
	patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	if err := mc.Patch(ctx, pvc, patch, client.FieldOwner(v1alpha1.FieldManager)); err != nil {
		return fmt.Errorf("failed to adopt PersistentVolumeClaim %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	return nil
}

// mergeRefs adds refs to a list, once each (by kind, name and UID).
func mergeRefs(list []v1alpha1.ObjectRef, refs ...v1alpha1.ObjectRef) []v1alpha1.ObjectRef {
	for _, r := range refs {
		dup := false
		for _, have := range list {
			if have.Kind == r.Kind && have.Name == r.Name && have.UID == r.UID {
				dup = true
				break
			}
		}
		if !dup {
			list = append(list, r)
		}
	}
	return list
}
