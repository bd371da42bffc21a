package mysqlcluster_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
	"github.com/mysqlfleet/mysqlfleet/test/backuptest"
	"github.com/mysqlfleet/mysqlfleet/test/dbpods"
)

// backedSet stands real servers behind every Pod of a MySQLCluster in a member, booted with what the hub rendered
// there (my.cnf, the accounts' init script), once the Pods exist.
func backedSet(t *testing.T, g Gomega, servers *dbpods.Servers, member string, c *v1alpha1.MySQLCluster) {
	t.Helper()
	ctx := context.Background()
	mc := members[member]
	var cm corev1.ConfigMap
	var secret corev1.Secret
	g.Eventually(func() error {
		if err := mc.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.ConfigMapName()}, &cm); err != nil {
			return err
		}
		return mc.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.CredentialsSecretName()}, &secret)
	}, time.Minute, 250*time.Millisecond).Should(Succeed())
	for i := range c.Spec.Replicas {
		servers.StartWithRoot(fmt.Sprintf("%s-%d", c.StatefulSetName(), i), cm.Data[render.MyCnfKey],
			string(secret.Data[v1alpha1.InitScriptKey]), string(secret.Data[v1alpha1.RootPasswordKey]))
	}
}

// dumpJobsOnFailure logs the member's Jobs and their Pods, with the runner's reports, when the test fails.
func dumpJobsOnFailure(t *testing.T, member, ns string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		ctx := context.Background()
		var jobs batchv1.JobList
		if err := members[member].List(ctx, &jobs, client.InNamespace(ns)); err == nil {
			for _, j := range jobs.Items {
				t.Logf("Job %s: active %d succeeded %d failed %d conditions %+v", j.Name, j.Status.Active,
					j.Status.Succeeded, j.Status.Failed, j.Status.Conditions)
			}
		}
		var pods corev1.PodList
		if err := members[member].List(ctx, &pods, client.InNamespace(ns)); err == nil {
			for _, p := range pods.Items {
				t.Logf("Pod %s: %s %+v", p.Name, p.Status.Phase, p.Status.ContainerStatuses)
			}
		}
	})
}

// requestBackup asks for a backup in the member now, as `mysqlfleet backup NAME --member M` does: the annotation
// v1alpha1.BackupNowAnnotation, a second after the member's last outcome.
func requestBackup(g Gomega, key client.ObjectKey, member string) {
	update(g, key, func(c *v1alpha1.MySQLCluster) {
		at := metav1.NewTime(time.Now().UTC().Truncate(time.Second))
		if ms := memberStatus(c, member); ms != nil && ms.Backups != nil {
			for _, t := range []*metav1.Time{lastTime(ms.Backups)} {
				if t != nil && !at.After(t.Time) {
					at = metav1.NewTime(t.Add(time.Second))
				}
			}
		}
		requests := v1alpha1.BackupRequests(c.Annotations[v1alpha1.BackupNowAnnotation])
		requests[member] = at
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[v1alpha1.BackupNowAnnotation] = v1alpha1.FormatBackupRequests(requests)
	})
}

// lastTime is the newest outcome a member reports.
func lastTime(b *v1alpha1.MemberBackups) *metav1.Time {
	var t *metav1.Time
	if b.LastSuccessful != nil {
		t = &b.LastSuccessful.Time
	}
	if b.LastFailure != nil && (t == nil || t.Before(&b.LastFailure.Time)) {
		t = &b.LastFailure.Time
	}
	return t
}

// checksums are CHECKSUM TABLE of every table of the database shop, and its routines, on one server.
func checksums(g Gomega, s *sql.DB) map[string]string {
	out := map[string]string{}
	rows, err := s.Query("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'shop' ORDER BY 1")
	g.Expect(err).NotTo(HaveOccurred())
	var tables []string
	for rows.Next() {
		var n string
		g.Expect(rows.Scan(&n)).To(Succeed())
		tables = append(tables, n)
	}
	g.Expect(rows.Close()).To(Succeed())
	for _, tbl := range tables {
		var name string
		var sum sql.NullString
		g.Expect(s.QueryRow("CHECKSUM TABLE shop."+tbl).Scan(&name, &sum)).To(Succeed())
		out["table "+tbl] = sum.String
	}
	rows, err = s.Query("SELECT ROUTINE_NAME, ROUTINE_DEFINITION FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = 'shop'")
	g.Expect(err).NotTo(HaveOccurred())
	for rows.Next() {
		var n, def string
		g.Expect(rows.Scan(&n, &def)).To(Succeed())
		out["routine "+n] = def
	}
	g.Expect(rows.Close()).To(Succeed())
	return out
}

// lastSuccessful is the hub's last successful backup of the member, "" for none.
func lastSuccessful(g Gomega, key client.ObjectKey, member string) string {
	ms := memberStatus(get(g, key), member)
	if ms == nil || ms.Backups == nil || ms.Backups.LastSuccessful == nil {
		return ""
	}
	return ms.Backups.LastSuccessful.Name
}

// Backups run by the backup CronJob's Jobs (the rendered Pod spec run for real by the test fleet's jobs runner:
// the backup runner, a real mariadb-dump, real S3 and GCS servers and a volume) and restored into new
// MySQLClusters: the hub shows each backup from its manifest, a failed backup with its reason and without
// counting it, and each restored set, primary and replica, holds every table and routine of the source, with
// the same checksums.
func TestBackupAndRestoreOnRealServers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s3srv, gcs := backuptest.StartS3(t), backuptest.StartGCS(t)
	const ns = "bk"
	secrets := map[string]map[string]string{"s3-creds": s3srv.Env(), "gcs-creds": gcs.Env()}
	src := newCluster(ns, "src", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Engine, c.Spec.Version, c.Spec.Replicas = v1alpha1.EngineMariaDB, "10.11", 2
		c.Spec.Placement.Members = []string{aws}
		c.Spec.Backup = &v1alpha1.Backup{Schedule: "@daily", Retention: 3, Target: v1alpha1.BackupTarget{
			PVC: &v1alpha1.PVCTarget{Size: resource.MustParse("1Gi")}}}
	})
	// The store's credentials Secrets are the user's to put in the member (mysqlfleet never copies them).
	if err := members[aws].Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil &&
		!apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	create(t, src)
	dumpJobsOnFailure(t, aws, ns)
	for name, data := range secrets {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
		g.Expect(members[aws].Create(ctx, sec)).To(Succeed())
	}
	srcKey := client.ObjectKeyFromObject(src)
	servers := dbpods.New(t)
	fleet.Member(aws).SetPodAddresses(func(p *corev1.Pod) (string, error) {
		a, err := servers.MySQLAddr(p)
		return a.String(), err
	})
	t.Cleanup(func() { fleet.Member(aws).SetPodAddresses(nil) })
	eventuallyConverged(g, srcKey)
	backedSet(t, g, servers, aws, src)
	startMemberController(t, aws, servers.Resolve)
	g.Eventually(func() string { return get(g, srcKey).Status.Serving }, 2*time.Minute, 250*time.Millisecond).
		Should(Equal("2/2"))

	primary := servers.Server("src-0").OpenRoot()
	for _, q := range []string{
		"CREATE DATABASE shop",
		"CREATE TABLE shop.orders (id INT AUTO_INCREMENT PRIMARY KEY, amount DECIMAL(10,2), note TEXT)",
		"CREATE TABLE shop.customers (id INT PRIMARY KEY, name VARCHAR(64) CHARACTER SET utf8mb4)",
		"CREATE PROCEDURE shop.place(IN a DECIMAL(10,2)) INSERT INTO shop.orders (amount, note) VALUES (a, 'placed')",
		"INSERT INTO shop.customers VALUES (1, 'Grüße ✓'), (2, 'it''s')",
	} {
		_, err := primary.Exec(q)
		g.Expect(err).NotTo(HaveOccurred(), q)
	}
	for i := range 50 {
		_, err := primary.Exec("CALL shop.place(?)", fmt.Sprintf("%d.%02d", i, i))
		g.Expect(err).NotTo(HaveOccurred())
	}
	want := checksums(g, primary)
	g.Expect(want).To(HaveKey("routine place"))

	targets := []struct {
		name   string
		target v1alpha1.BackupTarget
	}{
		{"pvc", v1alpha1.BackupTarget{PVC: &v1alpha1.PVCTarget{Size: resource.MustParse("1Gi")}}},
		{"s3", v1alpha1.BackupTarget{S3: &v1alpha1.BucketTarget{Bucket: backuptest.Bucket, Endpoint: s3srv.Endpoint,
			Prefix: "fleet", CredentialsSecretRef: v1alpha1.SecretReference{Name: "s3-creds"}}}},
		{"gcs", v1alpha1.BackupTarget{GCS: &v1alpha1.BucketTarget{Bucket: backuptest.Bucket, Endpoint: gcs.Endpoint,
			CredentialsSecretRef: v1alpha1.SecretReference{Name: "gcs-creds"}}}},
	}
	for _, tt := range targets {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			before := lastSuccessful(g, srcKey, aws)
			update(g, srcKey, func(c *v1alpha1.MySQLCluster) { c.Spec.Backup.Target = tt.target })
			g.Eventually(func() string {
				var cj batchv1.CronJob
				g.Expect(members[aws].Get(ctx, client.ObjectKey{Namespace: ns, Name: src.BackupCronJobName()}, &cj)).To(Succeed())
				env := cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Env
				for _, e := range env {
					if e.Name == "BACKUP_TARGET" {
						return e.Value
					}
				}
				return ""
			}, time.Minute, 250*time.Millisecond).Should(Equal(map[string]string{"pvc": "dir", "s3": "s3", "gcs": "gcs"}[tt.name]))
			requestBackup(g, srcKey, aws)
			g.Eventually(func() string { return lastSuccessful(g, srcKey, aws) }, 2*time.Minute, 250*time.Millisecond).
				ShouldNot(Or(BeEmpty(), Equal(before)))
			got := get(g, srcKey)
			b := memberStatus(got, aws).Backups.LastSuccessful
			g.Expect(b.Pod).To(Equal("src-1"), "taken from the replica")
			g.Expect(b.Size).To(BeNumerically(">", 0))
			g.Expect(b.GTIDPosition).NotTo(BeEmpty())
			g.Expect(got.Status.LastBackup).NotTo(BeNil())

			// A new MySQLCluster restored from it: every table and routine on its primary and its replica.
			dst := newCluster(ns, "dst-"+tt.name, func(c *v1alpha1.MySQLCluster) {
				c.Spec.Engine, c.Spec.Version, c.Spec.Replicas = v1alpha1.EngineMariaDB, "10.11", 2
				c.Spec.Placement.Members = []string{aws}
				c.Spec.Restore = &v1alpha1.Restore{Source: v1alpha1.RestoreSource{Cluster: "src"}}
			})
			create(t, dst)
			dstKey := client.ObjectKeyFromObject(dst)
			backedSet(t, g, servers, aws, dst)
			g.Eventually(func() v1alpha1.Phase { return get(g, dstKey).Status.Phase }, 2*time.Minute,
				250*time.Millisecond).Should(Equal(v1alpha1.PhaseReady))
			restored := get(g, dstKey)
			g.Expect(restored.Status.RestoredFrom).To(Equal(&v1alpha1.RestoredFrom{Cluster: "src", Namespace: ns, Member: aws}))
			ms := memberStatus(restored, aws)
			g.Expect(ms.Restore).NotTo(BeNil())
			g.Expect(ms.Restore.Phase).To(Equal(v1alpha1.RestoreSucceeded))
			g.Expect(ms.Restore.Backup.Name).To(Equal(b.Name), "the newest backup")
			for _, pod := range []string{"dst-" + tt.name + "-0", "dst-" + tt.name + "-1"} {
				db := servers.Server(pod).OpenRoot()
				g.Eventually(func() map[string]string { return checksums(g, db) }, time.Minute, 250*time.Millisecond).
					Should(Equal(want), pod)
			}
			g.Expect(hub.Delete(ctx, restored)).To(Succeed())
			eventuallyGone(g, dstKey)
		})
	}

	t.Run("a restore that fails leaves the cluster not Ready, with the reason", func(t *testing.T) {
		g := NewWithT(t)
		dst := newCluster(ns, "dst-missing", func(c *v1alpha1.MySQLCluster) {
			c.Spec.Engine, c.Spec.Version, c.Spec.Replicas = v1alpha1.EngineMariaDB, "10.11", 1
			c.Spec.Placement.Members = []string{aws}
			c.Spec.Restore = &v1alpha1.Restore{Source: v1alpha1.RestoreSource{Cluster: "src"},
				Backup: "20200101T000000000Z"}
		})
		create(t, dst)
		dstKey := client.ObjectKeyFromObject(dst)
		backedSet(t, g, servers, aws, dst)
		g.Eventually(func() *v1alpha1.MemberRestore {
			if ms := memberStatus(get(g, dstKey), aws); ms != nil {
				return ms.Restore
			}
			return nil
		}, 2*time.Minute, 250*time.Millisecond).Should(And(Not(BeNil()),
			HaveField("Phase", v1alpha1.RestoreFailed), HaveField("Reason", ContainSubstring("20200101T000000000Z"))))
		got := get(g, dstKey)
		g.Expect(got.Status.Phase).To(Equal(v1alpha1.PhaseDegraded))
		g.Expect(condition(got, v1alpha1.ConditionReady)).To(Equal(metav1.ConditionFalse))
		// Nothing was made writable over the half-loaded server.
		g.Expect(memberStatus(got, aws).Replication.Primary).To(BeEmpty())
		g.Expect(hub.Delete(ctx, got)).To(Succeed())
		eventuallyGone(g, dstKey)
	})

	t.Run("a failed backup is reported and does not count", func(t *testing.T) {
		g := NewWithT(t)
		before := lastSuccessful(g, srcKey, aws)
		var sec corev1.Secret
		g.Expect(members[aws].Get(ctx, client.ObjectKey{Namespace: ns, Name: "gcs-creds"}, &sec)).To(Succeed())
		// The GCS emulator refuses a bucket that does not exist: the upload fails after the dump started.
		update(g, srcKey, func(c *v1alpha1.MySQLCluster) { c.Spec.Backup.Target.GCS.Bucket = "no-such-bucket" })
		g.Eventually(func() bool {
			var cj batchv1.CronJob
			g.Expect(members[aws].Get(ctx, client.ObjectKey{Namespace: ns, Name: src.BackupCronJobName()}, &cj)).To(Succeed())
			return slices.ContainsFunc(cj.Spec.JobTemplate.Spec.Template.Spec.Containers[0].Env,
				func(e corev1.EnvVar) bool { return e.Value == "no-such-bucket" })
		}, time.Minute, 250*time.Millisecond).Should(BeTrue())
		requestBackup(g, srcKey, aws)
		g.Eventually(func() *v1alpha1.BackupFailure {
			ms := memberStatus(get(g, srcKey), aws)
			if ms.Backups == nil {
				return nil
			}
			return ms.Backups.LastFailure
		}, 2*time.Minute, 250*time.Millisecond).Should(And(Not(BeNil()), HaveField("Reason", ContainSubstring("no-such-bucket"))))
		g.Expect(lastSuccessful(g, srcKey, aws)).To(Equal(before), "a failed backup is not the last backup")
	})
	g.Expect(hub.Delete(ctx, get(g, srcKey))).To(Succeed())
	eventuallyGone(g, srcKey)
}
