package controllers

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// computeStatus summarises the members into the MySQLCluster's status and conditions. Messages name members and
// counts, never timestamps or generated names, so that an unchanged fleet computes an unchanged status.
func (s *scope) computeStatus() {
	c := s.cluster
	st := &c.Status
	gen := c.Generation
	set := func(t string, ok bool, reason, msg string) {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen})
	}

	st.Members = s.members
	var ready, readyReplicas, replicas int
	var unreachable, failed, progressing []string
	classes := map[string]bool{}
	st.LastBackup = nil
	allBackedUp := len(s.members) > 0
	for _, m := range s.members {
		readyReplicas += int(m.ReadyReplicas)
		replicas += int(m.Replicas)
		if m.StorageClass != "" {
			classes[m.StorageClass] = true
		}
		switch m.Phase {
		case v1alpha1.PhaseReady:
			ready++
		case v1alpha1.PhaseUnreachable:
			unreachable = append(unreachable, m.Name)
		case v1alpha1.PhaseDegraded:
			if len(m.Conflicts) == 0 { // named with their conflicts
				failed = append(failed, m.Name)
			}
		default:
			progressing = append(progressing, m.Name)
		}
		if m.LastBackup == nil {
			allBackedUp = false
		} else if st.LastBackup == nil || m.LastBackup.Before(st.LastBackup) {
			st.LastBackup = m.LastBackup
		}
	}
	if !allBackedUp {
		st.LastBackup = nil
	}
	st.ReadyMembers = fmt.Sprintf("%d/%d", ready, len(s.members))
	st.ReadyReplicas = fmt.Sprintf("%d/%d", readyReplicas, replicas)
	names := make([]string, 0, len(classes))
	for n := range classes {
		names = append(names, n)
	}
	sort.Strings(names)
	st.StorageClasses = strings.Join(names, ",")

	// Placed
	switch {
	case s.placementErr != nil:
		set(v1alpha1.ConditionPlaced, false, v1alpha1.ReasonInvalidSpec, s.placementErr.Error())
	case len(s.unknown) > 0:
		set(v1alpha1.ConditionPlaced, false, v1alpha1.ReasonUnknownMembers,
			"not registered: "+strings.Join(s.unknown, ", "))
	case len(s.members) == 0:
		set(v1alpha1.ConditionPlaced, false, v1alpha1.ReasonNoMembers, "the placement selects no registered member")
	default:
		set(v1alpha1.ConditionPlaced, true, v1alpha1.ReasonPlaced, fmt.Sprintf("placed on %d members", len(s.members)))
	}

	// Degraded: the spec cannot be honoured, or members are unreachable, failing or hold conflicting objects.
	var problems []string
	reason := v1alpha1.ReasonMembersDegraded
	var conflicts []v1alpha1.ObjectRef
	for _, m := range s.members {
		if len(m.Conflicts) > 0 {
			conflicts = append(conflicts, m.Conflicts...)
			problems = append(problems, fmt.Sprintf("conflicts in %s: %s", m.Name, m.LastError))
		}
	}
	switch {
	case s.specErr != nil:
		reason = v1alpha1.ReasonInvalidSpec
		var schedErr *render.ScheduleError
		if errors.As(s.specErr, &schedErr) {
			reason = v1alpha1.ReasonInvalidSchedule
		}
		problems = append(problems, s.specErr.Error())
	case len(conflicts) > 0:
		reason = conflictReason(conflicts)
	case memberReason(s.members, v1alpha1.ReasonStorageShrink):
		reason = v1alpha1.ReasonStorageShrink
	case memberReason(s.members, v1alpha1.ReasonRegistrationRefused):
		reason = v1alpha1.ReasonRegistrationRefused
	}
	if len(unreachable) > 0 {
		problems = append(problems, "unreachable: "+strings.Join(unreachable, ", "))
	}
	if len(failed) > 0 {
		problems = append(problems, "failing: "+strings.Join(failed, ", "))
	}
	if s.placementErr != nil || len(s.unknown) > 0 {
		problems = append(problems, "placement names unknown members")
		if s.specErr == nil && len(unreachable)+len(failed) == 0 {
			reason = v1alpha1.ReasonUnknownMembers
		}
	}
	if len(problems) > 0 {
		set(v1alpha1.ConditionDegraded, true, reason, strings.Join(problems, "; "))
	} else {
		set(v1alpha1.ConditionDegraded, false, v1alpha1.ReasonHealthy, "")
	}

	// Progressing and Ready.
	allReady := len(s.members) > 0 && ready == len(s.members)
	switch {
	case c.Spec.Paused:
		set(v1alpha1.ConditionProgressing, false, v1alpha1.ReasonPaused, "paused: status.members[].plan shows what would be applied")
	case len(progressing) > 0:
		set(v1alpha1.ConditionProgressing, true, v1alpha1.ReasonConverging, "converging: "+strings.Join(progressing, ", "))
	default:
		set(v1alpha1.ConditionProgressing, false, v1alpha1.ReasonConverged, "")
	}
	if allReady {
		set(v1alpha1.ConditionReady, true, v1alpha1.ReasonReady, fmt.Sprintf("%d/%d members ready", ready, len(s.members)))
	} else {
		set(v1alpha1.ConditionReady, false, v1alpha1.ReasonNotReady, fmt.Sprintf("%d/%d members ready", ready, len(s.members)))
	}

	switch {
	case c.Spec.Paused:
		st.Phase = v1alpha1.PhasePaused
	case len(s.members) == 0:
		st.Phase = v1alpha1.PhasePending
	case len(problems) > 0:
		st.Phase = v1alpha1.PhaseDegraded
	case allReady:
		st.Phase = v1alpha1.PhaseReady
	default:
		st.Phase = v1alpha1.PhaseProgressing
	}
	everySettled := true
	for _, m := range s.members {
		everySettled = everySettled && settled(m)
	}
	if everySettled {
		st.ObservedGeneration = gen
	}
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
	case v1alpha1.ReasonApplied, v1alpha1.ReasonPaused, v1alpha1.ReasonInvalidSpec, v1alpha1.ReasonInvalidSchedule,
		v1alpha1.ReasonNamespaceNotAllowed, v1alpha1.ReasonRegistrationRefused, v1alpha1.ReasonVolumeConflict,
		v1alpha1.ReasonObjectConflict, v1alpha1.ReasonStorageShrink:
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
