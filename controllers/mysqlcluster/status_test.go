package mysqlcluster

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

func member(name string, phase v1alpha1.Phase, opts ...func(*v1alpha1.MemberStatus)) v1alpha1.MemberStatus {
	m := v1alpha1.MemberStatus{Name: name, Phase: phase, Replicas: 3}
	if phase == v1alpha1.PhaseReady {
		m.ReadyReplicas = 3
	}
	for _, o := range opts {
		o(&m)
	}
	return m
}

func TestSummarize(t *testing.T) {
	g := NewWithT(t)
	early, late := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	sum := summarize([]v1alpha1.MemberStatus{
		member("a", v1alpha1.PhaseReady, func(m *v1alpha1.MemberStatus) { m.StorageClass, m.LastBackup = "gp3", &late }),
		member("b", v1alpha1.PhaseReady, func(m *v1alpha1.MemberStatus) { m.StorageClass, m.LastBackup = "pd-ssd", &early }),
		member("c", v1alpha1.PhaseUnreachable, func(m *v1alpha1.MemberStatus) { m.StorageClass, m.LastBackup = "gp3", &late }),
		member("d", v1alpha1.PhaseDegraded, func(m *v1alpha1.MemberStatus) { m.LastBackup = &late }),
		member("e", v1alpha1.PhaseDegraded, func(m *v1alpha1.MemberStatus) {
			m.Conflicts, m.LastError, m.LastBackup = []v1alpha1.ObjectRef{{Kind: "Service", Name: "db"}}, "Service db exists", &late
		}),
		member("f", v1alpha1.PhaseProgressing, func(m *v1alpha1.MemberStatus) { m.LastBackup = &late }),
	}, 0)
	g.Expect(sum.ready).To(Equal(2))
	g.Expect(sum.readyReplicas).To(Equal(6))
	g.Expect(sum.replicas).To(Equal(18))
	g.Expect(sum.unreachable).To(Equal([]string{"c"}))
	g.Expect(sum.failed).To(Equal([]string{"d"}), "a member with conflicts is named with them, not as failing")
	g.Expect(sum.conflicted).To(Equal([]string{"conflicts in e: Service db exists"}))
	g.Expect(sum.progressing).To(Equal([]string{"f"}))
	g.Expect(sum.classes).To(Equal([]string{"gp3", "pd-ssd"}))
	g.Expect(sum.lastBackup).To(Equal(&early), "every member has a backup at least this recent")

	g.Expect(summarize([]v1alpha1.MemberStatus{member("a", v1alpha1.PhaseReady, func(m *v1alpha1.MemberStatus) { m.LastBackup = &late }),
		member("b", v1alpha1.PhaseReady)}, 0).lastBackup).To(BeNil(), "no last backup until every member has one")

	// The summary is about one generation: a row Ready about an earlier one has not said how the member does
	// with this one, so it is still converging to it. Its counts stand: they are what its row says.
	of := func(gen int64) func(*v1alpha1.MemberStatus) {
		return func(m *v1alpha1.MemberStatus) {
			m.Conditions = []metav1.Condition{{Type: v1alpha1.MemberConditionApplied, Status: metav1.ConditionTrue,
				Reason: v1alpha1.ReasonApplied, ObservedGeneration: gen}}
		}
	}
	sum = summarize([]v1alpha1.MemberStatus{member("a", v1alpha1.PhaseReady, of(2)), member("b", v1alpha1.PhaseReady, of(1))}, 2)
	g.Expect(sum.ready).To(Equal(1))
	g.Expect(sum.progressing).To(Equal([]string{"b"}))
	g.Expect(sum.readyReplicas).To(Equal(6))
}

func TestPlacedVerdict(t *testing.T) {
	tests := []struct {
		name         string
		placementErr error
		unknown      []string
		members      int
		want         verdict
	}{
		{"placed", nil, nil, 3, verdict{true, v1alpha1.ReasonPlaced, "placed on 3 members"}},
		{"invalid selector", errors.New("bad selector"), nil, 0, verdict{false, v1alpha1.ReasonInvalidSpec, "bad selector"}},
		{"unknown names", nil, []string{"x", "y"}, 1, verdict{false, v1alpha1.ReasonUnknownMembers, "not registered: x, y"}},
		{"nothing selected", nil, nil, 0, verdict{false, v1alpha1.ReasonNoMembers, "the placement selects no registered member"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(placedVerdict(tt.placementErr, tt.unknown, tt.members)).To(Equal(tt.want))
		})
	}
}

func TestDegradedVerdict(t *testing.T) {
	applied := func(reason string) func(*v1alpha1.MemberStatus) {
		return func(m *v1alpha1.MemberStatus) {
			m.Conditions = []metav1.Condition{{Type: v1alpha1.MemberConditionApplied, Status: metav1.ConditionFalse, Reason: reason}}
		}
	}
	conflict := func(kind string) func(*v1alpha1.MemberStatus) {
		return func(m *v1alpha1.MemberStatus) {
			m.Conflicts, m.LastError = []v1alpha1.ObjectRef{{Kind: kind, Name: "x"}}, kind+" x exists"
		}
	}
	tests := []struct {
		name         string
		specErr      error
		placementErr error
		unknown      []string
		members      []v1alpha1.MemberStatus
		want         verdict
	}{
		{name: "healthy", members: []v1alpha1.MemberStatus{member("a", v1alpha1.PhaseReady)},
			want: verdict{false, v1alpha1.ReasonHealthy, ""}},
		{name: "unreachable and failing", members: []v1alpha1.MemberStatus{member("a", v1alpha1.PhaseUnreachable), member("b", v1alpha1.PhaseDegraded)},
			want: verdict{true, v1alpha1.ReasonMembersDegraded, "unreachable: a; failing: b"}},
		{name: "schedule", specErr: &render.ScheduleError{}, members: []v1alpha1.MemberStatus{member("a", v1alpha1.PhaseDegraded)},
			want: verdict{true, v1alpha1.ReasonInvalidSchedule, (&render.ScheduleError{}).Error() + "; failing: a"}},
		{name: "volume conflict", members: []v1alpha1.MemberStatus{member("a", v1alpha1.PhaseDegraded, conflict("PersistentVolumeClaim"))},
			want: verdict{true, v1alpha1.ReasonVolumeConflict, "conflicts in a: PersistentVolumeClaim x exists"}},
		{name: "object conflict", members: []v1alpha1.MemberStatus{member("a", v1alpha1.PhaseDegraded, conflict("Service"))},
			want: verdict{true, v1alpha1.ReasonObjectConflict, "conflicts in a: Service x exists"}},
		{name: "refused registration", members: []v1alpha1.MemberStatus{member("a", v1alpha1.PhaseDegraded, applied(v1alpha1.ReasonRegistrationRefused))},
			want: verdict{true, v1alpha1.ReasonRegistrationRefused, "failing: a"}},
		{name: "storage shrink", members: []v1alpha1.MemberStatus{member("a", v1alpha1.PhaseDegraded, applied(v1alpha1.ReasonStorageShrink))},
			want: verdict{true, v1alpha1.ReasonStorageShrink, "failing: a"}},
		{name: "unknown members only", unknown: []string{"x"}, members: []v1alpha1.MemberStatus{member("a", v1alpha1.PhaseReady)},
			want: verdict{true, v1alpha1.ReasonUnknownMembers, "placement names unknown members"}},
		{name: "unknown members and an unreachable one", unknown: []string{"x"}, members: []v1alpha1.MemberStatus{member("a", v1alpha1.PhaseUnreachable)},
			want: verdict{true, v1alpha1.ReasonMembersDegraded, "unreachable: a; placement names unknown members"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := degradedVerdict(tt.specErr, tt.placementErr, tt.unknown, tt.members, summarize(tt.members, 0))
			NewWithT(t).Expect(got).To(Equal(tt.want))
		})
	}
}

func TestProgressingReadyAndPhase(t *testing.T) {
	tests := []struct {
		name        string
		paused      bool
		members     []v1alpha1.MemberStatus
		progressing verdict
		ready       bool
		phase       v1alpha1.Phase
	}{
		{name: "none placed", progressing: verdict{false, v1alpha1.ReasonConverged, ""}, phase: v1alpha1.PhasePending},
		{name: "all ready", members: []v1alpha1.MemberStatus{member("a", v1alpha1.PhaseReady)},
			progressing: verdict{false, v1alpha1.ReasonConverged, ""}, ready: true, phase: v1alpha1.PhaseReady},
		{name: "converging", members: []v1alpha1.MemberStatus{member("a", v1alpha1.PhaseReady), member("b", v1alpha1.PhaseProgressing)},
			progressing: verdict{true, v1alpha1.ReasonConverging, "converging: b"}, phase: v1alpha1.PhaseProgressing},
		{name: "degraded", members: []v1alpha1.MemberStatus{member("a", v1alpha1.PhaseUnreachable)},
			progressing: verdict{false, v1alpha1.ReasonConverged, ""}, phase: v1alpha1.PhaseDegraded},
		{name: "paused", paused: true, members: []v1alpha1.MemberStatus{member("a", v1alpha1.PhasePaused)},
			progressing: verdict{false, v1alpha1.ReasonPaused, "paused: status.members[].plan shows what would be applied"},
			phase:       v1alpha1.PhasePaused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			sum := summarize(tt.members, 0)
			g.Expect(progressingVerdict(tt.paused, sum)).To(Equal(tt.progressing))
			g.Expect(readyVerdict(sum, len(tt.members)).ok).To(Equal(tt.ready))
			degraded := degradedVerdict(nil, nil, nil, tt.members, sum).ok
			g.Expect(phaseOf(tt.paused, len(tt.members), sum, degraded)).To(Equal(tt.phase))
		})
	}
}

// observedGeneration advances only when every member settled the generation.
func TestGenerationSettled(t *testing.T) {
	g := NewWithT(t)
	ok := applied(v1alpha1.ReasonApplied)
	g.Expect(generationSettled(nil)).To(BeTrue())
	g.Expect(generationSettled([]v1alpha1.MemberStatus{ok, applied(v1alpha1.ReasonInvalidSpec)})).To(BeTrue())
	g.Expect(generationSettled([]v1alpha1.MemberStatus{ok, applied(v1alpha1.ReasonApplyFailed)})).To(BeFalse())
	g.Expect(generationSettled([]v1alpha1.MemberStatus{ok, {Phase: v1alpha1.PhaseUnreachable}})).To(BeFalse())
}
