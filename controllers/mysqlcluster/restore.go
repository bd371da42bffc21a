package mysqlcluster

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// restorePlan is where spec.restore's backups are, as resolved on the hub.
type restorePlan struct {
	from   v1alpha1.RestoredFrom
	target v1alpha1.BackupTarget
	backup string
}

// resolveRestore finds where spec.restore's backups are: the source MySQLCluster's backup target (or
// spec.restore.target), and its member whose backups are restored (spec.restore.member, or the one with the
// newest successful backup). The choice is kept in status.restoredFrom, so that it never changes under a
// restore Job, whose template cannot change. A source that cannot be resolved is a spec error: the
// MySQLCluster waits, with the reason, and nothing is written to the source.
func (r *MySQLClusterReconciler) resolveRestore(ctx context.Context, s *scope) {
	c := s.cluster
	rs := c.Spec.Restore
	if rs == nil {
		return
	}
	ns := rs.Source.Namespace
	if ns == "" {
		ns = c.Namespace
	}
	from := v1alpha1.RestoredFrom{Cluster: rs.Source.Cluster, Namespace: ns, Member: rs.Member}
	if prev := s.before.RestoredFrom; prev != nil {
		from = *prev
	}
	var src v1alpha1.MySQLCluster
	err := r.Hub.Get(ctx, client.ObjectKey{Namespace: ns, Name: rs.Source.Cluster}, &src)
	switch {
	case apierrors.IsNotFound(err):
		if rs.Target == nil || from.Member == "" {
			s.restoreErr = fmt.Errorf("%w: spec.restore: the source MySQLCluster %s/%s does not exist: name its "+
				"backups with spec.restore.target and spec.restore.member", render.ErrInvalid, ns, rs.Source.Cluster)
			return
		}
	case err != nil:
		s.restoreErr = fmt.Errorf("failed to read the restore source %s/%s: %w", ns, rs.Source.Cluster, err)
		return
	}
	plan := &restorePlan{from: from, backup: rs.Backup}
	switch {
	case rs.Target != nil:
		plan.target = *rs.Target
	case src.Spec.Backup != nil:
		plan.target = src.Spec.Backup.Target
	default:
		s.restoreErr = fmt.Errorf("%w: spec.restore: the source MySQLCluster %s/%s has no backup target: set "+
			"spec.restore.target", render.ErrInvalid, ns, rs.Source.Cluster)
		return
	}
	if plan.from.Member == "" {
		plan.from.Member = newestBackupMember(&src)
		if plan.from.Member == "" {
			s.restoreErr = fmt.Errorf("%w: spec.restore: the source MySQLCluster %s/%s reports no successful "+
				"backup in any member: wait for one, or name the member with spec.restore.member",
				render.ErrInvalid, ns, rs.Source.Cluster)
			return
		}
	}
	if err := logicalBackupToRestore(&src, plan.from.Member, plan.backup); err != nil {
		s.restoreErr = err
		return
	}
	if plan.target.PVC != nil && ns != c.Namespace {
		s.restoreErr = fmt.Errorf("%w: spec.restore: backups on a volume (a PVC target) can be restored only in "+
			"their own namespace, %s; restore from an object store to another namespace", render.ErrInvalid, ns)
		return
	}
	s.restore = plan
	c.Status.RestoredFrom = &plan.from
}

// logicalBackupToRestore refuses, before any restore Job runs, a restore that can only fail there: the restore
// Job loads logical backups only (physical ones are restored by hand for now, docs/backups.md), so a named backup
// that the source's status shows as physical, or no name where every backup the member reports is physical, is
// a spec error. What the source does not report (a deleted source, a backup older than its status shows) is left
// to the Job, which says so itself.
func logicalBackupToRestore(src *v1alpha1.MySQLCluster, member, backup string) error {
	var records []v1alpha1.BackupRecord
	for _, m := range src.Status.Members {
		if m.Name == member && m.Backups != nil {
			records = m.Backups.Retained
			if m.Backups.LastSuccessful != nil {
				records = append(records, *m.Backups.LastSuccessful)
			}
		}
	}
	logical := false
	for _, r := range records {
		if r.Method == v1alpha1.BackupPhysical && r.Name == backup {
			return fmt.Errorf("%w: spec.restore: backup %s of %s/%s in member %s is physical, and a restore loads "+
				"logical backups only: name a logical one, or restore it by hand (mysqlfleet-backup restore "+
				"--method physical)", render.ErrInvalid, backup, src.Namespace, src.Name, member)
		}
		logical = logical || r.Method != v1alpha1.BackupPhysical
	}
	if backup == "" && len(records) > 0 && !logical {
		return fmt.Errorf("%w: spec.restore: every backup of %s/%s that member %s reports is physical, and a "+
			"restore loads logical backups only: name a logical one with spec.restore.backup, or restore by hand "+
			"(mysqlfleet-backup restore --method physical)", render.ErrInvalid, src.Namespace, src.Name, member)
	}
	return nil
}

// newestBackupMember is the member of src whose last successful backup is the newest, "" if none has one.
func newestBackupMember(src *v1alpha1.MySQLCluster) string {
	best := ""
	var at *v1alpha1.BackupRecord
	for _, m := range src.Status.Members {
		if m.Backups == nil || m.Backups.LastSuccessful == nil {
			continue
		}
		if at == nil || at.Time.Before(&m.Backups.LastSuccessful.Time) {
			best, at = m.Name, m.Backups.LastSuccessful
		}
	}
	return best
}

// restoreFor is where member m restores from, or why it cannot: a PVC target's backups are only in the member
// that holds the volume.
func (p *restorePlan) restoreFor(member string) (*render.RestoreSource, error) {
	rs := &render.RestoreSource{Target: p.target, Backup: p.backup,
		Prefix: render.TargetPrefix(p.target, p.from.Member, p.from.Namespace, p.from.Cluster)}
	if p.target.PVC != nil {
		if member != p.from.Member {
			return nil, fmt.Errorf("%w: spec.restore: the backups of %s/%s are on a volume in member %s; a member "+
				"other than that one can restore only from an object store", render.ErrInvalid, p.from.Namespace,
				p.from.Cluster, p.from.Member)
		}
		rs.SourcePVC = p.from.Cluster + "-backup"
	}
	return rs, nil
}

// restoreFor is where member m restores spec.restore's backup from.
func (s *scope) restoreFor(member string) (*render.RestoreSource, error) {
	if s.restoreErr != nil {
		return nil, s.restoreErr
	}
	return s.restore.restoreFor(member)
}

func (r *MySQLClusterReconciler) runnerImage() string {
	if r.RunnerImage == "" {
		return render.DefaultRunnerImage
	}
	return r.RunnerImage
}

// backupRequested is the time a backup was asked for now in the member (v1alpha1.BackupNowAnnotation), while the
// member has reported no backup outcome (success or failure) since.
func backupRequested(c *v1alpha1.MySQLCluster, prev v1alpha1.MemberStatus) (time.Time, bool) {
	if c.Spec.Backup == nil {
		return time.Time{}, false
	}
	at, ok := v1alpha1.BackupRequests(c.Annotations[v1alpha1.BackupNowAnnotation])[prev.Name]
	if !ok {
		return time.Time{}, false
	}
	if b := prev.Backups; b != nil {
		for _, t := range []*metav1.Time{timeOf(b.LastSuccessful), failureTime(b.LastFailure)} {
			if t != nil && !t.Before(&at) {
				return time.Time{}, false
			}
		}
	}
	return at.Time, true
}

func timeOf(r *v1alpha1.BackupRecord) *metav1.Time {
	if r == nil {
		return nil
	}
	return &r.Time
}

func failureTime(f *v1alpha1.BackupFailure) *metav1.Time {
	if f == nil {
		return nil
	}
	return &f.Time
}
