package controllers

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

func TestRowPatch(t *testing.T) {
	row := func(name string, phase v1alpha1.Phase) v1alpha1.MemberStatus {
		return v1alpha1.MemberStatus{Name: name, Phase: phase}
	}
	uid := jsonPatchOp{Op: "test", Path: "/metadata/uid", Value: "u1"}
	for name, tc := range map[string]struct {
		rows []v1alpha1.MemberStatus
		have []v1alpha1.MemberStatus
		drop []string
		want []jsonPatchOp
	}{
		"no rows yet: the whole status, once, at this resourceVersion": {
			rows: []v1alpha1.MemberStatus{row("a", v1alpha1.PhaseReady)},
			want: []jsonPatchOp{uid, {Op: "test", Path: "/metadata/resourceVersion", Value: "7"},
				{Op: "add", Path: "/status", Value: &v1alpha1.MySQLClusterStatus{Phase: v1alpha1.PhaseProgressing,
					Members: []v1alpha1.MemberStatus{row("a", v1alpha1.PhaseReady)}}}},
		},
		"an empty list of rows (the leader's first write): appended to": {
			have: []v1alpha1.MemberStatus{},
			rows: []v1alpha1.MemberStatus{row("a", v1alpha1.PhaseReady)},
			want: []jsonPatchOp{uid, {Op: "add", Path: "/status/members/-", Value: row("a", v1alpha1.PhaseReady)}},
		},
		"a row there is replaced whole where its member still is; a new one appended": {
			have: []v1alpha1.MemberStatus{row("a", v1alpha1.PhaseProgressing), row("b", v1alpha1.PhaseProgressing)},
			rows: []v1alpha1.MemberStatus{row("b", v1alpha1.PhaseReady), row("c", v1alpha1.PhaseReady)},
			want: []jsonPatchOp{uid,
				{Op: "test", Path: "/status/members/1/name", Value: "b"}, {Op: "replace", Path: "/status/members/1", Value: row("b", v1alpha1.PhaseReady)},
				{Op: "add", Path: "/status/members/-", Value: row("c", v1alpha1.PhaseReady)}},
		},
		"rows go from the highest index down, each after a test": {
			have: []v1alpha1.MemberStatus{row("a", ""), row("b", ""), row("c", "")},
			drop: []string{"a", "c"},
			want: []jsonPatchOp{uid,
				{Op: "test", Path: "/status/members/2/name", Value: "c"}, {Op: "remove", Path: "/status/members/2"},
				{Op: "test", Path: "/status/members/0/name", Value: "a"}, {Op: "remove", Path: "/status/members/0"}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			c := &v1alpha1.MySQLCluster{}
			c.UID, c.ResourceVersion = "u1", "7"
			c.Status = v1alpha1.MySQLClusterStatus{Phase: v1alpha1.PhaseProgressing, Members: tc.have}
			NewWithT(t).Expect(rowPatch(c, tc.rows, tc.drop)).To(Equal(tc.want))
		})
	}
}
