package controllers

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/fleet"
)

func pvcOf(uid, owner string) *corev1.PersistentVolumeClaim {
	p := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-db-0", UID: types.UID("pvc-" + uid)}}
	if owner != "" {
		p.Labels = map[string]string{v1alpha1.ClusterUIDLabel: owner}
	}
	return p
}

func TestClaimDecidesByUIDOnly(t *testing.T) {
	tests := []struct {
		name     string
		owner    string
		adopt    map[string]bool
		conflict bool
		adopted  bool
	}{
		{name: "own", owner: "me"},
		{name: "predecessor", owner: "old", conflict: true},
		{name: "hand made", owner: "", conflict: true},
		{name: "predecessor adopted by its UID", owner: "old", adopt: map[string]bool{"old": true}, adopted: true},
		{name: "hand made adopted by its own UID", owner: "", adopt: map[string]bool{"pvc-1": true}, adopted: true},
		{name: "an empty owner is never adopted by an empty UID", owner: "", adopt: map[string]bool{"": true}, conflict: true},
		{name: "another UID adopts nothing", owner: "old", adopt: map[string]bool{"other": true}, conflict: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			from, err := claim(pvcOf("1", tt.owner), "PersistentVolumeClaim", "me", tt.adopt)
			if tt.conflict {
				var ce *conflictError
				g.Expect(errors.As(err, &ce)).To(BeTrue())
				g.Expect(ce.ref).To(Equal(v1alpha1.ObjectRef{Kind: "PersistentVolumeClaim", Name: "data-db-0", UID: "pvc-1", OwnerUID: tt.owner}))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(from != nil).To(Equal(tt.adopted))
		})
	}
}

func TestAdoptSetIgnoresBlanksAndItsOwnUID(t *testing.T) {
	g := NewWithT(t)
	c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{UID: "me",
		Annotations: map[string]string{v1alpha1.AdoptAnnotation: " old , ,me,pvc-1"}}}
	g.Expect(adoptSet(c)).To(Equal(map[string]bool{"old": true, "pvc-1": true}))
}

func TestConflictsInFindsEveryConflictOfAJoinedTree(t *testing.T) {
	g := NewWithT(t)
	a := &conflictError{ref: v1alpha1.ObjectRef{Kind: "Service", Name: "db"}}
	b := &conflictError{ref: v1alpha1.ObjectRef{Kind: "PersistentVolumeClaim", Name: "data-db-0"}}
	other := errors.New("boom")
	err := errors.Join(fmt.Errorf("failed to apply Service db: %w", a), errors.Join(other, b))
	refs := conflictsIn(err)
	g.Expect(refs).To(ConsistOf(a.ref, b.ref))
	g.Expect(conflictReason(refs)).To(Equal(v1alpha1.ReasonVolumeConflict))
	g.Expect(conflictReason(refs[:1])).To(Equal(v1alpha1.ReasonObjectConflict))
	g.Expect(errorsBesides(err)).To(ConsistOf(other))
	g.Expect(conflictsIn(other)).To(BeEmpty())
}

func TestConflictMessageSaysHowToAdopt(t *testing.T) {
	g := NewWithT(t)
	msg := conflictMessage([]v1alpha1.ObjectRef{
		{Kind: "PersistentVolumeClaim", Name: "data-db-0", UID: "p0", OwnerUID: "old"},
		{Kind: "PersistentVolumeClaim", Name: "data-db-1", UID: "p1"},
	})
	g.Expect(msg).To(ContainSubstring("data-db-0 belongs to MySQLCluster uid old"))
	g.Expect(msg).To(ContainSubstring("data-db-1 was not created by mysqlfleet (uid p1)"))
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
