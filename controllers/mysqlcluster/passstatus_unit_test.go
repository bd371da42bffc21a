package mysqlcluster

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// TestMemberPassStatus: what a member's pass found before reading back becomes the member's Reachable and Applied
// conditions (and Ready, when nothing could be read back), its phase and its last error. Reasons and messages are
// written out as users see them, not as the api constants, so that renaming either fails here.
func TestMemberPassStatus(t *testing.T) {
	const gen = 7
	at := metav1.NewTime(time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC))
	cond := func(typ string, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen,
			LastTransitionTime: at}
	}
	reachable := cond("Reachable", metav1.ConditionTrue, "Reachable", "")
	volume := []v1alpha1.ObjectRef{{Kind: "PersistentVolumeClaim", Name: "data-c-0", UID: "u1"}}
	service := []v1alpha1.ObjectRef{{Kind: "Service", Name: "c-primary", UID: "u2", OwnerUID: "old"}}
	refused := errors.New("the registration of aws-0 was refused")
	for name, tc := range map[string]struct {
		facts     passFacts
		phase     v1alpha1.Phase
		lastError string
		want      []metav1.Condition
	}{
		"applied": {facts: passFacts{applied: appliedAll},
			want: []metav1.Condition{reachable, cond("Applied", metav1.ConditionTrue, "Applied", "")}},
		"a scale-down held back": {facts: passFacts{applied: applyHeld, holdMessage: "c-2 holds the primary"},
			want: []metav1.Condition{reachable, cond("Applied", metav1.ConditionFalse, "ScaleDownPending", "c-2 holds the primary")}},
		"paused": {facts: passFacts{applied: applyPaused}, phase: v1alpha1.PhasePaused,
			want: []metav1.Condition{reachable, cond("Applied", metav1.ConditionFalse, "Paused", "paused: nothing applied")}},
		"recreating the StatefulSet": {facts: passFacts{applied: applyRecreating}, phase: v1alpha1.PhaseProgressing,
			want: []metav1.Condition{reachable, cond("Applied", metav1.ConditionFalse, "Converging",
				"recreating the StatefulSet for its new volume template")}},
		"a volume of another owner": {facts: passFacts{applied: applyConflicts, conflicts: volume},
			phase: v1alpha1.PhaseDegraded, lastError: conflictMessage(volume),
			want: []metav1.Condition{reachable, cond("Applied", metav1.ConditionFalse, "VolumeConflict", conflictMessage(volume))}},
		"an object of another owner": {facts: passFacts{applied: applyConflicts, conflicts: service},
			phase: v1alpha1.PhaseDegraded, lastError: conflictMessage(service),
			want: []metav1.Condition{reachable, cond("Applied", metav1.ConditionFalse, "ObjectConflict", conflictMessage(service))}},
		"no answer": {facts: *unreachable(errors.New("dial tcp: i/o timeout")),
			phase: v1alpha1.PhaseUnreachable, lastError: "dial tcp: i/o timeout",
			want: []metav1.Condition{
				cond("Reachable", metav1.ConditionFalse, "MemberUnreachable", "dial tcp: i/o timeout"),
				cond("Applied", metav1.ConditionFalse, "MemberUnreachable", "dial tcp: i/o timeout"),
				cond("Ready", metav1.ConditionFalse, "MemberUnreachable", "not applied")}},
		"registration refused": {facts: passFacts{unreached: v1alpha1.ReasonRegistrationRefused, err: refused},
			phase: v1alpha1.PhaseDegraded, lastError: refused.Error(),
			want: []metav1.Condition{
				cond("Reachable", metav1.ConditionFalse, "RegistrationRefused", refused.Error()),
				cond("Applied", metav1.ConditionFalse, "RegistrationRefused", refused.Error()),
				cond("Ready", metav1.ConditionFalse, "RegistrationRefused", "not applied")}},
		"an apply failed": {facts: *degraded(v1alpha1.ReasonApplyFailed, errors.New("admission webhook denied")),
			phase: v1alpha1.PhaseDegraded, lastError: "admission webhook denied",
			want: []metav1.Condition{reachable,
				cond("Applied", metav1.ConditionFalse, "ApplyFailed", "admission webhook denied"),
				cond("Ready", metav1.ConditionFalse, "ApplyFailed", "not applied")}},
		"storage would shrink": {facts: *degraded(v1alpha1.ReasonStorageShrink, errStorageShrink),
			phase: v1alpha1.PhaseDegraded, lastError: errStorageShrink.Error(),
			want: []metav1.Condition{reachable,
				cond("Applied", metav1.ConditionFalse, "StorageShrinkRefused", errStorageShrink.Error()),
				cond("Ready", metav1.ConditionFalse, "StorageShrinkRefused", "not applied")}},
		"a spec that cannot be rendered": {facts: *degraded(v1alpha1.ReasonInvalidSpec, errors.New("bad spec")),
			phase: v1alpha1.PhaseDegraded, lastError: "bad spec",
			want: []metav1.Condition{reachable,
				cond("Applied", metav1.ConditionFalse, "InvalidSpec", "bad spec"),
				cond("Ready", metav1.ConditionFalse, "InvalidSpec", "not applied")}},
		"a schedule that cannot be parsed": {facts: *degraded(v1alpha1.ReasonInvalidSchedule, errors.New("bad schedule")),
			phase: v1alpha1.PhaseDegraded, lastError: "bad schedule",
			want: []metav1.Condition{reachable,
				cond("Applied", metav1.ConditionFalse, "InvalidBackupSchedule", "bad schedule"),
				cond("Ready", metav1.ConditionFalse, "InvalidBackupSchedule", "not applied")}},
		"a namespace the member does not allow": {facts: *degraded(v1alpha1.ReasonNamespaceNotAllowed, errors.New("not db")),
			phase: v1alpha1.PhaseDegraded, lastError: "not db",
			want: []metav1.Condition{reachable,
				cond("Applied", metav1.ConditionFalse, "NamespaceNotAllowed", "not db"),
				cond("Ready", metav1.ConditionFalse, "NamespaceNotAllowed", "not applied")}},
		"facts without an outcome never report the member applied": {facts: passFacts{},
			phase: v1alpha1.PhaseDegraded,
			want: []metav1.Condition{reachable, cond("Applied", metav1.ConditionFalse, "", ""),
				cond("Ready", metav1.ConditionFalse, "", "not applied")}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			f := tc.facts
			f.at = at
			got := memberPassStatus(f, gen)
			g.Expect(got.phase).To(Equal(tc.phase))
			g.Expect(got.lastError).To(Equal(tc.lastError))
			g.Expect(got.conditions).To(Equal(tc.want))
		})
	}
}

// A pass that finds what the last one found leaves the member's row as it was, transition times included: an
// unchanged member makes no status write.
func TestSettleKeepsAnUnchangedRow(t *testing.T) {
	c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "c", Generation: 4}}
	earlier := metav1.NewTime(time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC))
	for name, f := range map[string]passFacts{
		"applied":     {applied: appliedAll},
		"paused":      {applied: applyPaused},
		"conflicts":   {applied: applyConflicts, conflicts: []v1alpha1.ObjectRef{{Kind: "Service", Name: "c", UID: "u"}}},
		"unreachable": *unreachable(errors.New("no route to host")),
		"failed":      *degraded(v1alpha1.ReasonApplyFailed, errors.New("denied")),
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			f.at = earlier
			last := memberPassStatus(f, c.Generation)
			row := v1alpha1.MemberStatus{Name: "aws-0", Phase: last.phase, LastError: last.lastError,
				Conditions: append([]metav1.Condition{{Type: "PodsReady", Status: metav1.ConditionTrue, Reason: "PodsReady",
					ObservedGeneration: c.Generation, LastTransitionTime: earlier}}, last.conditions...)}
			p := &memberPass{s: &scope{cluster: c}, row: *row.DeepCopy()}
			p.settle(f)
			g.Expect(equality.Semantic.DeepEqual(p.row, row)).To(BeTrue(), "row changed: %+v", p.row)

			// A first pass puts the same conditions on a row that had none.
			first := &memberPass{s: &scope{cluster: c}, row: v1alpha1.MemberStatus{Name: "aws-0"}}
			first.settle(f)
			g.Expect(first.row.Phase).To(Equal(last.phase))
			g.Expect(first.row.LastError).To(Equal(last.lastError))
			g.Expect(first.row.Conditions).To(HaveLen(len(last.conditions)))
			for i, got := range first.row.Conditions {
				want := last.conditions[i]
				want.LastTransitionTime = got.LastTransitionTime
				g.Expect(got).To(Equal(want))
			}
		})
	}
}
