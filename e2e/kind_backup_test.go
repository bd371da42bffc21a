//go:build e2e

package e2e

import (
	"context"
	"os/exec"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// Backups taken by the backup runner from a real server into a real volume, and restored into a new MySQLCluster
// by its restore Job, as docs/backups.md says.
var _ = Describe("Backup and restore on real Pods", Label(string(RealPods), string(Backup)), func() {
	It("backs up a replica into the backup volume on request, and restores that backup into a new MySQLCluster", func(ctx SpecContext) {
		names := memberNames()
		member := names[len(names)-1]
		src := mysqlCluster("archive", "catalog", []string{member})
		src.Spec.Replicas, src.Spec.Database = 2, "catalog"
		src.Spec.DeletionPolicy = v1alpha1.DeletionPolicyDelete
		src.Spec.Backup = &v1alpha1.Backup{Schedule: "H 3 * * *", Retention: 3, Target: v1alpha1.BackupTarget{
			PVC: &v1alpha1.PVCTarget{Size: resource.MustParse("1Gi")},
		}}
		create(ctx, src)
		key := client.ObjectKeyFromObject(src)
		DeferCleanup(func(ctx SpecContext) { deleteAndWait(ctx, key) })
		got := eventuallyReadyWithin(ctx, key, 8*time.Minute)
		primary := memberStatus(got, member).Replication.Primary
		Expect(primary).NotTo(BeEmpty())

		By("writing rows on the primary and waiting until the replica has applied them")
		Expect(runSQL(ctx, member, key, src.PrimaryServiceName(), "root", v1alpha1.RootPasswordKey,
			"CREATE TABLE catalog.titles (id INT PRIMARY KEY, title VARCHAR(64)); "+
				"INSERT INTO catalog.titles VALUES (1, 'dune'), (2, 'emma'); SELECT 'written'")).To(Equal("written"))
		Eventually(func() (string, error) {
			return querySQL(ctx, member, key, src.ReplicasServiceName(), "root", v1alpha1.RootPasswordKey,
				"SELECT COUNT(*) FROM catalog.titles")
		}).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Equal("2"))

		By("asking for a backup now: mysqlfleet backup catalog -n archive --member " + member)
		out, err := exec.CommandContext(ctx, cli, "--kubeconfig", hub.KubeconfigPath, "backup", key.Name,
			"-n", key.Namespace, "--member", member).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		var rec *v1alpha1.BackupRecord
		Eventually(func(g Gomega) {
			b := memberStatus(get(ctx, key), member).Backups
			g.Expect(b).NotTo(BeNil())
			g.Expect(b.LastFailure).To(BeNil())
			g.Expect(b.LastSuccessful).NotTo(BeNil())
			rec = b.LastSuccessful
		}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(rec.Pod).To(BeElementOf("catalog-0", "catalog-1"))
		Expect(rec.Pod).NotTo(Equal(primary), "a replica in sync is dumped when there is one")
		Expect(rec.Size).To(BeNumerically(">", 0))
		Expect(rec.GTIDPosition).NotTo(BeEmpty())
		out, err = exec.CommandContext(ctx, cli, "--kubeconfig", hub.KubeconfigPath, "backups", key.Name,
			"-n", key.Namespace).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		Expect(string(out)).To(ContainSubstring(rec.Name))

		By("writing a row after the backup, which a restore of it must not bring back")
		Expect(runSQL(ctx, member, key, src.PrimaryServiceName(), "root", v1alpha1.RootPasswordKey,
			"INSERT INTO catalog.titles VALUES (3, 'later'); SELECT 'written'")).To(Equal("written"))

		By("restoring backup " + rec.Name + " into a new MySQLCluster with a replica")
		dst := mysqlCluster("archive", "catalog-restored", []string{member})
		dst.Spec.Replicas = 2
		dst.Spec.DeletionPolicy = v1alpha1.DeletionPolicyDelete
		dst.Spec.Restore = &v1alpha1.Restore{Source: v1alpha1.RestoreSource{Cluster: key.Name}, Member: member, Backup: rec.Name}
		create(ctx, dst)
		dstKey := client.ObjectKeyFromObject(dst)
		DeferCleanup(func(ctx SpecContext) { deleteAndWait(ctx, dstKey) })
		restored := eventuallyReadyWithin(ctx, dstKey, 8*time.Minute)
		Expect(restored.Status.RestoredFrom).To(Equal(&v1alpha1.RestoredFrom{Cluster: key.Name, Namespace: key.Namespace, Member: member}))
		Expect(runSQL(ctx, member, dstKey, dst.PrimaryServiceName(), "root", v1alpha1.RootPasswordKey,
			"SELECT GROUP_CONCAT(title ORDER BY id) FROM catalog.titles")).To(Equal("dune,emma"))
		Eventually(func() (string, error) {
			return querySQL(ctx, member, dstKey, dst.ReplicasServiceName(), "root", v1alpha1.RootPasswordKey,
				"SELECT GROUP_CONCAT(title ORDER BY id) FROM catalog.titles")
		}).WithTimeout(2*time.Minute).WithPolling(2*time.Second).Should(Equal("dune,emma"), "the replica replicates the restored data")
		Expect(runSQL(ctx, member, dstKey, dst.PrimaryServiceName(), "root", v1alpha1.RootPasswordKey,
			"INSERT INTO catalog.titles VALUES (4, 'new'); SELECT 'written'")).To(Equal("written"), "the restored set takes writes")
	})

	It("takes a physical backup of a replica through its backup agent, which restores into a new data directory", func(ctx SpecContext) {
		names := memberNames()
		member := names[len(names)-1]
		src := mysqlCluster("archive", "ledger", []string{member})
		if src.Spec.Engine != v1alpha1.EngineMariaDB {
			Fail("the kind tier runs MariaDB, whose physical backups this spec takes; the provider's engine is " +
				string(src.Spec.Engine))
		}
		src.Spec.Replicas, src.Spec.Database = 2, "catalog"
		src.Spec.DeletionPolicy = v1alpha1.DeletionPolicyDelete
		src.Spec.Backup = &v1alpha1.Backup{Schedule: "H 3 * * *", Retention: 3, Method: v1alpha1.BackupPhysical,
			Target: v1alpha1.BackupTarget{PVC: &v1alpha1.PVCTarget{Size: resource.MustParse("1Gi")}}}
		create(ctx, src)
		key := client.ObjectKeyFromObject(src)
		DeferCleanup(func(ctx SpecContext) { deleteAndWait(ctx, key) })
		got := eventuallyReadyWithin(ctx, key, 8*time.Minute)
		primary := memberStatus(got, member).Replication.Primary
		Expect(primary).NotTo(BeEmpty())
		sts := statefulSet(ctx, member, key)
		Expect(sts.Spec.Template.Spec.InitContainers).To(HaveLen(2), "the runner's installer and the backup agent")

		By("writing rows on the primary and waiting until the replica has applied them")
		Expect(runSQL(ctx, member, key, src.PrimaryServiceName(), "root", v1alpha1.RootPasswordKey,
			"CREATE TABLE catalog.titles (id INT PRIMARY KEY, title VARCHAR(64)); "+
				"INSERT INTO catalog.titles VALUES (1, 'dune'), (2, 'emma'); SELECT 'written'")).To(Equal("written"))
		Eventually(func() (string, error) {
			return querySQL(ctx, member, key, src.ReplicasServiceName(), "root", v1alpha1.RootPasswordKey,
				"SELECT COUNT(*) FROM catalog.titles")
		}).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Equal("2"))

		By("asking for a backup now: mysqlfleet backup ledger -n archive --member " + member)
		out, err := exec.CommandContext(ctx, cli, "--kubeconfig", hub.KubeconfigPath, "backup", key.Name,
			"-n", key.Namespace, "--member", member).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		var rec *v1alpha1.BackupRecord
		Eventually(func(g Gomega) {
			b := memberStatus(get(ctx, key), member).Backups
			g.Expect(b).NotTo(BeNil())
			g.Expect(b.LastFailure).To(BeNil())
			g.Expect(b.LastSuccessful).NotTo(BeNil())
			rec = b.LastSuccessful
		}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(rec.Method).To(Equal(v1alpha1.BackupPhysical))
		Expect(rec.Pod).To(BeElementOf("ledger-0", "ledger-1"))
		Expect(rec.Pod).NotTo(Equal(primary), "the agent of a replica in sync copies it when there is one")
		Expect(rec.Size).To(BeNumerically(">", 0))
		Expect(rec.GTIDPosition).NotTo(BeEmpty())
		Expect(runSQL(ctx, member, key, src.PrimaryServiceName(), "root", v1alpha1.RootPasswordKey,
			"INSERT INTO catalog.titles VALUES (3, 'later'); SELECT 'written'")).To(Equal("written"))

		By("restoring backup " + rec.Name + " from the backup volume into a new data directory and starting a server on it")
		restored := restorePhysicalByHand(ctx, member, key, sts, rec.Name,
			"SELECT GROUP_CONCAT(title ORDER BY id) FROM catalog.titles")
		Expect(restored).To(Equal("dune,emma"), "the rows of the backup, not the one written after it")
	})
})

// restorePhysicalByHand runs, in a Pod of the member, the restore of a physical backup in the backup volume of
// key (mysqlfleet-backup restore --method physical, as docs/backups.md says to do by hand) into a new data
// directory, starts mariadbd on it without networking or grants, and returns the output of sql there.
func restorePhysicalByHand(ctx context.Context, member string, key client.ObjectKey, sts *appsv1.StatefulSet, backup, sql string) string {
	cs := memberClientset(member)
	image := sts.Spec.Template.Spec.Containers[0].Image
	runnerImage := sts.Spec.Template.Spec.InitContainers[0].Image
	name := "restore-" + rand.String(6)
	script := `set -e
r=/tmp/restore
mkdir -p $r
/mysqlfleet/mysqlfleet-backup restore --method physical --target dir --dir /backup --name "$BACKUP" \
  --datadir $r/data --work-dir $r >&2
mariadbd --no-defaults --datadir=$r/data --socket=$r/s.sock --pid-file=$r/s.pid --skip-networking \
  --skip-grant-tables --log-error=$r/error.log &
i=0
until mariadb --socket=$r/s.sock -e 'SELECT 1' >/dev/null 2>&1; do
  i=$((i + 1)); [ "$i" -lt 60 ] || { cat $r/error.log >&2; exit 1; }; sleep 1
done
mariadb --socket=$r/s.sock --batch --skip-column-names -e "$SQL"
echo "` + sqlEnd + `"`
	noEscalation := &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](999),
				RunAsGroup: ptr.To[int64](999), FSGroup: ptr.To[int64](999),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			InitContainers: []corev1.Container{{
				Name: "install-runner", Image: runnerImage, ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{"/mysqlfleet-backup", "install", "/mysqlfleet/mysqlfleet-backup"},
				VolumeMounts:    []corev1.VolumeMount{{Name: "runner", MountPath: "/mysqlfleet"}},
				SecurityContext: noEscalation,
			}},
			Containers: []corev1.Container{{
				Name: "restore", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sh", "-c", script},
				Env:     []corev1.EnvVar{{Name: "BACKUP", Value: backup}, {Name: "SQL", Value: sql}},
				VolumeMounts: []corev1.VolumeMount{{Name: "runner", MountPath: "/mysqlfleet", ReadOnly: true},
					{Name: "backup", MountPath: "/backup", ReadOnly: true}},
				SecurityContext: noEscalation,
			}},
			Volumes: []corev1.Volume{
				{Name: "runner", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "backup", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
					ClaimName: key.Name + "-backup", ReadOnly: true}}},
			},
		},
	}
	_, err := cs.CoreV1().Pods(key.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	defer deleteClient(ctx, member, key.Namespace, name)
	logs, phase := waitClient(ctx, member, key.Namespace, name, 5*time.Minute)
	Expect(phase).To(Equal(corev1.PodSucceeded), logs)
	for i := 0; !strings.Contains(logs, sqlEnd) && i < 30; i++ {
		time.Sleep(time.Second)
		if l, err := clientLogs(ctx, member, key.Namespace, name); err == nil {
			logs = l
		}
	}
	out, complete := strings.CutSuffix(strings.TrimSpace(logs), sqlEnd)
	Expect(complete).To(BeTrue(), "the restore Pod's output has no end: %s", logs)
	// The runner's and the server's lines go to standard error, which the log interleaves: the answer is the
	// last line before the end marker.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
