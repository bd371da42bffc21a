package mysqlcluster

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/fleet"
)

func TestAdoptSetIgnoresBlanksAndItsOwnUID(t *testing.T) {
	g := NewWithT(t)
	c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{UID: "me",
		Annotations: map[string]string{v1alpha1.AdoptAnnotation: " old , ,me,pvc-1"}}}
	g.Expect(adoptSet(c)).To(Equal(map[string]bool{"old": true, "pvc-1": true}))
}

func TestConflictReason(t *testing.T) {
	g := NewWithT(t)
	refs := []v1alpha1.ObjectRef{{Kind: "Service", Name: "db"}, {Kind: "PersistentVolumeClaim", Name: "data-db-0"}}
	g.Expect(conflictReason(refs)).To(Equal(v1alpha1.ReasonVolumeConflict))
	g.Expect(conflictReason(refs[:1])).To(Equal(v1alpha1.ReasonObjectConflict))
}

func TestConflictMessageSaysHowToAdopt(t *testing.T) {
	g := NewWithT(t)
	msg := conflictMessage([]v1alpha1.ObjectRef{
		{Kind: "PersistentVolumeClaim", Name: "data-db-0", UID: "p0", OwnerUID: "old"},
		{Kind: "PersistentVolumeClaim", Name: "data-db-1", UID: "p1"},
	})
	g.Expect(msg).To(ContainSubstring("data-db-0 exists and belongs to MySQLCluster uid old"))
	g.Expect(msg).To(ContainSubstring("data-db-1 exists and was not created by mysqlfleet (uid p1)"))
	g.Expect(msg).To(HaveSuffix(v1alpha1.AdoptAnnotation + "=old,p1"))
}

func applied(reason string) v1alpha1.MemberStatus {
	st := v1alpha1.MemberStatus{Phase: v1alpha1.PhaseDegraded}
	status := metav1.ConditionFalse
	if reason == v1alpha1.ReasonApplied {
		st.Phase, status = v1alpha1.PhaseReady, metav1.ConditionTrue
	}
	st.Conditions = []metav1.Condition{{Type: v1alpha1.MemberConditionApplied, Status: status, Reason: reason}}
	return st
}

// Permanent refusals settle a generation and are not retried on a timer; transient failures do neither.
func TestSettledAndRetry(t *testing.T) {
	tests := []struct {
		reason         string
		settled, retry bool
	}{
		{v1alpha1.ReasonApplied, true, false},
		{v1alpha1.ReasonPaused, true, false},
		{v1alpha1.ReasonInvalidSpec, true, false},
		{v1alpha1.ReasonInvalidSchedule, true, false},
		{v1alpha1.ReasonNamespaceNotAllowed, true, false},
		{v1alpha1.ReasonRegistrationRefused, true, false},
		{v1alpha1.ReasonVolumeConflict, true, true},
		{v1alpha1.ReasonObjectConflict, true, true},
		{v1alpha1.ReasonApplyFailed, false, true},
		{v1alpha1.ReasonConverging, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			st := applied(tt.reason)
			if tt.reason == v1alpha1.ReasonPaused || tt.reason == v1alpha1.ReasonConverging {
				st.Phase = v1alpha1.PhaseProgressing
			}
			g.Expect(settled(st)).To(Equal(tt.settled))
			g.Expect(needsRetry(st, fleet.State{})).To(Equal(tt.retry))
		})
	}
	g := NewWithT(t)
	unreachable := v1alpha1.MemberStatus{Phase: v1alpha1.PhaseUnreachable}
	g.Expect(settled(unreachable)).To(BeFalse())
	g.Expect(needsRetry(unreachable, fleet.State{})).To(BeTrue(), "a failed request the registry does not know of yet")
	g.Expect(needsRetry(unreachable, fleet.State{Err: fleet.ErrUnreachable})).To(BeFalse(), "its health probe requeues")
}
