package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// Sharded, the rows of status.members are written by several replicas at once, each its own members' rows, and
// the rest of the status by the leader. Each replica writes all its rows that changed in one JSON patch of the
// status subresource, every operation guarded by a test:
//
//   - a row already there is replaced whole, after a test that the entry at its index still names its member, so
//     a row never keeps a field its writer no longer sets (a lastError once the member converged, a plan once the
//     MySQLCluster is unpaused), whoever wrote the row before;
//   - a new row is appended; the API server refuses a second row of one member (status.members is a map list
//     keyed by name), so two writers cannot both add it;
//   - the leader's first status write holds an empty list of rows, before any replica may write one (they wait
//     for the finalizers it puts on afterwards), so that the rows are only ever replaced or appended; it is
//     written against the resourceVersion the leader read, so that it never empties a list appended to
//     meanwhile (a MySQLCluster whose finalizers were on already); without the list (a MySQLCluster whose leader
//     stopped between the two), the whole status is written once, after a test of the resourceVersion.
//
// A patch whose test fails changed nothing; it is computed again from the MySQLCluster as the API server has it
// now. Patches of different replicas touch different rows and never conflict otherwise: one write per replica
// and pass, however many members it works in. Server-side apply was the other candidate: it would have to write
// each row under a field manager of its own (a replica's manager would keep a dead replica's fields in the rows it
// took over), so one write per row, which at 30 members is 30 writes where this is at most one per replica.

// jsonPatchOp is one operation of a JSON patch (RFC 6902).
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// rowPatch is the JSON patch that writes rows into the status of c as read, and removes the rows of the members
// in drop. Its first test is of the UID: a MySQLCluster recreated under the same name is not written.
func rowPatch(c *v1alpha1.MySQLCluster, rows []v1alpha1.MemberStatus, drop []string) []jsonPatchOp {
	st := &c.Status
	uid := jsonPatchOp{Op: "test", Path: "/metadata/uid", Value: string(c.UID)}
	if st.Members == nil && len(rows) > 0 {
		whole := st.DeepCopy()
		whole.Members = rows
		return []jsonPatchOp{uid, {Op: "test", Path: "/metadata/resourceVersion", Value: c.ResourceVersion},
			{Op: "add", Path: "/status", Value: whole}}
	}
	ops := []jsonPatchOp{uid}
	for _, row := range rows {
		i := slices.IndexFunc(st.Members, func(m v1alpha1.MemberStatus) bool { return m.Name == row.Name })
		if i < 0 {
			ops = append(ops, jsonPatchOp{Op: "add", Path: "/status/members/-", Value: row})
			continue
		}
		path := fmt.Sprintf("/status/members/%d", i)
		ops = append(ops, jsonPatchOp{Op: "test", Path: path + "/name", Value: row.Name}, jsonPatchOp{Op: "replace", Path: path, Value: row})
	}
	// Removals last, from the highest index down, so that no removal moves an index another operation names.
	for i := len(st.Members) - 1; i >= 0; i-- {
		if slices.Contains(drop, st.Members[i].Name) {
			path := fmt.Sprintf("/status/members/%d", i)
			ops = append(ops, jsonPatchOp{Op: "test", Path: path + "/name", Value: st.Members[i].Name}, jsonPatchOp{Op: "remove", Path: path})
		}
	}
	return ops
}

// writeRows writes the rows that differ from the status as read (before) and removes the rows of the members in
// drop; nothing when nothing changed. c is the MySQLCluster as the pass read it.
func (r *MySQLClusterReconciler) writeRows(ctx context.Context, c *v1alpha1.MySQLCluster, before *v1alpha1.MySQLClusterStatus,
	rows []v1alpha1.MemberStatus, drop []string) error {
	var changed []v1alpha1.MemberStatus
	for _, row := range rows {
		if was := findRow(before, row.Name); was == nil || !equality.Semantic.DeepEqual(*was, row) {
			changed = append(changed, row)
		}
	}
	drop = slices.DeleteFunc(slices.Clone(drop), func(m string) bool { return findRow(before, m) == nil })
	if len(changed)+len(drop) == 0 || len(changed) == 0 && len(before.Members) == 0 {
		return nil
	}
	obj := c.DeepCopy()
	obj.Status = *before.DeepCopy()
	for attempt := 0; ; attempt++ {
		patch, err := json.Marshal(rowPatch(obj, changed, drop))
		if err != nil {
			return err
		}
		err = r.Hub.Status().Patch(ctx, obj, client.RawPatch(types.JSONPatchType, patch), client.FieldOwner(v1alpha1.FieldManager))
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return nil
		case !apierrors.IsInvalid(err) && !apierrors.IsConflict(err) || attempt == 2:
			return fmt.Errorf("failed to write the status rows of %s/%s: %w", c.Namespace, c.Name, err)
		}
		// A test failed or a row was added meanwhile: read the status as it is now and write against that.
		if err := r.reader().Get(ctx, client.ObjectKeyFromObject(c), obj); err != nil {
			return client.IgnoreNotFound(err)
		}
		if obj.UID != c.UID {
			return nil // another MySQLCluster of the same name
		}
	}
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

// summaryDiffers tells whether c's status differs from before in a field other than the rows: whether there is
// a summary to write.
func summaryDiffers(c *v1alpha1.MySQLCluster, before *v1alpha1.MySQLClusterStatus) bool {
	now, was := c.Status.DeepCopy(), before.DeepCopy()
	now.Members, was.Members = nil, nil
	return !equality.Semantic.DeepEqual(now, was)
}

// writeSummary writes the status fields other than the rows (the leader's part), with a merge patch of what
// changed since before: the rows are not in it, so it never touches another replica's writes.
func (r *MySQLClusterReconciler) writeSummary(ctx context.Context, c *v1alpha1.MySQLCluster, before *v1alpha1.MySQLClusterStatus) error {
	if !summaryDiffers(c, before) {
		return nil
	}
	base, want := c.DeepCopy(), c.DeepCopy()
	base.Status = *before.DeepCopy()
	base.Status.Members, want.Status.Members = nil, nil
	// The UID in the patch makes it fail on a MySQLCluster recreated under the same name (a UID cannot change).
	base.UID = ""
	patch := client.MergeFrom(base)
	if equality.Semantic.DeepEqual(*before, v1alpha1.MySQLClusterStatus{}) {
		// The first status write of all: it brings the empty list of rows the replicas append theirs to.
		data, err := patch.Data(want)
		if err != nil {
			return err
		}
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			return err
		}
		st, _ := doc["status"].(map[string]any)
		if st == nil {
			st = map[string]any{}
			doc["status"] = st
		}
		st["members"] = []any{}
		// Against the version read: if an owner appended its rows since (the finalizers were on already), a list
		// written over them would lose them. A conflict is retried with the rows.
		meta, _ := doc["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
			doc["metadata"] = meta
		}
		meta["resourceVersion"] = c.ResourceVersion
		if data, err = json.Marshal(doc); err != nil {
			return err
		}
		patch = client.RawPatch(types.MergePatchType, data)
	}
	if err := r.summaryWriter().Status().Patch(ctx, want, patch, client.FieldOwner(v1alpha1.FieldManager)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("failed to write the status of %s/%s: %w", c.Namespace, c.Name, err))
	}
	return nil
}
