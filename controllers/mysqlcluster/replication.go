package mysqlcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// readReport reads what the member controller reports on the StatefulSet sts (this MySQLCluster's own), from
// the member cache: the ConfigMap v1alpha1.ReplicationReportName, when it reports on that StatefulSet (by UID:
// a report left by a predecessor StatefulSet of the same name says nothing about this one). It is nil while
// there is none.
func readReport(ctx context.Context, mc client.Client, sts *appsv1.StatefulSet) (*v1alpha1.ReplicationReport, error) {
	var cm corev1.ConfigMap
	key := client.ObjectKey{Namespace: sts.Namespace, Name: v1alpha1.ReplicationReportName(sts.Name)}
	if err := mc.Get(ctx, key, &cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if cm.Annotations[v1alpha1.StatefulSetUIDAnnotation] != string(sts.UID) {
		return nil, nil
	}
	data := cm.Data[v1alpha1.ReplicationReportKey]
	if data == "" {
		return nil, nil
	}
	var rep v1alpha1.ReplicationReport
	if err := json.Unmarshal([]byte(data), &rep); err != nil {
		return nil, fmt.Errorf("the replication report %s cannot be read: %w", key, err)
	}
	return &rep, nil
}

// memberReplication is the hub's view of a report. The transition's observed time is the one the hub recorded
// when it first read that transition (prev), or now.
func memberReplication(rep *v1alpha1.ReplicationReport, prev *v1alpha1.MemberReplication,
	now metav1.Time) *v1alpha1.MemberReplication {
	if rep == nil {
		return nil
	}
	mr := &v1alpha1.MemberReplication{Decision: rep.Decision.Kind, Error: rep.LastError,
		WritesBlocked: rep.WritesBlocked}
	for _, in := range rep.Instances {
		switch in.Role {
		case v1alpha1.ReplicationRolePrimary:
			if in.Pod == rep.Primary {
				mr.Primary, mr.AsyncCommits = in.Pod, in.AsyncCommits
			}
		case v1alpha1.ReplicationRoleReplica:
			if in.InSync {
				mr.ReplicasInSync++
			}
		case v1alpha1.ReplicationRoleErrant:
			mr.ErrantReplicas = append(mr.ErrantReplicas, in.Pod)
		case v1alpha1.ReplicationRoleUnreachable:
			mr.Unreachable = append(mr.Unreachable, in.Pod)
		}
		if in.LagSeconds != nil && (mr.MaxLagSeconds == nil || *in.LagSeconds > *mr.MaxLagSeconds) {
			lag := *in.LagSeconds
			mr.MaxLagSeconds = &lag
		}
	}
	asyncWindow(mr, rep, prev, now)
	// The status keeps as many as the report may hold; a report with more (a member controller of another
	// version) must not make the status write fail.
	for i := range min(len(rep.Rebuilds), v1alpha1.MaxRebuildsReported) {
		mr.Rebuilds = append(mr.Rebuilds, *rep.Rebuilds[i].DeepCopy())
	}
	if t := rep.LastTransition; t != nil {
		mr.LastTransition = &v1alpha1.ReplicationTransition{Kind: t.Kind, From: t.From, To: t.To, Reason: t.Reason,
			ObservedTime: &now}
		if prev != nil && prev.LastTransition != nil && sameTransition(*prev.LastTransition, *mr.LastTransition) {
			mr.LastTransition.ObservedTime = prev.LastTransition.ObservedTime
		}
	}
	return mr
}

// asyncWindow mirrors the member's window of durability Preferred (semi-sync off) and keeps the last one that
// closed: it ends when the hub first reads the report without it (or with a later one), so the end is as
// precise as the hub's reads of the member.
func asyncWindow(mr *v1alpha1.MemberReplication, rep *v1alpha1.ReplicationReport, prev *v1alpha1.MemberReplication,
	now metav1.Time) {
	mr.Async, mr.AsyncSince = rep.Async, rep.AsyncSince
	if prev == nil {
		return
	}
	mr.LastAsyncWindow = prev.LastAsyncWindow
	if prev.AsyncSince == nil || (rep.AsyncSince != nil && rep.AsyncSince.Equal(prev.AsyncSince)) {
		return
	}
	end := now
	if rep.AsyncSince != nil {
		end = *rep.AsyncSince // a window closed and another opened between two reads
	}
	mr.LastAsyncWindow = &v1alpha1.AsyncWindow{From: *prev.AsyncSince, To: end}
}

func sameTransition(a, b v1alpha1.ReplicationTransition) bool {
	return a.Kind == b.Kind && a.From == b.From && a.To == b.To && a.Reason == b.Reason
}

// replicationVerdict decides the member's Replicating condition from the report: True for a writable primary
// and every replica in sync; Unknown while nothing reports (no member controller runs in the member, or it
// has not made its first pass: nothing is claimed that nobody saw); False otherwise, with the most specific
// reason. needsPerson tells a state that does not mend by itself (errant replicas, a set the controller
// cannot look at, a refused decision) from one on its way (bootstrap, a replica catching up). Errant replicas
// count as needing a person even under RebuildWhenSafe: the hub cannot tell whether the member controller will
// find a rebuild safe, and one that it does is done within a pass or two.
func replicationVerdict(replicas int32, sts string, errant v1alpha1.ErrantServers, rep *v1alpha1.ReplicationReport,
	mr *v1alpha1.MemberReplication) (status metav1.ConditionStatus, reason, msg string, needsPerson bool) {
	if rep == nil {
		return metav1.ConditionUnknown, v1alpha1.ReasonNoReport, fmt.Sprintf("no member controller has "+
			"reported on StatefulSet %s in this member yet (it is installed by mysqlfleet join)", sts), false
	}
	want := max(replicas-1, 0)
	switch {
	case rep.Decision.Kind == "Restoring":
		return metav1.ConditionFalse, v1alpha1.ReasonRestoring, orText(rep.LastError, rep.Decision.Reason),
			rep.LastError != ""
	case rep.Decision.Kind == "Unobserved":
		return metav1.ConditionFalse, v1alpha1.ReasonUnobserved,
			orText(rep.LastError, orText(rep.Decision.Reason, "the member controller could not look at the servers")), true
	case len(mr.ErrantReplicas) > 0:
		return metav1.ConditionFalse, v1alpha1.ReasonErrantReplicas, fmt.Sprintf("%s hold transactions the "+
			"primary does not have: %s", strings.Join(mr.ErrantReplicas, ", "), errantFate(errant)), true
	case mr.Primary == "":
		return metav1.ConditionFalse, v1alpha1.ReasonNoPrimary, orText(rep.LastError, "no primary yet"),
			rep.Decision.Kind == "Refused"
	case mr.WritesBlocked != "":
		return metav1.ConditionFalse, v1alpha1.ReasonWritesBlocked, fmt.Sprintf("%s is the primary, but no "+
			"commit returns: %s%s", mr.Primary, mr.WritesBlocked, suffix(notInSync(rep))), false
	case mr.Async != "":
		since := "now"
		if mr.AsyncSince != nil {
			since = mr.AsyncSince.UTC().Format(time.RFC3339)
		}
		return metav1.ConditionFalse, v1alpha1.ReasonDurabilityDegraded, fmt.Sprintf("%s is the primary; its "+
			"commits return without a replica holding them since %s (durability Preferred): a failover now could "+
			"lose them%s", mr.Primary, since, suffix(notInSync(rep))), false
	case mr.ReplicasInSync < want:
		return metav1.ConditionFalse, v1alpha1.ReasonReplicasNotInSync, fmt.Sprintf("%s is the primary; "+
				"%d/%d replicas in sync%s", mr.Primary, mr.ReplicasInSync, want, suffix(notInSync(rep))),
			rep.Decision.Kind == "Refused"
	case want == 0:
		return metav1.ConditionTrue, v1alpha1.ReasonSingleServer, mr.Primary + " is the primary", false
	}
	return metav1.ConditionTrue, v1alpha1.ReasonReplicating,
		fmt.Sprintf("%s is the primary; %d/%d replicas in sync", mr.Primary, mr.ReplicasInSync, want), false
}

// notInSync names the instances that are neither the primary nor a replica in sync, with what the report says
// of each.
func notInSync(rep *v1alpha1.ReplicationReport) string {
	var out []string
	for _, in := range rep.Instances {
		if in.Pod == rep.Primary || (in.Role == v1alpha1.ReplicationRoleReplica && in.InSync) {
			continue
		}
		s := in.Pod + " " + string(in.Role)
		if in.Error != "" {
			s += " (" + in.Error + ")"
		} else if in.LagSeconds != nil {
			s += fmt.Sprintf(" (%ds behind)", *in.LagSeconds)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}

// serving counts the member's servers that serve in their role: the writable primary, unless its writes are
// blocked, and the replicas in sync.
func serving(mr *v1alpha1.MemberReplication) int {
	switch {
	case mr == nil || mr.Primary == "":
		return 0
	case mr.WritesBlocked != "":
		return int(mr.ReplicasInSync)
	}
	return 1 + int(mr.ReplicasInSync)
}

// errantFate says what becomes of errant servers under spec.errantServers.
func errantFate(errant v1alpha1.ErrantServers) string {
	if errant == v1alpha1.ErrantServersFence {
		return "fenced until a human rebuilds them with mysqlfleet rebuild (errantServers Fence)"
	}
	return "fenced; the member controller rebuilds each one whose rebuild provably loses no acknowledged " +
		"commit (errantServers RebuildWhenSafe), the others wait for mysqlfleet rebuild"
}

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// requestedPrimary is the Pod spec.primaries names for the member, "" without a request.
func requestedPrimary(c *v1alpha1.MySQLCluster, member string) string {
	n, ok := c.Spec.Primaries[member]
	if !ok {
		return ""
	}
	return fmt.Sprintf("%s-%d", c.StatefulSetName(), n)
}

// switchoverVerdict decides the member's PrimaryAsRequested condition while spec.primaries names a Pod for it
// (ok false: no request, no condition): True once that Pod is the primary; False while the member controller
// moves the primary there, or refuses to (its decision Refused, whose reason says why: the target lags, is
// unhealthy or errant); Unknown while nothing reports.
func switchoverVerdict(requested string, rep *v1alpha1.ReplicationReport) (status metav1.ConditionStatus, reason,
	msg string, ok bool) {
	switch {
	case requested == "":
		return "", "", "", false
	case rep == nil:
		return metav1.ConditionUnknown, v1alpha1.ReasonNoReport, "no member controller reports on this set", true
	case rep.Primary == requested:
		return metav1.ConditionTrue, v1alpha1.ReasonPrimaryAsRequested, requested + " is the primary", true
	case rep.Decision.Kind == "Refused":
		return metav1.ConditionFalse, v1alpha1.ReasonSwitchoverRefused,
			fmt.Sprintf("switchover to %s refused: %s", requested, rep.Decision.Reason), true
	}
	return metav1.ConditionFalse, v1alpha1.ReasonSwitchoverInProgress,
		fmt.Sprintf("moving the primary from %s to %s", orText(rep.Primary, "(none)"), requested), true
}

// newTransition is the member's change of primary that the hub read for the first time in this pass, nil if
// there is none.
func newTransition(before *v1alpha1.MySQLClusterStatus, now v1alpha1.MemberStatus) *v1alpha1.ReplicationTransition {
	if now.Replication == nil || now.Replication.LastTransition == nil {
		return nil
	}
	t := now.Replication.LastTransition
	if prev := previousMember(before, now.Name).Replication; prev != nil && prev.LastTransition != nil &&
		sameTransition(*prev.LastTransition, *t) {
		return nil
	}
	return t
}

// emitReplicationEvents records an Event on the MySQLCluster for each change of primary a member reported since
// the last status write (a failover is a Warning: a server was lost), and counts failovers.
func (r *MySQLClusterReconciler) emitReplicationEvents(s *scope) {
	for _, m := range s.cluster.Status.Members {
		r.emitWritesBlocked(s, m)
		r.emitAsyncWindow(s, m)
		r.emitRebuilds(s, m)
		t := newTransition(s.before, m)
		if t == nil {
			continue
		}
		if t.Kind == "Failover" {
			failovers.WithLabelValues(s.cluster.Namespace, s.cluster.Name, m.Name).Inc()
		}
		if r.Recorder == nil {
			continue
		}
		typ := corev1.EventTypeNormal
		if t.Kind == "Failover" {
			typ = corev1.EventTypeWarning
		}
		note := fmt.Sprintf("member %s: %s", m.Name, t.Kind)
		if t.From != "" {
			note += " from " + t.From
		}
		if t.To != "" {
			note += " to " + t.To
		}
		if t.Reason != "" {
			note += ": " + t.Reason
		}
		r.Recorder.Eventf(s.cluster, nil, typ, t.Kind, "Replication", "%s", note)
	}
}

// emitWritesBlocked records an Event when a member's primary starts to block its writes (a Warning) and when
// they go on again, as the hub reads it.
func (r *MySQLClusterReconciler) emitWritesBlocked(s *scope, m v1alpha1.MemberStatus) {
	if r.Recorder == nil || m.Replication == nil {
		return
	}
	was := ""
	if prev := previousMember(s.before, m.Name).Replication; prev != nil {
		was = prev.WritesBlocked
	}
	now := m.Replication.WritesBlocked
	switch {
	case now != "" && was == "":
		r.Recorder.Eventf(s.cluster, nil, corev1.EventTypeWarning, v1alpha1.ReasonWritesBlocked, "Replication",
			"member %s: no commit on %s returns: %s", m.Name, m.Replication.Primary, now)
	case now == "" && was != "":
		r.Recorder.Eventf(s.cluster, nil, corev1.EventTypeNormal, "WritesResumed", "Replication",
			"member %s: commits on %s return again", m.Name, m.Replication.Primary)
	}
}

// emitAsyncWindow records a Warning Event when a member's primary starts to return commits without a replica
// holding them (durability Preferred) and a Normal one when semi-sync is on again, as the hub reads it.
func (r *MySQLClusterReconciler) emitAsyncWindow(s *scope, m v1alpha1.MemberStatus) {
	if r.Recorder == nil || m.Replication == nil {
		return
	}
	var was *metav1.Time
	if prev := previousMember(s.before, m.Name).Replication; prev != nil {
		was = prev.AsyncSince
	}
	now := m.Replication.AsyncSince
	switch {
	case now != nil && (was == nil || !was.Equal(now)):
		r.Recorder.Eventf(s.cluster, nil, corev1.EventTypeWarning, v1alpha1.ReasonDurabilityDegraded, "Replication",
			"member %s: commits on %s return without a replica holding them: %s", m.Name, m.Replication.Primary,
			m.Replication.Async)
	case now == nil && was != nil:
		r.Recorder.Eventf(s.cluster, nil, corev1.EventTypeNormal, "DurabilityRestored", "Replication",
			"member %s: semi-sync is on again on %s; commits returned unacknowledged since %s", m.Name,
			m.Replication.Primary, was.UTC().Format(time.RFC3339))
	}
}

// newRebuilds are the rebuilds in the member's report that its previous status row did not hold, oldest first.
// A rebuild is told by its Pod and time: the same Pod rebuilt again is a new one.
func newRebuilds(before *v1alpha1.MySQLClusterStatus, now v1alpha1.MemberStatus) []v1alpha1.ServerRebuild {
	if now.Replication == nil {
		return nil
	}
	var seen []v1alpha1.ServerRebuild
	if prev := previousMember(before, now.Name).Replication; prev != nil {
		seen = prev.Rebuilds
	}
	var out []v1alpha1.ServerRebuild
	for _, rb := range slices.Backward(now.Replication.Rebuilds) {
		if !slices.ContainsFunc(seen, func(p v1alpha1.ServerRebuild) bool { return p.Pod == rb.Pod && p.Time.Equal(&rb.Time) }) {
			out = append(out, rb)
		}
	}
	return out
}

// emitRebuilds records a Normal Event for each server the member controller rebuilt since the last status
// write, with the transactions it discarded: the one place besides the status that names them.
func (r *MySQLClusterReconciler) emitRebuilds(s *scope, m v1alpha1.MemberStatus) {
	if r.Recorder == nil {
		return
	}
	for _, rb := range newRebuilds(s.before, m) {
		discarded := "no transactions"
		if rb.Discarded != "" {
			discarded = "transactions " + rb.Discarded
		}
		why := rb.Reason
		if rb.Request != "" {
			why = orText(why, "requested") + " (request " + rb.Request + ")"
		}
		r.Recorder.Eventf(s.cluster, nil, corev1.EventTypeNormal, "ServerRebuilt", "Rebuild",
			"member %s: %s was emptied and is seeded again, discarding %s%s", m.Name, rb.Pod, discarded, suffix(why))
	}
}
