package mysqlcluster

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// archiveVerdict decides the Archived condition of a MySQLCluster with spec.backup.archive from what each
// member's controller reports: True while every member's archive is Archiving with no gap after its newest
// backup; False naming the members that are Behind (with the newest transaction they stored), then those with
// a gap, then those that have not reported an archive (a member controller of an earlier release, or none
// yet). The worst of these gives the reason. Messages hold only what the reports hold, never an age.
func archiveVerdict(members []v1alpha1.MemberStatus) verdict {
	var behind, gaps, unreported []string
	for _, m := range members {
		a, open := m.Archive, gapsAfterNewestBackup(m)
		switch {
		case a == nil:
			unreported = append(unreported, m.Name)
		case a.State == v1alpha1.ArchiveBehind:
			latest := "nothing stored by this leader yet"
			if a.LatestTime != nil {
				latest = "newest stored transaction " + a.LatestTime.UTC().Format(time.RFC3339)
			}
			if a.Error != "" {
				latest += ": " + a.Error
			}
			behind = append(behind, fmt.Sprintf("%s (%s)", m.Name, latest))
		case len(open) > 0:
			var says []string
			for _, g := range open {
				says = append(says, gapString(g))
			}
			gaps = append(gaps, fmt.Sprintf("%s (%s)", m.Name, strings.Join(says, "; ")))
		}
	}
	for _, l := range [][]string{behind, gaps, unreported} {
		sort.Strings(l)
	}
	var parts []string
	if len(behind) > 0 {
		parts = append(parts, "behind its maxRecoveryPointAge: "+strings.Join(behind, ", "))
	}
	if len(gaps) > 0 {
		parts = append(parts, "a gap after the newest backup (take a backup to restore past it): "+strings.Join(gaps, ", "))
	}
	if len(unreported) > 0 {
		parts = append(parts, "no archive reported: "+strings.Join(unreported, ", "))
	}
	switch {
	case len(behind) > 0:
		return verdict{false, v1alpha1.ReasonArchiveBehind, strings.Join(parts, "; ")}
	case len(gaps) > 0:
		return verdict{false, v1alpha1.ReasonArchiveGap, strings.Join(parts, "; ")}
	case len(unreported) > 0:
		return verdict{false, v1alpha1.ReasonArchiveUnreported, strings.Join(parts, "; ")}
	}
	return verdict{true, v1alpha1.ReasonArchiving, "every member's binary-log archive is within its maxRecoveryPointAge"}
}

// gapsAfterNewestBackup are the gaps of a member's archive that its newest successful backup does not hold the
// far side of: no restore reaches a time after them. Those before it only shorten older backups' windows.
func gapsAfterNewestBackup(m v1alpha1.MemberStatus) []v1alpha1.ArchiveGap {
	if m.Archive == nil {
		return nil
	}
	var newest string
	if m.Backups != nil && m.Backups.LastSuccessful != nil {
		newest = m.Backups.LastSuccessful.GTIDPosition
	}
	var out []v1alpha1.ArchiveGap
	for _, g := range m.Archive.Gaps {
		if !mysql.TextContains(mysql.MariaDBFlavor{}, newest, g.To) {
			out = append(out, g)
		}
	}
	return out
}

// gapString says where a gap is.
func gapString(g v1alpha1.ArchiveGap) string {
	s := "from " + g.From + " to " + g.To
	if g.Reached != nil {
		s += ", the last transaction before it at " + g.Reached.UTC().Format(time.RFC3339)
	}
	return s
}

// setArchiveCondition sets or removes Archived.
func (s *scope) setArchiveCondition() {
	c := s.cluster
	if c.Spec.Backup == nil || c.Spec.Backup.Archive == nil || c.Spec.Engine != v1alpha1.EngineMariaDB || len(s.members) == 0 {
		meta.RemoveStatusCondition(&c.Status.Conditions, v1alpha1.ConditionArchived)
		return
	}
	v := archiveVerdict(s.members)
	status := metav1.ConditionFalse
	if v.ok {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&c.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionArchived, Status: status,
		Reason: v.reason, Message: v.message, ObservedGeneration: c.Generation})
}
