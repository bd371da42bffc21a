package mysqlcluster

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// TestJudgeReadBack: what a member's read-back means, decided without a request. Ready takes every Pod ready and
// a replicating set; short of that the member is on its way, unless only a person can mend it.
func TestJudgeReadBack(t *testing.T) {
	c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "c", Generation: 3},
		Spec: v1alpha1.MySQLClusterSpec{Replicas: 2}}
	sts := func(ready int32) *appsv1.StatefulSet {
		return &appsv1.StatefulSet{Status: appsv1.StatefulSetStatus{ReadyReplicas: ready, UpdatedReplicas: ready}}
	}
	replicating := &v1alpha1.ReplicationReport{Primary: "c-0", Decision: v1alpha1.ReplicationDecision{Kind: "None"},
		Instances: []v1alpha1.ReplicationInstance{{Pod: "c-0", Role: v1alpha1.ReplicationRolePrimary},
			{Pod: "c-1", Role: v1alpha1.ReplicationRoleReplica, InSync: true}}}
	errant := &v1alpha1.ReplicationReport{Primary: "c-0", Decision: v1alpha1.ReplicationDecision{Kind: "None"},
		Instances: []v1alpha1.ReplicationInstance{{Pod: "c-0", Role: v1alpha1.ReplicationRolePrimary},
			{Pod: "c-1", Role: v1alpha1.ReplicationRoleErrant}}}
	restoreFailed := &v1alpha1.ReplicationReport{Decision: v1alpha1.ReplicationDecision{Kind: "Restoring"},
		Restore: &v1alpha1.MemberRestore{Phase: v1alpha1.RestoreFailed, Reason: "no such backup"}}
	for name, tc := range map[string]struct {
		rd        memberReadout
		hold      *scaleDownHold
		phase     v1alpha1.Phase
		ready     string // the Ready condition's reason
		podsReady metav1.ConditionStatus
		lastError string
	}{
		"serving":            {rd: memberReadout{sts: sts(2), report: replicating}, phase: v1alpha1.PhaseReady, ready: v1alpha1.ReasonServing, podsReady: metav1.ConditionTrue},
		"Pods not ready":     {rd: memberReadout{sts: sts(1), report: replicating}, phase: v1alpha1.PhaseProgressing, ready: v1alpha1.ReasonPodsNotReady, podsReady: metav1.ConditionFalse},
		"no StatefulSet":     {rd: memberReadout{}, phase: v1alpha1.PhaseProgressing, ready: v1alpha1.ReasonPodsNotReady, podsReady: metav1.ConditionFalse},
		"a read failed":      {rd: memberReadout{sts: sts(2), report: replicating, errs: []string{"no answer"}}, phase: v1alpha1.PhaseProgressing, ready: v1alpha1.ReasonPodsNotReady, podsReady: metav1.ConditionFalse, lastError: "reading back: no answer"},
		"no report":          {rd: memberReadout{sts: sts(2)}, phase: v1alpha1.PhaseProgressing, ready: v1alpha1.ReasonNoReport, podsReady: metav1.ConditionTrue},
		"scale-down held":    {rd: memberReadout{sts: sts(3), report: replicating}, hold: &scaleDownHold{pods: 3, message: "held"}, phase: v1alpha1.PhaseProgressing, ready: v1alpha1.ReasonScaleDownPending, podsReady: metav1.ConditionTrue},
		"errant replica":     {rd: memberReadout{sts: sts(2), report: errant}, phase: v1alpha1.PhaseDegraded, ready: v1alpha1.ReasonErrantReplicas, podsReady: metav1.ConditionTrue, lastError: "c-1 hold transactions"},
		"the restore failed": {rd: memberReadout{sts: sts(2), report: restoreFailed}, phase: v1alpha1.PhaseDegraded, ready: v1alpha1.ReasonRestoring, podsReady: metav1.ConditionTrue, lastError: "the restore failed: no such backup"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			st := v1alpha1.MemberStatus{Name: "m"}
			rd := tc.rd
			rd.counts(&st)
			rd.judge(c, &st, memberConditions{st: &st, gen: c.Generation}, tc.hold, metav1.Now())
			g.Expect(st.Phase).To(Equal(tc.phase))
			ready := meta.FindStatusCondition(st.Conditions, v1alpha1.MemberConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Reason).To(Equal(tc.ready))
			g.Expect(ready.Status == metav1.ConditionTrue).To(Equal(tc.phase == v1alpha1.PhaseReady))
			g.Expect(ready.ObservedGeneration).To(Equal(c.Generation))
			g.Expect(meta.FindStatusCondition(st.Conditions, v1alpha1.MemberConditionPodsReady).Status).To(Equal(tc.podsReady))
			if tc.lastError == "" {
				g.Expect(st.LastError).To(BeEmpty())
			} else {
				g.Expect(st.LastError).To(ContainSubstring(tc.lastError))
			}
		})
	}
}
