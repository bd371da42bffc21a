package mysqlcluster

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// computeStatus summarises what the phases found into the MySQLCluster's status and conditions, as of now: it
// is the one place where they are set, and it makes no request. Messages name members and counts, never
// timestamps or generated names, so that an unchanged fleet computes an unchanged status. Each condition is
// decided by a function of its own, table-tested in status_test.go.
func (s *scope) computeStatus(now time.Time) {
	c := s.cluster
	st := &c.Status
	sum := summarize(s.members, c.Generation)
	st.Members = s.members
	st.ReadyMembers = fmt.Sprintf("%d/%d", sum.ready, len(s.members))
	st.ReadyReplicas = fmt.Sprintf("%d/%d", sum.readyReplicas, sum.replicas)
	st.Serving = fmt.Sprintf("%d/%d", sum.serving, sum.replicas)
	st.StorageClasses = strings.Join(sum.classes, ",")
	st.LastBackup = sum.lastBackup

	degraded := degradedVerdict(s.specErr, s.placementErr, s.unknown, s.members, sum)
	for t, v := range map[string]verdict{
		v1alpha1.ConditionPlaced:      placedVerdict(s.placementErr, s.unknown, len(s.members)),
		v1alpha1.ConditionDegraded:    degraded,
		v1alpha1.ConditionProgressing: progressingVerdict(c.Spec.Paused, sum),
		v1alpha1.ConditionReady:       readyVerdict(sum, len(s.members)),
	} {
		status := metav1.ConditionFalse
		if v.ok {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: status, Reason: v.reason,
			Message: v.message, ObservedGeneration: c.Generation})
	}
	s.lookAgain = s.setBackupCondition(now)
	s.setArchiveCondition()
	st.Phase = phaseOf(c.Spec.Paused, len(s.members), sum, degraded.ok)
	// A row about an earlier generation is the member's last word, not its verdict on this one.
	if generationSettled(s.members) && rowsCurrent(s.members, c.Generation) {
		st.ObservedGeneration = c.Generation
	}
}

// verdict is a condition's status (ok means True), reason and message.
type verdict struct {
	ok              bool
	reason, message string
}

// summary counts what the members report.
type summary struct {
	ready, readyReplicas, replicas   int
	serving, restoring               int
	unreachable, failed, progressing []string
	conflicted                       []string
	conflicts                        []v1alpha1.ObjectRef
	classes                          []string
	lastBackup                       *metav1.Time
}

// summarize counts the members by phase, for generation: a member whose row says Ready about an earlier
// generation (its owner has not written since the spec changed) is progressing, not ready, since the conditions
// summarised carry this generation. Members with conflicts are named with them, not among the failing. The
// last backup is the oldest of the members' last backups, and none until every member has one.
func summarize(members []v1alpha1.MemberStatus, generation int64) summary {
	var sum summary
	classes := map[string]bool{}
	allBackedUp := len(members) > 0
	for _, m := range members {
		sum.readyReplicas += int(m.ReadyReplicas)
		sum.serving += serving(m.Replication)
		sum.replicas += int(m.Replicas)
		if m.StorageClass != "" {
			classes[m.StorageClass] = true
		}
		switch {
		case len(m.Conflicts) > 0:
			sum.conflicted = append(sum.conflicted, fmt.Sprintf("conflicts in %s: %s", m.Name, m.LastError))
			sum.conflicts = append(sum.conflicts, m.Conflicts...)
		case m.Phase == v1alpha1.PhaseReady && !earlierRow(m, generation):
			sum.ready++
		case m.Phase == v1alpha1.PhaseUnreachable:
			sum.unreachable = append(sum.unreachable, m.Name)
		case m.Phase == v1alpha1.PhaseDegraded:
			sum.failed = append(sum.failed, m.Name)
		case m.Phase == v1alpha1.PhaseRestoring:
			sum.restoring++
			sum.progressing = append(sum.progressing, m.Name)
		default:
			sum.progressing = append(sum.progressing, m.Name)
		}
		if m.LastBackup == nil {
			allBackedUp = false
		} else if sum.lastBackup == nil || m.LastBackup.Before(sum.lastBackup) {
			sum.lastBackup = m.LastBackup
		}
	}
	if !allBackedUp {
		sum.lastBackup = nil
	}
	for n := range classes {
		sum.classes = append(sum.classes, n)
	}
	sort.Strings(sum.classes)
	return sum
}

// earlierRow tells a row whose Applied condition is about another generation than this one.
func earlierRow(m v1alpha1.MemberStatus, generation int64) bool {
	applied := meta.FindStatusCondition(m.Conditions, v1alpha1.MemberConditionApplied)
	return applied != nil && applied.ObservedGeneration != generation
}

// placedVerdict: True when the placement resolved to registered members and names no unknown one.
func placedVerdict(placementErr error, unknown []string, members int) verdict {
	switch {
	case placementErr != nil:
		return verdict{false, v1alpha1.ReasonInvalidSpec, placementErr.Error()}
	case len(unknown) > 0:
		return verdict{false, v1alpha1.ReasonUnknownMembers, "not registered: " + strings.Join(unknown, ", ")}
	case members == 0:
		return verdict{false, v1alpha1.ReasonNoMembers, "the placement selects no registered member"}
	}
	return verdict{true, v1alpha1.ReasonPlaced, fmt.Sprintf("placed on %d members", members)}
}

// degradedVerdict: True when the spec cannot be honoured, or members are unreachable, failing or hold
// conflicting objects. The reason names the most specific cause.
func degradedVerdict(specErr, placementErr error, unknown []string, members []v1alpha1.MemberStatus, sum summary) verdict {
	problems := append([]string{}, sum.conflicted...)
	reason := v1alpha1.ReasonMembersDegraded
	switch {
	case specErr != nil:
		reason = specReason(specErr)
		problems = append(problems, specErr.Error())
	case len(sum.conflicts) > 0:
		reason = conflictReason(sum.conflicts)
	case memberReason(members, v1alpha1.ReasonStorageShrink):
		reason = v1alpha1.ReasonStorageShrink
	case memberReason(members, v1alpha1.ReasonRegistrationRefused):
		reason = v1alpha1.ReasonRegistrationRefused
	}
	if len(sum.unreachable) > 0 {
		problems = append(problems, "unreachable: "+strings.Join(sum.unreachable, ", "))
	}
	if len(sum.failed) > 0 {
		problems = append(problems, "failing: "+strings.Join(sum.failed, ", "))
	}
	if placementErr != nil || len(unknown) > 0 {
		problems = append(problems, "placement names unknown members")
		if specErr == nil && len(sum.conflicts)+len(sum.unreachable)+len(sum.failed) == 0 {
			reason = v1alpha1.ReasonUnknownMembers
		}
	}
	if len(problems) == 0 {
		return verdict{false, v1alpha1.ReasonHealthy, ""}
	}
	return verdict{true, reason, strings.Join(problems, "; ")}
}

// progressingVerdict: True while members converge.
func progressingVerdict(paused bool, sum summary) verdict {
	switch {
	case paused:
		return verdict{false, v1alpha1.ReasonPaused, "paused: status.members[].plan shows what would be applied"}
	case len(sum.progressing) > 0:
		return verdict{true, v1alpha1.ReasonConverging, "converging: " + strings.Join(sum.progressing, ", ")}
	}
	return verdict{false, v1alpha1.ReasonConverged, ""}
}

// readyVerdict: True when every placed member is Ready.
func readyVerdict(sum summary, members int) verdict {
	msg := fmt.Sprintf("%d/%d members ready", sum.ready, members)
	if members > 0 && sum.ready == members {
		return verdict{true, v1alpha1.ReasonReady, msg}
	}
	return verdict{false, v1alpha1.ReasonNotReady, msg}
}

// phaseOf sums the MySQLCluster up in one word.
func phaseOf(paused bool, members int, sum summary, degraded bool) v1alpha1.Phase {
	switch {
	case paused:
		return v1alpha1.PhasePaused
	case members == 0:
		return v1alpha1.PhasePending
	case degraded:
		return v1alpha1.PhaseDegraded
	case sum.ready == members:
		return v1alpha1.PhaseReady
	case sum.restoring > 0:
		return v1alpha1.PhaseRestoring
	}
	return v1alpha1.PhaseProgressing
}

// generationSettled tells whether every member reached a verdict on the current generation (see settled).
func generationSettled(members []v1alpha1.MemberStatus) bool {
	for _, m := range members {
		if !settled(m) {
			return false
		}
	}
	return true
}

// memberReason tells whether a member's Applied condition has the reason.
func memberReason(members []v1alpha1.MemberStatus, reason string) bool {
	for _, m := range members {
		if c := meta.FindStatusCondition(m.Conditions, v1alpha1.MemberConditionApplied); c != nil && c.Reason == reason {
			return true
		}
	}
	return false
}

// settled tells whether a member reached a verdict on the current generation: applied, paused, or refused for a
// reason that only a change of the spec or the member mends. Unreachable members and failed applies have not.
func settled(m v1alpha1.MemberStatus) bool {
	c := meta.FindStatusCondition(m.Conditions, v1alpha1.MemberConditionApplied)
	if c == nil {
		return false
	}
	switch c.Reason {
	case v1alpha1.ReasonApplied, v1alpha1.ReasonPaused, v1alpha1.ReasonVolumeConflict, v1alpha1.ReasonObjectConflict:
		return true
	}
	return refusedForGood(c.Reason)
}

// refusedForGood tells the Applied reasons that only a change of the spec or of the member mends: such a member
// settles its generation and is not retried on a timer.
func refusedForGood(reason string) bool {
	switch reason {
	case v1alpha1.ReasonInvalidSpec, v1alpha1.ReasonInvalidSchedule, v1alpha1.ReasonNamespaceNotAllowed,
		v1alpha1.ReasonRegistrationRefused, v1alpha1.ReasonStorageShrink:
		return true
	}
	return false
}

// emitTransitions records an Event for every cluster condition whose status changed; a condition that turned
// bad is a Warning.
func (r *MySQLClusterReconciler) emitTransitions(s *scope) {
	if r.Recorder == nil {
		return
	}
	for _, now := range s.cluster.Status.Conditions {
		was := meta.FindStatusCondition(s.before.Conditions, now.Type)
		if was != nil && was.Status == now.Status && was.Reason == now.Reason {
			continue
		}
		// Degraded=True and Placed=False need a person; Ready and Progressing come and go as members converge.
		bad := (now.Type == v1alpha1.ConditionDegraded && now.Status == metav1.ConditionTrue) ||
			(now.Type == v1alpha1.ConditionPlaced && now.Status == metav1.ConditionFalse)
		if was == nil && !bad {
			continue // a first good or pending condition is not news
		}
		typ := corev1.EventTypeNormal
		if bad {
			typ = corev1.EventTypeWarning
		}
		note := now.Message
		if note == "" {
			note = now.Reason
		}
		r.Recorder.Eventf(s.cluster, nil, typ, now.Reason, "Reconcile", "%s=%s: %s", now.Type, now.Status, note)
	}
}

// passFacts is what one member's pass found before it read the member back, with no verdict in it: whether the
// member was reached, how far applying its objects got, why it failed, and when. memberPass records them;
// memberPassStatus decides the member's conditions from them.
type passFacts struct {
	// at is when the pass found it: the time of a condition whose status changes.
	at metav1.Time
	// unreached is why the member was not reached: ReasonUnreachable when it did not answer,
	// ReasonRegistrationRefused when nothing was sent to it because its registration was refused. Empty: it
	// answered.
	unreached string
	// applied is how far applying the member's objects got.
	applied applyOutcome
	// failReason classifies err in a member that answered (applied is applyFailed, unreached empty):
	// ReasonApplyFailed, ReasonStorageShrink, ReasonInvalidSpec, ReasonInvalidSchedule, ReasonNamespaceNotAllowed.
	failReason string
	// err is what ended the pass (applied is applyFailed).
	err error
	// conflicts are the objects of the member that another owner holds (applied is applyConflicts).
	conflicts []v1alpha1.ObjectRef
	// holdMessage says which scale-down is held back (applied is applyHeld).
	holdMessage string
}

// applyOutcome is how far applying a member's objects got.
type applyOutcome int

const (
	// applyFailed: the pass ended before the member could be read back (the zero value, so that facts recorded
	// without an outcome never report the member applied).
	applyFailed applyOutcome = iota
	// appliedAll: every object is applied.
	appliedAll
	// applyHeld: every object is applied, but the StatefulSet keeps the Pods of a held scale-down.
	applyHeld
	// applyPaused: the MySQLCluster is paused; the applies only made the plan.
	applyPaused
	// applyRecreating: the StatefulSet is being recreated with its new volume template.
	applyRecreating
	// applyConflicts: objects of the member are another owner's; the others are applied.
	applyConflicts
)

// passStatus is what memberPassStatus decides: the conditions to set on the member's row, its phase (empty: the
// read-back decides it) and its last error.
type passStatus struct {
	phase      v1alpha1.Phase
	lastError  string
	conditions []metav1.Condition
}

// memberPassStatus decides, from what a member's pass found, the member's Reachable and Applied conditions, and
// its Ready condition when nothing could be read back (otherwise the read-back decides Ready: judge). It makes no
// request: it is the one place where a pass's facts become a member's conditions. Every condition is about
// generation gen; messages carry no timestamps, so that an unchanged member decides unchanged conditions.
func memberPassStatus(f passFacts, gen int64) passStatus {
	cond := func(t string, ok bool, reason, msg string) metav1.Condition {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		return metav1.Condition{Type: t, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen,
			LastTransitionTime: f.at}
	}
	errMsg := ""
	if f.err != nil {
		errMsg = f.err.Error()
	}
	reachable := cond(v1alpha1.MemberConditionReachable, true, v1alpha1.ReasonReachable, "")
	if f.unreached != "" {
		reachable = cond(v1alpha1.MemberConditionReachable, false, f.unreached, errMsg)
	}
	applied := func(ok bool, reason, msg string) metav1.Condition {
		return cond(v1alpha1.MemberConditionApplied, ok, reason, msg)
	}
	switch f.applied {
	case appliedAll:
		return passStatus{conditions: []metav1.Condition{reachable, applied(true, v1alpha1.ReasonApplied, "")}}
	case applyHeld:
		// Everything is applied, but spec.replicas is not in the member yet.
		return passStatus{conditions: []metav1.Condition{reachable,
			applied(false, v1alpha1.ReasonScaleDownPending, f.holdMessage)}}
	case applyPaused:
		return passStatus{phase: v1alpha1.PhasePaused, conditions: []metav1.Condition{reachable,
			applied(false, v1alpha1.ReasonPaused, "paused: nothing applied")}}
	case applyRecreating:
		return passStatus{phase: v1alpha1.PhaseProgressing, conditions: []metav1.Condition{reachable,
			applied(false, v1alpha1.ReasonConverging, "recreating the StatefulSet for its new volume template")}}
	case applyConflicts:
		msg := conflictMessage(f.conflicts)
		return passStatus{phase: v1alpha1.PhaseDegraded, lastError: msg, conditions: []metav1.Condition{reachable,
			applied(false, conflictReason(f.conflicts), msg)}}
	}
	// applyFailed, or an outcome not known here: a member that did not answer is unreachable, one that answered
	// (or was never asked) degraded; nothing is Ready since nothing was applied.
	phase, reason := v1alpha1.PhaseDegraded, f.failReason
	if f.unreached != "" {
		reason = f.unreached
	}
	if f.unreached == v1alpha1.ReasonUnreachable {
		phase = v1alpha1.PhaseUnreachable
	}
	return passStatus{phase: phase, lastError: errMsg, conditions: []metav1.Condition{reachable,
		applied(false, reason, errMsg), cond(v1alpha1.MemberConditionReady, false, reason, "not applied")}}
}

// rowsCurrent tells whether every row's Applied condition is about this generation.
func rowsCurrent(rows []v1alpha1.MemberStatus, generation int64) bool {
	for _, m := range rows {
		applied := meta.FindStatusCondition(m.Conditions, v1alpha1.MemberConditionApplied)
		if applied == nil || applied.ObservedGeneration != generation {
			return false
		}
	}
	return true
}
