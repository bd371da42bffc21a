package member

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// The backup and restore Jobs the hub renders run the backup runner, which leaves its outcome (the backup's
// manifest, or the error) in its container's termination message (v1alpha1.JobReport). The member controller
// reads it from the Jobs' Pods and publishes it in the set's report, where it outlives the Pods: a CronJob keeps
// only a few finished Jobs. A backup counts only with its manifest: a Job that ended without one (its Pod
// succeeded but the runner wrote nothing) is a failure, never a backup.

// jobOutcome is what one finished backup or restore Pod says.
type jobOutcome struct {
	pod      string
	job      string
	ended    metav1.Time
	backup   *v1alpha1.BackupRecord
	retained []v1alpha1.BackupRecord
	reason   string // why it failed; empty with a backup
}

// maxRetained is how many retained backups a report keeps (the API's limit).
const maxRetained = 25

func record(b v1alpha1.JobReportBackup) v1alpha1.BackupRecord {
	method := v1alpha1.BackupLogical
	if b.Method == "physical" {
		method = v1alpha1.BackupPhysical
	}
	return v1alpha1.BackupRecord{Name: b.Name, Time: metav1.NewTime(b.EndTime.UTC().Truncate(time.Second)),
		DurationMilliseconds: int64(b.DurationSeconds * 1000), Size: b.Size, GTIDPosition: b.GTIDPosition, Pod: b.Pod,
		Method: method}
}

// outcomeOf reads a finished Pod's runner report; ok is false while the Pod has not ended.
func outcomeOf(p *corev1.Pod) (jobOutcome, bool) {
	if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
		return jobOutcome{}, false
	}
	o := jobOutcome{pod: p.Name, job: p.Labels[batchv1.JobNameLabel], ended: p.CreationTimestamp}
	var term *corev1.ContainerStateTerminated
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Terminated != nil && (term == nil || cs.Name == render.BackupContainerName) {
			term = cs.State.Terminated
		}
	}
	if term != nil && !term.FinishedAt.IsZero() {
		o.ended = term.FinishedAt
	}
	var rep v1alpha1.JobReport
	msg := ""
	if term != nil {
		msg = strings.TrimSpace(term.Message)
	}
	switch {
	case msg == "":
	case json.Unmarshal([]byte(msg), &rep) != nil:
		o.reason = "the runner's report cannot be read: " + truncate(msg, 200)
		return o, true
	}
	switch {
	case rep.Error != "":
		o.reason = rep.Error
	case rep.Backup != nil && p.Status.Phase == corev1.PodSucceeded:
		b := record(*rep.Backup)
		o.backup = &b
		for _, r := range rep.Retained {
			if len(o.retained) < maxRetained {
				o.retained = append(o.retained, record(r))
			}
		}
	case p.Status.Phase == corev1.PodFailed:
		o.reason = "the Job's Pod failed"
		if term != nil && term.Reason != "" {
			o.reason += ": " + term.Reason
		}
	default:
		o.reason = "the Job's Pod ended without a backup manifest"
	}
	return o, true
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// jobPods lists the finished Pods of the MySQLCluster's Jobs of one component (backup or restore).
func (r *Reconciler) jobPods(ctx context.Context, s *scope, component string) ([]jobOutcome, error) {
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(s.sts.Namespace), client.MatchingLabels{
		v1alpha1.InstanceLabel: s.sts.Name, v1alpha1.ComponentLabel: component,
	}); err != nil {
		return nil, fmt.Errorf("failed to list the %s Pods: %w", component, err)
	}
	var out []jobOutcome
	for i := range pods.Items {
		if o, ok := outcomeOf(&pods.Items[i]); ok {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ended.Before(&out[j].ended) })
	return out, nil
}

// backups merges what the finished backup Pods say into what the report said before: the newest successful
// backup, and the newest failure when it is newer than that.
func backups(prev *v1alpha1.MemberBackups, outcomes []jobOutcome) *v1alpha1.MemberBackups {
	out := &v1alpha1.MemberBackups{}
	if prev != nil {
		out = prev.DeepCopy()
	}
	for _, o := range outcomes {
		if o.backup != nil {
			if out.LastSuccessful == nil || out.LastSuccessful.Time.Before(&o.backup.Time) ||
				(out.LastSuccessful.Time.Equal(&o.backup.Time) && out.LastSuccessful.Name != o.backup.Name) {
				out.LastSuccessful = o.backup
				out.Retained = o.retained
			}
			continue
		}
		if out.LastFailure == nil || out.LastFailure.Time.Before(&o.ended) {
			out.LastFailure = &v1alpha1.BackupFailure{Time: o.ended, Job: o.job, Reason: o.reason}
		}
	}
	if out.LastFailure != nil && out.LastSuccessful != nil && !out.LastSuccessful.Time.Before(&out.LastFailure.Time) {
		out.LastFailure = nil
	}
	if out.LastFailure == nil && out.LastSuccessful == nil {
		return nil
	}
	return out
}

// restoreState is how the set's restore Job (v1alpha1.RestoreJobAnnotation) went: nil without one.
func (r *Reconciler) restoreState(ctx context.Context, s *scope) (*v1alpha1.MemberRestore, error) {
	name := s.sts.Annotations[v1alpha1.RestoreJobAnnotation]
	if name == "" {
		return nil, nil
	}
	var job batchv1.Job
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: s.sts.Namespace, Name: name}, &job)
	switch {
	case apierrors.IsNotFound(err):
		if s.prev != nil && s.prev.Restore != nil && s.prev.Restore.Phase != v1alpha1.RestorePending {
			return s.prev.Restore, nil // the Job was removed after it finished: its outcome stays
		}
		return &v1alpha1.MemberRestore{Phase: v1alpha1.RestorePending, Reason: "waiting for Job " + name}, nil
	case err != nil:
		return nil, fmt.Errorf("failed to get the restore Job %s: %w", name, err)
	}
	outcomes, err := r.jobPods(ctx, s, render.ComponentRestore)
	if err != nil {
		return nil, err
	}
	var last *jobOutcome
	for i := range outcomes {
		if outcomes[i].job == name {
			last = &outcomes[i]
		}
	}
	switch {
	case job.Status.Succeeded > 0:
		st := &v1alpha1.MemberRestore{Phase: v1alpha1.RestoreSucceeded}
		if last != nil {
			st.Backup = last.backup
		}
		return st, nil
	case jobFailed(&job):
		st := &v1alpha1.MemberRestore{Phase: v1alpha1.RestoreFailed, Reason: "the restore Job failed"}
		if last != nil && last.reason != "" {
			st.Reason = last.reason
		}
		return st, nil
	}
	return &v1alpha1.MemberRestore{Phase: v1alpha1.RestorePending}, nil
}

func jobFailed(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// jobRequests maps a backup, restore or seed Job, or one of their Pods, to the set it belongs to.
func jobRequests(_ context.Context, obj client.Object) []reconcile.Request {
	l := obj.GetLabels()
	switch l[v1alpha1.ComponentLabel] {
	case render.ComponentBackup, render.ComponentRestore, SeedComponent:
	default:
		return nil
	}
	if l[v1alpha1.InstanceLabel] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(),
		Name: l[v1alpha1.InstanceLabel]}}}
}
