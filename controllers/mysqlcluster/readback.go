package mysqlcluster

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// readBack reports how far the member got: ready replicas, bound volumes, backups. It counts only objects that
// carry this MySQLCluster's UID: a predecessor's StatefulSet or volumes of the same name are not its own. While
// a scale-down is held (hold not nil), the held Pods are the ones that should be ready, and the member is not
// Ready: it is on its way to spec.replicas. Reading is readMember's; what the reads mean is decided by
// memberReadout's methods, which make no request.
func (r *MySQLClusterReconciler) readBack(ctx context.Context, mc client.Client, c *v1alpha1.MySQLCluster,
	st v1alpha1.MemberStatus, conds memberConditions, hold *scaleDownHold) v1alpha1.MemberStatus {
	conds.st = &st
	rd := readMember(ctx, mc, c)
	rd.counts(&st)
	if st.Phase == v1alpha1.PhasePaused {
		return st
	}
	if rd.sts != nil {
		// The member controller's report on this StatefulSet (by UID) says whether the servers replicate.
		rd.report, rd.reportErr = readReport(ctx, mc, rd.sts)
	}
	rd.judge(c, &st, conds, hold, metav1.Now())
	return st
}

// memberReadout is what reading a member back found.
type memberReadout struct {
	// sts is this MySQLCluster's StatefulSet; nil when there is none, it is another's, or it could not be read.
	sts *appsv1.StatefulSet
	// boundVolumes counts this MySQLCluster's bound data claims.
	boundVolumes int32
	// cronJob tells that its backup CronJob was read, and lastScheduled is that CronJob's last run.
	cronJob       bool
	lastScheduled *metav1.Time
	// errs are the reads that failed.
	errs []string
	// report is the member controller's report on sts, reportErr why it could not be read.
	report    *v1alpha1.ReplicationReport
	reportErr error
}

// readMember reads the member's StatefulSet, data claims and backup CronJob, from the member's cache.
func readMember(ctx context.Context, mc client.Client, c *v1alpha1.MySQLCluster) *memberReadout {
	rd := &memberReadout{}
	var sts appsv1.StatefulSet
	switch err := mc.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.StatefulSetName()}, &sts); {
	case apierrors.IsNotFound(err):
	case err != nil:
		rd.errs = append(rd.errs, err.Error())
	case sts.Labels[v1alpha1.ClusterUIDLabel] == string(c.UID):
		rd.sts = &sts // a predecessor's is not counted
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := mc.List(ctx, &pvcs, client.InNamespace(c.Namespace), client.MatchingLabels(dataVolumeSelector(c))); err != nil {
		rd.errs = append(rd.errs, err.Error())
	}
	for _, p := range pvcs.Items {
		if p.Status.Phase == corev1.ClaimBound {
			rd.boundVolumes++
		}
	}
	if c.Spec.Backup == nil {
		return rd
	}
	var cj batchv1.CronJob
	switch err := mc.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.BackupCronJobName()}, &cj); {
	case apierrors.IsNotFound(err):
	case err != nil:
		rd.errs = append(rd.errs, err.Error())
	case cj.Labels[v1alpha1.ClusterUIDLabel] == string(c.UID):
		// The last successful backup is the member controller's word, from the backup's manifest (judge),
		// never the CronJob's: a Job that exits 0 without a manifest made no backup.
		rd.cronJob, rd.lastScheduled = true, cj.Status.LastScheduleTime
	}
	return rd
}

// counts puts what was counted into the row, and the reads that failed into its last error.
func (rd *memberReadout) counts(st *v1alpha1.MemberStatus) {
	if rd.sts != nil {
		st.ReadyReplicas = rd.sts.Status.ReadyReplicas
	}
	st.BoundVolumes += rd.boundVolumes
	if rd.cronJob {
		st.LastScheduledBackup = rd.lastScheduled
	}
	if len(rd.errs) > 0 && st.LastError == "" {
		st.LastError = "reading back: " + strings.Join(rd.errs, "; ")
	}
}

// podsReady tells whether the StatefulSet has rolled out pods Pods, every one ready.
func (rd *memberReadout) podsReady(pods int32) bool {
	return rd.sts != nil && len(rd.errs) == 0 && rd.sts.Status.ObservedGeneration >= rd.sts.Generation &&
		rd.sts.Status.ReadyReplicas == pods && rd.sts.Status.UpdatedReplicas == pods
}

// judge sets the member's conditions and phase from what was read back; now is when the report was read.
func (rd *memberReadout) judge(c *v1alpha1.MySQLCluster, st *v1alpha1.MemberStatus, conds memberConditions,
	hold *scaleDownHold, now metav1.Time) {
	pods := c.Spec.Replicas
	if hold != nil {
		pods = hold.pods
	}
	podsReady := rd.podsReady(pods)
	msg := fmt.Sprintf("%d/%d Pods ready", st.ReadyReplicas, pods)
	if podsReady {
		conds.set(v1alpha1.MemberConditionPodsReady, true, v1alpha1.ReasonPodsReady, msg)
	} else {
		conds.set(v1alpha1.MemberConditionPodsReady, false, v1alpha1.ReasonPodsNotReady, msg)
	}
	if rd.reportErr != nil && st.LastError == "" {
		st.LastError = "reading back: " + rd.reportErr.Error()
	}
	repl := reportReplication(c, st, rd.report, now)
	switch {
	case !podsReady:
		conds.set(v1alpha1.MemberConditionReady, false, v1alpha1.ReasonPodsNotReady, msg)
	case repl.status != metav1.ConditionTrue:
		conds.set(v1alpha1.MemberConditionReady, false, repl.reason, repl.message)
	case hold != nil:
		conds.set(v1alpha1.MemberConditionReady, false, v1alpha1.ReasonScaleDownPending, hold.message)
	default:
		conds.set(v1alpha1.MemberConditionReady, true, v1alpha1.ReasonServing, repl.message)
	}
	if st.Phase == "" {
		st.Phase = memberPhase(st, podsReady && repl.status == metav1.ConditionTrue && hold == nil, repl)
	}
}

// replicationFinding is the member's Replicating verdict.
type replicationFinding struct {
	status          metav1.ConditionStatus
	reason, message string
	// needsPerson: the servers will not replicate again without someone's decision.
	needsPerson bool
}

// reportReplication puts the member controller's report (nil while there is none) into the row: replication,
// backups, restore, and the Replicating and PrimaryAsRequested conditions.
func reportReplication(c *v1alpha1.MySQLCluster, st *v1alpha1.MemberStatus, rep *v1alpha1.ReplicationReport,
	now metav1.Time) replicationFinding {
	st.Replication = memberReplication(rep, st.Replication, now)
	if rep != nil {
		st.Backups, st.Restore, st.Archive = rep.Backups.DeepCopy(), rep.Restore.DeepCopy(), rep.Archive.DeepCopy()
	}
	st.LastBackup = nil
	if st.Backups != nil && st.Backups.LastSuccessful != nil {
		t := st.Backups.LastSuccessful.Time
		st.LastBackup = &t
	}
	var f replicationFinding
	f.status, f.reason, f.message, f.needsPerson = replicationVerdict(c.Spec.Replicas, c.StatefulSetName(),
		c.Spec.ErrantServers, rep, st.Replication)
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.MemberConditionReplicating,
		Status: f.status, Reason: f.reason, Message: f.message, ObservedGeneration: c.Generation})

	if st.Replication != nil {
		st.Replication.RequestedPrimary = requestedPrimary(c, st.Name)
	}
	if sw, swReason, swMsg, ok := switchoverVerdict(requestedPrimary(c, st.Name), rep); ok {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.MemberConditionPrimaryAsRequested,
			Status: sw, Reason: swReason, Message: swMsg, ObservedGeneration: c.Generation})
	} else {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.MemberConditionPrimaryAsRequested)
	}
	return f
}

// memberPhase sums up a member that applied without failing: ready when it serves as asked, otherwise how far
// it is. It also names in LastError, if nothing else is there, what needs a person.
func memberPhase(st *v1alpha1.MemberStatus, ready bool, repl replicationFinding) v1alpha1.Phase {
	switch {
	case ready:
		return v1alpha1.PhaseReady
	case st.Restore != nil && st.Restore.Phase == v1alpha1.RestoreFailed:
		if st.LastError == "" {
			st.LastError = "the restore failed: " + st.Restore.Reason
		}
		return v1alpha1.PhaseDegraded
	case st.Restore != nil && st.Restore.Phase == v1alpha1.RestorePending:
		return v1alpha1.PhaseRestoring
	case repl.needsPerson:
		if st.LastError == "" {
			st.LastError = repl.message
		}
		return v1alpha1.PhaseDegraded
	}
	return v1alpha1.PhaseProgressing
}
