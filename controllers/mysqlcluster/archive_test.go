package mysqlcluster_test

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// With spec.backup.archive the hub asks each member's controller for the archive on the StatefulSet (the
// backups' own store and prefix, the credentials Secret, the two bounds), shows what the member controller
// reports in the member's row, and sums it up in the Archived condition; without it, neither.
func TestArchiveAskedOfMembersAndReportedOnTheHub(t *testing.T) {
	g := NewWithT(t)
	c := newCluster("archives", "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Engine, c.Spec.Version = v1alpha1.EngineMariaDB, "10.11"
		c.Spec.Placement.Members = []string{aws}
		c.Spec.Backup = &v1alpha1.Backup{Schedule: "@daily", Target: v1alpha1.BackupTarget{S3: &v1alpha1.BucketTarget{
			Bucket: "backups", Endpoint: "http://s3.example:9000", Prefix: "fleet",
			CredentialsSecretRef: v1alpha1.SecretReference{Name: "s3-creds"}}},
			Archive: &v1alpha1.BackupArchive{MaxSegmentAge: &metav1.Duration{Duration: 2 * time.Second}}}
	})
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	eventuallyConverged(g, key)

	request := func() *v1alpha1.ArchiveRequest {
		v, ok := statefulSet(g, aws, key).Annotations[v1alpha1.ArchiveAnnotation]
		if !ok {
			return nil
		}
		var r v1alpha1.ArchiveRequest
		g.Expect(json.Unmarshal([]byte(v), &r)).To(Succeed())
		return &r
	}
	g.Eventually(request, 30*time.Second, 100*time.Millisecond).Should(Equal(&v1alpha1.ArchiveRequest{
		Target: "s3", Bucket: "backups", Endpoint: "http://s3.example:9000", Prefix: "fleet/" + aws + "/archives/db",
		CredentialsSecret: "s3-creds", MaxSegmentAge: "2s", MaxRecoveryPointAge: "1m0s"}))
	archived := func() metav1.Condition { return findCondition(get(g, key), v1alpha1.ConditionArchived) }
	g.Eventually(archived, 30*time.Second, 100*time.Millisecond).Should(And(
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", v1alpha1.ReasonArchiveUnreported),
		HaveField("Message", "no archive reported: "+aws)))

	sts := statefulSet(g, aws, key)
	latest := metav1.NewTime(time.Date(2026, 12, 8, 2, 0, 0, 0, time.UTC).Local())
	since := metav1.NewTime(time.Date(2026, 12, 8, 1, 0, 0, 0, time.UTC).Local())
	ok := &v1alpha1.MemberArchive{State: v1alpha1.ArchiveArchiving, Since: since, Source: "db-0",
		LatestTime: &latest, LatestPosition: "0-70001-42"}
	rep := v1alpha1.ReplicationReport{Primary: "db-0", Decision: v1alpha1.ReplicationDecision{Kind: "Steady"},
		Instances: []v1alpha1.ReplicationInstance{{Pod: "db-0", Role: v1alpha1.ReplicationRolePrimary}}, Archive: ok}
	writeReport(g, aws, sts, rep)
	g.Eventually(func() *v1alpha1.MemberArchive { return memberStatus(get(g, key), aws).Archive },
		30*time.Second, 100*time.Millisecond).Should(Equal(ok))
	g.Eventually(archived, 30*time.Second, 100*time.Millisecond).Should(And(
		HaveField("Status", metav1.ConditionTrue), HaveField("Reason", v1alpha1.ReasonArchiving)))

	rep.Archive = &v1alpha1.MemberArchive{State: v1alpha1.ArchiveBehind, Since: since, LatestTime: &latest,
		LatestPosition: "0-70001-42", Error: "failed to store segment 000000000043: access denied"}
	writeReport(g, aws, sts, rep)
	g.Eventually(archived, 30*time.Second, 100*time.Millisecond).Should(And(
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", v1alpha1.ReasonArchiveBehind),
		HaveField("Message", "behind its maxRecoveryPointAge: "+aws+" (newest stored transaction "+
			"2026-12-08T02:00:00Z: failed to store segment 000000000043: access denied)")))

	// A gap after the newest backup: False until a backup holds its far side.
	rep.Archive = ok.DeepCopy()
	rep.Archive.Gaps = []v1alpha1.ArchiveGap{{From: "0-70001-20", To: "0-70001-25", Reached: &since}}
	rep.Backups = &v1alpha1.MemberBackups{LastSuccessful: &v1alpha1.BackupRecord{Name: "20261208T000000000Z",
		Time: since, GTIDPosition: "0-70001-10"}}
	writeReport(g, aws, sts, rep)
	g.Eventually(archived, 30*time.Second, 100*time.Millisecond).Should(And(
		HaveField("Status", metav1.ConditionFalse), HaveField("Reason", v1alpha1.ReasonArchiveGap),
		HaveField("Message", "a gap after the newest backup (take a backup to restore past it): "+aws+
			" (from 0-70001-20 to 0-70001-25, the last transaction before it at 2026-12-08T01:00:00Z)")))
	rep.Backups.LastSuccessful.GTIDPosition = "0-70001-30"
	writeReport(g, aws, sts, rep)
	g.Eventually(archived, 30*time.Second, 100*time.Millisecond).Should(HaveField("Status", metav1.ConditionTrue))

	update(g, key, func(c *v1alpha1.MySQLCluster) { c.Spec.Backup.Archive = nil })
	g.Eventually(request, 30*time.Second, 100*time.Millisecond).Should(BeNil())
	g.Eventually(func() []metav1.Condition { return get(g, key).Status.Conditions }, 30*time.Second,
		100*time.Millisecond).ShouldNot(ContainElement(HaveField("Type", v1alpha1.ConditionArchived)))
}
