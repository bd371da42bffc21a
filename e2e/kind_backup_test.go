//go:build e2e

package e2e

import (
	"os/exec"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
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
})
