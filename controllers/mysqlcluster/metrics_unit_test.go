package mysqlcluster

import "testing"

// MemberReconcileCounts sums every phase of a member, and only that member's.
func TestMemberReconcileCountsSumsPhasesByMember(t *testing.T) {
	before := MemberReconcileCounts()
	memberReconciles.WithLabelValues("counts-a", "Ready").Add(2)
	memberReconciles.WithLabelValues("counts-a", "Progressing").Inc()
	memberReconciles.WithLabelValues("counts-b", "Ready").Inc()
	after := MemberReconcileCounts()
	if got := after["counts-a"] - before["counts-a"]; got != 3 {
		t.Errorf("counts-a: %v reconciles, want 3", got)
	}
	if got := after["counts-b"] - before["counts-b"]; got != 1 {
		t.Errorf("counts-b: %v reconciles, want 1", got)
	}
}
