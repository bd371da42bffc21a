package mysqlcluster

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// backupVerdict decides the BackedUp condition of a MySQLCluster with spec.backup: True while every member has
// a successful backup (from its manifest) no older than two scheduled runs, that is while the second scheduled
// run after it is still to come; False, naming the members, once one misses it (a member that never had one
// counts from the MySQLCluster's creation). It also returns when the verdict changes next without any event
// (the earliest such deadline still ahead), so that the MySQLCluster is looked at again then. Messages hold
// only times that do not move (the last backup's), never an age.
func backupVerdict(c *v1alpha1.MySQLCluster, members []v1alpha1.MemberStatus, now time.Time) (verdict, time.Time) {
	var stale []string
	var next time.Time
	for _, m := range members {
		sched, err := cron.ParseStandard(m.BackupSchedule)
		if err != nil {
			continue // an invalid schedule is reported as such (InvalidBackupSchedule)
		}
		since := c.CreationTimestamp.Time
		last := "none yet"
		if b := m.Backups; b != nil && b.LastSuccessful != nil {
			since = b.LastSuccessful.Time.Time
			last = "the last at " + since.UTC().Format(time.RFC3339)
		}
		deadline := sched.Next(sched.Next(since))
		if !now.Before(deadline) {
			stale = append(stale, fmt.Sprintf("%s (%s; schedule %s)", m.Name, last, m.BackupSchedule))
			continue
		}
		if next.IsZero() || deadline.Before(next) {
			next = deadline
		}
	}
	if len(stale) > 0 {
		sort.Strings(stale)
		return verdict{false, v1alpha1.ReasonBackupsStale, "no successful backup within two scheduled runs: " +
			strings.Join(stale, "; ")}, next
	}
	return verdict{true, v1alpha1.ReasonBackupsCurrent, "every member has a successful backup within two scheduled runs"}, next
}

// setBackupCondition sets or removes BackedUp and tells when to look again.
func (s *scope) setBackupCondition(now time.Time) time.Time {
	c := s.cluster
	if c.Spec.Backup == nil || c.Spec.Backup.Suspend || len(s.members) == 0 {
		meta.RemoveStatusCondition(&c.Status.Conditions, v1alpha1.ConditionBackedUp)
		return time.Time{}
	}
	v, next := backupVerdict(c, s.members, now)
	status := metav1.ConditionFalse
	if v.ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionBackedUp, Status: status,
		Reason: v.reason, Message: v.message, ObservedGeneration: c.Generation})
	return next
}
