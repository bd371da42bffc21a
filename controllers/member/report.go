package member

import (
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/clustering"
)

// Kinds of the report's decision when the set could not be observed at all (no credentials, unknown engine),
// and while it waits for its restore Job.
const (
	kindUnobserved = "Unobserved"
	kindRestoring  = "Restoring"
)

// buildReport turns one pass into the published report. execErr is the error of the plan's execution; prev is
// the report published before (nil for none), whose last transition carries over until a new one completes.
// Lag is rounded down to whole seconds, which is what the servers measure anyway, and nothing that changes
// while the set is idle (such as executed GTID sets) goes in.
func buildReport(sts *appsv1.StatefulSet, plan clustering.Plan, execErr error,
	prev *v1alpha1.ReplicationReport) v1alpha1.ReplicationReport {
	rep := v1alpha1.ReplicationReport{
		Decision:  decisionOf(sts, plan.Decision),
		LastError: plan.Report.LastError,
	}
	if p := plan.Report.Primary; p >= 0 {
		rep.Primary = podName(sts, p)
	}
	for _, in := range plan.Report.Instances {
		ri := v1alpha1.ReplicationInstance{
			Pod:         podName(sts, in.Index),
			Role:        v1alpha1.ReplicationRole(in.Role),
			InSync:      in.InSync,
			ErrantGTIDs: in.Errant,
			Error:       in.Error,
		}
		if in.Lag != nil {
			ri.LagSeconds = ptr.To(int64(in.Lag.Seconds()))
		}
		rep.Instances = append(rep.Instances, ri)
	}
	if prev != nil {
		rep.LastTransition = prev.LastTransition
	}
	rep.WritesBlocked = plan.Report.WritesBlocked
	if k := plan.Report.ShrinkReady; k > 0 && execErr == nil {
		rep.ScaleDownReady = ptr.To(int32(k))
	}
	if execErr != nil {
		rep.LastError = execErr.Error()
	} else if plan.Completed != nil {
		t := decisionOf(sts, *plan.Completed)
		rep.LastTransition = &t
	}
	return rep
}

// asyncWindow puts the engine's Async into the report with the time its window opened: the previous report's
// while the window lasts, now when it opens. The report thus changes only when a window opens or closes.
func asyncWindow(rep *v1alpha1.ReplicationReport, plan clustering.Plan, prev *v1alpha1.ReplicationReport,
	now metav1.Time) {
	if rep.Async = plan.Report.Async; rep.Async == "" {
		return
	}
	rep.AsyncSince = &now
	if prev != nil && prev.AsyncSince != nil {
		rep.AsyncSince = prev.AsyncSince
	}
}

// asyncCommits puts into the report the primary's count of commits that returned without a semi-sync
// acknowledgement, as observed in the pass.
func asyncCommits(rep *v1alpha1.ReplicationReport, plan clustering.Plan, obs []clustering.Observation) {
	p := plan.Report.Primary
	if p < 0 || p >= len(obs) || p >= len(rep.Instances) || !obs[p].Reachable() || obs[p].Status.SemiSync == nil {
		return
	}
	rep.Instances[p].AsyncCommits = obs[p].Status.SemiSync.AsyncCommits
}

// unobservedReport is the report of a pass that could not look at the servers at all: it says why and claims
// nothing about them.
func unobservedReport(prev *v1alpha1.ReplicationReport, err error) v1alpha1.ReplicationReport {
	rep := v1alpha1.ReplicationReport{
		Decision:  v1alpha1.ReplicationDecision{Kind: kindUnobserved, Reason: err.Error()},
		LastError: err.Error(),
	}
	if prev != nil {
		// Nor is a window of durability Preferred closed by a pass that could not look.
		rep.LastTransition, rep.Async, rep.AsyncSince = prev.LastTransition, prev.Async, prev.AsyncSince
	}
	return rep
}

func decisionOf(sts *appsv1.StatefulSet, d clustering.Decision) v1alpha1.ReplicationDecision {
	out := v1alpha1.ReplicationDecision{Kind: string(d.Kind), Reason: d.Reason}
	if d.From >= 0 {
		out.From = podName(sts, d.From)
	}
	if d.To >= 0 {
		out.To = podName(sts, d.To)
	}
	return out
}

// roleLabel is the RoleLabel value an instance's Pod should carry: primary, replica (in sync only: the
// <name>-replicas Service must not send reads to a replica that lags beyond the bound), or none ("").
func roleLabel(in v1alpha1.ReplicationInstance) string {
	switch {
	case in.Role == v1alpha1.ReplicationRolePrimary:
		return v1alpha1.RolePrimary
	case in.Role == v1alpha1.ReplicationRoleReplica && in.InSync:
		return v1alpha1.RoleReplica
	}
	return ""
}

// labelChange is a change of one Pod's role label; Value "" removes the label. Demotes tells a change that takes
// role=primary away.
type labelChange struct {
	Pod     string
	Value   string
	Demotes bool
}

// roleLabelChanges compares the Pods' role labels with the report. When the pass's plan failed, labels are
// only removed, never set: a role the plan did not establish must not attract clients (a Service selecting
// primary Pods must never select one that may still be read-only or fenced). pods are by ordinal, nil for a
// missing Pod.
//
// The changes that take role=primary away come first, whatever the ordinals: applied in that order (see
// reconcileRoleLabels), no moment has two Pods labelled primary, which the <name>-primary Service would send
// writes to both of (the old one fenced, so those writes fail, or not yet fenced in a partition).
//
// A pass that starts a failover keeps the replica labels of the replicas it reached: it stopped their receivers
// itself, so they report no role, but they hold everything the lost primary sent them and the next pass, at
// once, promotes one of them. Taking the labels away would empty <name>-replicas for the length of a failover
// and change a Service just before the primary's endpoints change; kube-proxy syncs every Service at once, at
// most once a second, and would hold the primary's endpoints back by up to that second (measured on kind:
// the first write after a kill -9 came about 1.2 s after the replicas' labels went, whenever they went first).
// A switchover whose plan succeeded keeps them too: its report was read before the plan pointed them at the
// new primary, which holds everything they held, so they are still replicas in sync (on kind, taking the
// labels away emptied <name>-replicas for a tenth of a second in every switchover).
func roleLabelChanges(pods []*corev1.Pod, rep v1alpha1.ReplicationReport, planFailed bool) []labelChange {
	want, keep := map[string]string{}, map[string]bool{}
	keeping := rep.Decision.Kind == string(clustering.FailoverStarted) ||
		(rep.Decision.Kind == string(clustering.Switchover) && !planFailed)
	for _, in := range rep.Instances {
		want[in.Pod] = roleLabel(in)
		keep[in.Pod] = keeping && in.Role == v1alpha1.ReplicationRoleNone
	}
	var demote, out []labelChange
	for _, p := range pods {
		if p == nil {
			continue
		}
		// A Pod the report does not cover (the set could not be observed) keeps its label: nothing is known.
		w, ok := want[p.Name]
		if !ok {
			continue
		}
		have := p.Labels[v1alpha1.RoleLabel]
		if keep[p.Name] && have == v1alpha1.RoleReplica {
			continue
		}
		switch {
		case have == w:
		case have == v1alpha1.RolePrimary && (w == "" || !planFailed):
			demote = append(demote, labelChange{Pod: p.Name, Value: w, Demotes: true})
		case w == "":
			out = append(out, labelChange{Pod: p.Name})
		case !planFailed:
			out = append(out, labelChange{Pod: p.Name, Value: w})
		}
	}
	return append(demote, out...)
}

// reportConfigMap is the ConfigMap holding the report (none when rep is nil) and the record: labels naming the hub object as the
// StatefulSet's do (but no ClusterUIDLabel, see StatefulSetUIDAnnotation) plus the component, and an owner
// reference to the StatefulSet so that the member's garbage collector removes it with the set. The owner
// reference does not block the owner's deletion, which would need update on statefulsets/finalizers.
func reportConfigMap(sts *appsv1.StatefulSet, rep *v1alpha1.ReplicationReport, rec clustering.Record) (
	*corev1.ConfigMap, error) {
	recJSON, err := json.Marshal(rec)
	if err != nil {
		return nil, fmt.Errorf("failed to encode the replication record: %w", err)
	}
	labels := map[string]string{
		v1alpha1.ManagedByLabel:            v1alpha1.ManagedByValue,
		v1alpha1.ReplicationComponentLabel: v1alpha1.ReplicationComponent,
	}
	for _, k := range []string{v1alpha1.ClusterNameLabel, v1alpha1.ClusterNamespaceLabel} {
		if v := sts.Labels[k]; v != "" {
			labels[k] = v
		}
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:        v1alpha1.ReplicationReportName(sts.Name),
			Namespace:   sts.Namespace,
			Labels:      labels,
			Annotations: map[string]string{v1alpha1.StatefulSetUIDAnnotation: string(sts.UID)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: appsv1.SchemeGroupVersion.String(),
				Kind:       "StatefulSet",
				Name:       sts.Name,
				UID:        sts.UID,
				Controller: ptr.To(true),
			}},
		},
		Data: map[string]string{v1alpha1.ReplicationRecordKey: string(recJSON)},
	}
	if rep != nil {
		repJSON, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("failed to encode the replication report: %w", err)
		}
		cm.Data[v1alpha1.ReplicationReportKey] = string(repJSON) + "\n"
	}
	return cm, nil
}

// merged is live with desired's labels, annotations, owner reference and data laid over it; whatever else
// others put on the ConfigMap stays.
func merged(live, desired *corev1.ConfigMap) *corev1.ConfigMap {
	out := live.DeepCopy()
	if out.Labels == nil {
		out.Labels = map[string]string{}
	}
	for k, v := range desired.Labels {
		out.Labels[k] = v
	}
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	for k, v := range desired.Annotations {
		out.Annotations[k] = v
	}
	if out.Data == nil {
		out.Data = map[string]string{}
	}
	for k, v := range desired.Data {
		out.Data[k] = v
	}
	ref := desired.OwnerReferences[0]
	found := false
	for i, r := range out.OwnerReferences {
		if r.UID == ref.UID {
			out.OwnerReferences[i], found = ref, true
		}
	}
	if !found {
		out.OwnerReferences = append(out.OwnerReferences, ref)
	}
	return out
}

// readReport and readRecord decode what a live ConfigMap holds. A missing key is no report, or the zero record
// (no primary yet); a record that cannot be decoded is an error, never the zero record: acting on a lost
// memory could bootstrap over a running set.
func readReport(cm *corev1.ConfigMap) *v1alpha1.ReplicationReport {
	if cm == nil || cm.Data[v1alpha1.ReplicationReportKey] == "" {
		return nil
	}
	var r v1alpha1.ReplicationReport
	if err := json.Unmarshal([]byte(cm.Data[v1alpha1.ReplicationReportKey]), &r); err != nil {
		return nil // it is rewritten at the end of the pass
	}
	return &r
}

func readRecord(cm *corev1.ConfigMap) (clustering.Record, error) {
	var r clustering.Record
	if cm == nil || cm.Data[v1alpha1.ReplicationRecordKey] == "" {
		return r, nil
	}
	if err := json.Unmarshal([]byte(cm.Data[v1alpha1.ReplicationRecordKey]), &r); err != nil {
		return r, fmt.Errorf("the record in ConfigMap %s/%s (key %s) cannot be read, and the controller will not "+
			"act without it: %w", cm.Namespace, cm.Name, v1alpha1.ReplicationRecordKey, err)
	}
	return r, nil
}
