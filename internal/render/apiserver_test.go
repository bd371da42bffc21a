package render

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	batchv1ac "k8s.io/client-go/applyconfigurations/batch/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

// TestAgainstAPIServer applies the rendered objects to a real API server. It checks what a table cannot: that the
// server accepts them, that extracting mysqlfleet's fields from the live objects gives back exactly what was
// rendered (the controller's no-op check depends on it: server defaults inside atomic fields would break it), and
// that the Pods pass the restricted Pod Security Standard. It needs kube-apiserver and etcd (make tools).
func TestAgainstAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	g := NewWithT(t)
	cfg := testfleet.APIServer(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	opts := metav1.ApplyOptions{FieldManager: v1alpha1.FieldManager, Force: true}

	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: "restricted", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"},
	}}, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	for name, target := range map[string]v1alpha1.BackupTarget{
		"pvc": pvcTarget(), "s3": s3Target("https://minio.example.com"), "gcs": gcsTarget("https://storage.example.com"),
		"azure": azureTarget("https://acct.blob.core.windows.net"), "physical": s3Target("https://minio.example.com"),
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			c := fullCluster(withBackup("H H(1-4) * * *", target))
			if name == "physical" {
				// MariaDB with physical backups: the Pods run the backup agent, the Services publish it.
				c.Spec.Engine, c.Spec.Version = v1alpha1.EngineMariaDB, "10.11"
				c.Spec.Backup.Method = v1alpha1.BackupPhysical
			}
			c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
			o, err := Render(c, gcpMember, creds)
			g.Expect(err).NotTo(HaveOccurred())

			// Twice: the first apply creates, the second must find everything as rendered.
			for range 2 {
				ns, err := cs.CoreV1().Namespaces().Apply(ctx, o.Namespace, opts)
				g.Expect(err).NotTo(HaveOccurred())
				expectExtracted(g, o.Namespace, func() (any, error) { return corev1ac.ExtractNamespace(ns, v1alpha1.FieldManager) })

				s, err := cs.CoreV1().Secrets(c.Namespace).Apply(ctx, o.Secret, opts)
				g.Expect(err).NotTo(HaveOccurred())
				expectExtracted(g, o.Secret, func() (any, error) { return corev1ac.ExtractSecret(s, v1alpha1.FieldManager) })

				cm, err := cs.CoreV1().ConfigMaps(c.Namespace).Apply(ctx, o.ConfigMap, opts)
				g.Expect(err).NotTo(HaveOccurred())
				expectExtracted(g, o.ConfigMap, func() (any, error) { return corev1ac.ExtractConfigMap(cm, v1alpha1.FieldManager) })

				for _, svc := range []*corev1ac.ServiceApplyConfiguration{o.HeadlessService, o.Service, o.PrimaryService,
					o.ReplicasService} {
					live, err := cs.CoreV1().Services(c.Namespace).Apply(ctx, svc, opts)
					g.Expect(err).NotTo(HaveOccurred())
					expectExtracted(g, svc, func() (any, error) { return corev1ac.ExtractService(live, v1alpha1.FieldManager) })
				}

				sts, err := cs.AppsV1().StatefulSets(c.Namespace).Apply(ctx, o.StatefulSet, opts)
				g.Expect(err).NotTo(HaveOccurred())
				expectExtracted(g, o.StatefulSet, func() (any, error) { return appsv1ac.ExtractStatefulSet(sts, v1alpha1.FieldManager) })

				pdb, err := cs.PolicyV1().PodDisruptionBudgets(c.Namespace).Apply(ctx, o.PodDisruptionBudget, opts)
				g.Expect(err).NotTo(HaveOccurred())
				expectExtracted(g, o.PodDisruptionBudget, func() (any, error) {
					return policyv1ac.ExtractPodDisruptionBudget(pdb, v1alpha1.FieldManager)
				})

				if o.BackupPVC != nil {
					pvc, err := cs.CoreV1().PersistentVolumeClaims(c.Namespace).Apply(ctx, o.BackupPVC, opts)
					g.Expect(err).NotTo(HaveOccurred())
					expectExtracted(g, o.BackupPVC, func() (any, error) {
						return corev1ac.ExtractPersistentVolumeClaim(pvc, v1alpha1.FieldManager)
					})
				}

				cj, err := cs.BatchV1().CronJobs(c.Namespace).Apply(ctx, o.BackupCronJob, opts)
				g.Expect(err).NotTo(HaveOccurred())
				expectExtracted(g, o.BackupCronJob, func() (any, error) { return batchv1ac.ExtractCronJob(cj, v1alpha1.FieldManager) })

				// The restore Job of a MySQLCluster restored from this target: applied twice, as every pass
				// does, it compares equal (the API server adds a selector and labels of its own to a Job).
				rc := c.DeepCopy()
				rc.Spec.Restore = &v1alpha1.Restore{Source: v1alpha1.RestoreSource{Cluster: "old"}}
				ro, err := Render(rc, gcpMember, creds, WithRestore(&RestoreSource{Target: target, Prefix: "p", SourcePVC: "old-backup"}))
				g.Expect(err).NotTo(HaveOccurred())
				for range 2 {
					job, err := cs.BatchV1().Jobs(c.Namespace).Apply(ctx, ro.RestoreJob, opts)
					g.Expect(err).NotTo(HaveOccurred())
					expectExtracted(g, ro.RestoreJob, func() (any, error) { return batchv1ac.ExtractJob(job, v1alpha1.FieldManager) })
				}
				// A Job's template cannot change; the next target's subtest renders another.
				bg := metav1.DeletePropagationBackground
				g.Expect(cs.BatchV1().Jobs(c.Namespace).Delete(ctx, *ro.RestoreJob.Name,
					metav1.DeleteOptions{PropagationPolicy: &bg})).To(Succeed())
				g.Eventually(func() bool {
					_, err := cs.BatchV1().Jobs(c.Namespace).Get(ctx, *ro.RestoreJob.Name, metav1.GetOptions{})
					return apierrors.IsNotFound(err)
				}, 30*time.Second, 100*time.Millisecond).Should(BeTrue())
			}

			// The Pods of both templates are admitted under the restricted Pod Security Standard. The StatefulSet
			// controller would add the data volume; an emptyDir stands in for it.
			mysqlPod := copyPodSpec(g, o.StatefulSet.Spec.Template.Spec).WithVolumes(
				corev1ac.Volume().WithName(v1alpha1.DataVolumeName).WithEmptyDir(corev1ac.EmptyDirVolumeSource()))
			rc := c.DeepCopy()
			rc.Spec.Restore = &v1alpha1.Restore{Source: v1alpha1.RestoreSource{Cluster: "old"}}
			ro, err := Render(rc, gcpMember, creds, WithRestore(&RestoreSource{Target: target, Prefix: "p", SourcePVC: "old-backup"}))
			g.Expect(err).NotTo(HaveOccurred())
			for _, spec := range []*corev1ac.PodSpecApplyConfiguration{
				mysqlPod, o.BackupCronJob.Spec.JobTemplate.Spec.Template.Spec, ro.RestoreJob.Spec.Template.Spec,
			} {
				pod := corev1ac.Pod("pss-check", "restricted").WithSpec(spec)
				_, err := cs.CoreV1().Pods("restricted").Apply(ctx, pod, metav1.ApplyOptions{
					FieldManager: v1alpha1.FieldManager, DryRun: []string{metav1.DryRunAll},
				})
				g.Expect(err).NotTo(HaveOccurred())
			}
		})
	}
}

// expectExtracted compares as the controller does, with equality.Semantic, and shows both sides as JSON on failure.
func expectExtracted(g Gomega, want any, extract func() (any, error)) {
	got, err := extract()
	g.Expect(err).NotTo(HaveOccurred())
	// Extract returns a typed pointer; compare it with want of the same type.
	if !equality.Semantic.DeepEqual(got, want) {
		a, _ := json.MarshalIndent(got, "", "  ")
		b, _ := json.MarshalIndent(want, "", "  ")
		g.Expect(string(a)).To(Equal(string(b)), "the live object's fields owned by mysqlfleet differ from the rendered ones")
	}
}

func copyPodSpec(g Gomega, spec *corev1ac.PodSpecApplyConfiguration) *corev1ac.PodSpecApplyConfiguration {
	b, err := json.Marshal(spec)
	g.Expect(err).NotTo(HaveOccurred())
	out := &corev1ac.PodSpecApplyConfiguration{}
	g.Expect(json.Unmarshal(b, out)).To(Succeed())
	return out
}
