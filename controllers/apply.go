package controllers

import (
	"context"
	"fmt"
	"reflect"

	"golang.org/x/sync/singleflight"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// Actions an apply takes, as reported in status.members[].plan while paused.
const (
	ActionCreate    = "Create"
	ActionUpdate    = "Update"
	ActionUnchanged = "Unchanged"
	// ActionAdopt takes over an object the adopt annotation names.
	ActionAdopt = "Adopt"
	// ActionConflict is an object with the needed name that belongs to someone else; nothing is written.
	ActionConflict = "Conflict"
)

// applier writes the rendered objects into one member with server-side apply, under one field manager. It
// first reads the object from the member's cache: when its version is one already verified (or written) for the
// same desired object, it writes nothing. Otherwise it reads the object from the member's API server, the
// cache keeping no managedFields and holding only what mysqlfleet labels, and checks that it is this
// MySQLCluster's (its UID label): an object someone else owns is a conflict and is not written. When the fields
// mysqlfleet owns already equal the desired configuration, it writes nothing either. So a converged fleet makes no
// API requests.
type applier struct {
	// c reads from the member's cache and writes to the member; reader reads from its API server.
	c      client.Client
	reader client.Reader
	// dryRun computes the action without writing (paused MySQLClusters).
	dryRun bool
	member string
	// uid is the MySQLCluster's; adopt holds the UIDs whose objects it may take over (see adoptSet).
	uid   types.UID
	adopt map[string]bool
	// echoes records each write so that its watch event is not taken for a change.
	echoes *echoes
	// verified lets a pass skip the Extract of an object whose version already held what it wants.
	verified *verified
	// shared lets concurrent passes that want the same object in the same state share one apply: a Namespace
	// is wanted by every MySQLCluster in it, and many of them are reconciled at once.
	shared *singleflight.Group
}

// outcome is what one apply did (or, in dry run, would do); adopted names the object taken over and its former
// owner.
type outcome struct {
	action  string
	adopted *v1alpha1.ObjectRef
}

// apply applies one object and returns its kind, name and the action taken (or, in dry run, that would be).
func (a applier) apply(ctx context.Context, obj runtime.ApplyConfiguration) (kind, name string, action outcome, err error) {
	switch ac := obj.(type) {
	case *corev1ac.NamespaceApplyConfiguration:
		action, err = applyTyped(ctx, a, ac, &corev1.Namespace{}, *ac.Name, "", corev1ac.ExtractNamespace)
		return "Namespace", *ac.Name, action, err
	case *corev1ac.SecretApplyConfiguration:
		action, err = applyTyped(ctx, a, ac, &corev1.Secret{}, *ac.Name, *ac.Namespace, corev1ac.ExtractSecret)
		return "Secret", *ac.Name, action, err
	case *corev1ac.ConfigMapApplyConfiguration:
		action, err = applyTyped(ctx, a, ac, &corev1.ConfigMap{}, *ac.Name, *ac.Namespace, corev1ac.ExtractConfigMap)
		return "ConfigMap", *ac.Name, action, err
	case *corev1ac.ServiceApplyConfiguration:
		action, err = applyTyped(ctx, a, ac, &corev1.Service{}, *ac.Name, *ac.Namespace, corev1ac.ExtractService)
		return "Service", *ac.Name, action, err
	case *corev1ac.PersistentVolumeClaimApplyConfiguration:
		action, err = applyTyped(ctx, a, ac, &corev1.PersistentVolumeClaim{}, *ac.Name, *ac.Namespace, corev1ac.ExtractPersistentVolumeClaim)
		return "PersistentVolumeClaim", *ac.Name, action, err
	case *appsv1ac.StatefulSetApplyConfiguration:
		action, err = applyTyped(ctx, a, ac, &appsv1.StatefulSet{}, *ac.Name, *ac.Namespace, appsv1ac.ExtractStatefulSet)
		return "StatefulSet", *ac.Name, action, err
	case *policyv1ac.PodDisruptionBudgetApplyConfiguration:
		action, err = applyTyped(ctx, a, ac, &policyv1.PodDisruptionBudget{}, *ac.Name, *ac.Namespace, policyv1ac.ExtractPodDisruptionBudget)
		return "PodDisruptionBudget", *ac.Name, action, err
	case *batchv1ac.CronJobApplyConfiguration:
		action, err = applyTyped(ctx, a, ac, &batchv1.CronJob{}, *ac.Name, *ac.Namespace, batchv1ac.ExtractCronJob)
		return "CronJob", *ac.Name, action, err
	}
	return "", "", outcome{}, fmt.Errorf("no apply support for %T", obj)
}

func applyTyped[O client.Object, AC runtime.ApplyConfiguration](ctx context.Context, a applier, desired AC, live O,
	name, namespace string, extract func(O, string) (AC, error)) (outcome, error) {
	key := objectKey{a.member, reflect.TypeOf(live).Elem().Name(), namespace, name}
	digest := digestOf(desired)
	if a.dryRun || digest == 0 {
		return applyOne(ctx, a, desired, live, key, digest, extract)
	}
	out, err, _ := a.shared.Do(fmt.Sprintf("%s/%s/%s/%s/%x", key.member, key.kind, key.namespace, key.name, digest), func() (any, error) {
		return applyOne(ctx, a, desired, live, key, digest, extract)
	})
	return out.(outcome), err
}

// applyOne is applyTyped for one caller: read the object, check whose it is, compare, apply if needed.
func applyOne[O client.Object, AC runtime.ApplyConfiguration](ctx context.Context, a applier, desired AC, live O,
	key objectKey, digest uint64, extract func(O, string) (AC, error)) (outcome, error) {
	nn := client.ObjectKey{Namespace: key.namespace, Name: key.name}
	err := a.c.Get(ctx, nn, live)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return outcome{}, err
	case err == nil && a.verified.holds(key, live.GetResourceVersion(), digest):
		return outcome{action: ActionUnchanged}, nil
	}
	// The cache keeps no managedFields, so which fields are ours only the object itself says; and it holds only
	// objects labelled as mysqlfleet's, so an object someone else made with this name is absent from it, and an
	// apply would take it over. Read it from the API server either way.
	out := outcome{action: ActionCreate}
	err = a.reader.Get(ctx, nn, live)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return outcome{}, err
	default:
		if key.kind != "Namespace" { // shared by every MySQLCluster of a namespace; never deleted
			from, err := claim(live, key.kind, a.uid, a.adopt)
			if err != nil {
				return outcome{action: ActionConflict}, err
			}
			out.adopted = from
		}
		owned, err := extract(live, v1alpha1.FieldManager)
		if err != nil {
			return outcome{}, err
		}
		if out.adopted == nil && equality.Semantic.DeepEqual(owned, desired) {
			a.verified.set(key, live.GetResourceVersion(), digest)
			return outcome{action: ActionUnchanged}, nil
		}
		out.action = ActionUpdate
		if out.adopted != nil {
			out.action = ActionAdopt
		}
	}
	if a.dryRun {
		return out, nil
	}
	a.echoes.begin(key)
	err = a.c.Apply(ctx, desired, client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership)
	written := ""
	if err == nil {
		written = resourceVersionOf(desired) // the answer was decoded into desired
	}
	a.echoes.end(key, written)
	// What this apply wrote is what was wanted: the next pass needs no Extract while it stays.
	a.verified.set(key, written, digest)
	return out, err
}
