package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// Replicas that stop working sharded (or a release before sharding) write the whole status with updates, and the
// API server records those fields as the updater's. A field an applier does not own stays when its apply leaves it
// out, so the rows and the summary that sharded replicas apply could never drop what an update wrote (a lastError
// once the member converged, a plan once the MySQLCluster is unpaused). When the leader finds status fields owned
// by updates, it hands them to the appliers first: each row's fields to its member's field manager, the rest to
// the summary's (mysqlfleet), as if they had applied them. Afterwards each drops what it no longer sets.

// adoptUpdatedStatus rewrites the MySQLCluster's managedFields so that no update owns a status field. c becomes
// the object as written; retry is true when it changed meanwhile and nothing was written.
func adoptUpdatedStatus(ctx context.Context, hub client.Client, c *v1alpha1.MySQLCluster) (retry bool, err error) {
	fields, changed, err := adoptedFields(c.ManagedFields)
	if err != nil || !changed {
		return false, err
	}
	patch, err := json.Marshal([]map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": c.ResourceVersion},
		{"op": "replace", "path": "/metadata/managedFields", "value": fields},
	})
	if err != nil {
		return false, err
	}
	if err := hub.Patch(ctx, c, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return true, nil // changed meanwhile: the next pass looks again
		}
		return false, fmt.Errorf("failed to hand the status of %s/%s over to its appliers: %w", c.Namespace, c.Name, err)
	}
	return false, nil
}

// adoptedFields is managedFields with every update's status fields moved into apply entries: a row's to its
// member's field manager, the rest to mysqlfleet. It tells whether anything moved.
func adoptedFields(entries []metav1.ManagedFieldsEntry) ([]metav1.ManagedFieldsEntry, bool, error) {
	moved := map[string]*fieldpath.Set{}
	var kept []metav1.ManagedFieldsEntry
	apiVersion := ""
	for _, e := range entries {
		if e.Subresource != "status" || e.Operation != metav1.ManagedFieldsOperationUpdate {
			kept = append(kept, e)
			continue
		}
		apiVersion = e.APIVersion
		set, err := fieldSet(e)
		if err != nil {
			return nil, false, err
		}
		for p := range set.All() {
			owner := v1alpha1.FieldManager
			if member, ok := rowOf(p); ok {
				owner = memberFieldManager(member)
			}
			if moved[owner] == nil {
				moved[owner] = &fieldpath.Set{}
			}
			moved[owner].Insert(p)
		}
	}
	if len(moved) == 0 {
		return entries, false, nil
	}
	for i := range kept {
		e := &kept[i]
		if set := moved[e.Manager]; set != nil && e.Subresource == "status" && e.Operation == metav1.ManagedFieldsOperationApply {
			own, err := fieldSet(*e)
			if err != nil {
				return nil, false, err
			}
			if err := setFields(e, own.Union(set)); err != nil {
				return nil, false, err
			}
			delete(moved, e.Manager)
		}
	}
	owners := make([]string, 0, len(moved))
	for owner := range moved {
		owners = append(owners, owner)
	}
	slices.Sort(owners)
	now := metav1.Now()
	for _, owner := range owners {
		e := metav1.ManagedFieldsEntry{Manager: owner, Operation: metav1.ManagedFieldsOperationApply, APIVersion: apiVersion,
			Time: &now, FieldsType: "FieldsV1", Subresource: "status"}
		if err := setFields(&e, moved[owner]); err != nil {
			return nil, false, err
		}
		kept = append(kept, e)
	}
	return kept, true, nil
}

// rowOf tells the member whose row of status.members a field path is in.
func rowOf(p fieldpath.Path) (string, bool) {
	if len(p) < 3 || p[0].FieldName == nil || *p[0].FieldName != "status" || p[1].FieldName == nil ||
		*p[1].FieldName != "members" || p[2].Key == nil {
		return "", false
	}
	for _, f := range *p[2].Key {
		if f.Name == "name" && f.Value.IsString() {
			return f.Value.AsString(), true
		}
	}
	return "", false
}

func fieldSet(e metav1.ManagedFieldsEntry) (*fieldpath.Set, error) {
	set := &fieldpath.Set{}
	if e.FieldsV1 == nil {
		return set, nil
	}
	if err := set.FromJSON(bytes.NewReader(e.FieldsV1.GetRawBytes())); err != nil {
		return nil, fmt.Errorf("reading the fields of %s: %w", e.Manager, err)
	}
	return set, nil
}

func setFields(e *metav1.ManagedFieldsEntry, set *fieldpath.Set) error {
	data, err := set.ToJSON()
	if err != nil {
		return err
	}
	e.FieldsV1 = metav1.NewFieldsV1(string(data))
	return nil
}
