package member

import (
	"context"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/clustering"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// renderedStatefulSet is the StatefulSet render makes for a MariaDB set of three, as the member sees it.
func renderedStatefulSet(t *testing.T) *appsv1.StatefulSet {
	t.Helper()
	objs := renderSet(t, "shop", "uid-shop", 3)
	raw := &appsv1.StatefulSet{}
	toTyped(t, objs.StatefulSet, raw)
	raw.UID = "sts-uid"
	return raw
}

func TestSeedJob(t *testing.T) {
	g := NewWithT(t)
	sts := renderedStatefulSet(t)
	job, err := seedJob(sts, 2, 1, "registry.example.com/mysqlfleet/manager:1.2.3")
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(job.Name).To(Equal("shop-seed-2"))
	g.Expect(job.Namespace).To(Equal(testNS))
	g.Expect(metav1.IsControlledBy(job, sts)).To(BeTrue())
	g.Expect(*job.OwnerReferences[0].Controller).To(BeTrue())
	g.Expect(job.OwnerReferences[0].BlockOwnerDeletion).To(BeNil(), "blocking would need update on statefulsets/finalizers")
	// The set's names, the seed component, and not the hub object's UID: the hub counts and deletes by it.
	g.Expect(job.Labels).To(Equal(map[string]string{
		v1alpha1.ManagedByLabel:            v1alpha1.ManagedByValue,
		v1alpha1.InstanceLabel:             "shop",
		v1alpha1.ComponentLabel:            SeedComponent,
		v1alpha1.ReplicationComponentLabel: SeedComponent,
		v1alpha1.ClusterNameLabel:          "shop",
		v1alpha1.ClusterNamespaceLabel:     testNS,
	}))
	g.Expect(job.Spec.Template.Labels).To(Equal(job.Labels))
	g.Expect(jobRequests(context.Background(), job)).To(HaveLen(1), "its end requeues the set")
	g.Expect(*job.Spec.TTLSecondsAfterFinished).To(BeEquivalentTo(120))
	g.Expect(*job.Spec.BackoffLimit).To(BeEquivalentTo(2))

	pod := job.Spec.Template.Spec
	g.Expect(pod.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
	g.Expect(pod.InitContainers[0].Image).To(Equal("registry.example.com/mysqlfleet/manager:1.2.3"))
	c := pod.Containers[0]
	g.Expect(c.Image).To(Equal(sts.Spec.Template.Spec.Containers[0].Image), "the dump tool of the server's own image")
	g.Expect(c.Command).To(Equal([]string{render.RunnerPath, "seed"}))
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	value := func(name string) string { return env[name].Value }
	g.Expect(value("BACKUP_ENGINE")).To(Equal("MariaDB"))
	g.Expect(value("MYSQL_HOST")).To(Equal("shop-1.shop-headless"), "the source, by its Pod's DNS name")
	g.Expect(value("MYSQL_USER")).To(Equal(v1alpha1.AdminUser))
	g.Expect(value("SEED_TARGET_HOST")).To(Equal("shop-2.shop-headless"))
	g.Expect(value("SEED_TARGET_USER")).To(Equal("root"))
	g.Expect(value("BACKUP_REPORT_FILE")).To(Equal(corev1.TerminationMessagePathDefault))
	g.Expect(env["MYSQL_PWD"].ValueFrom.SecretKeyRef).To(Equal(&corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "shop-credentials"}, Key: v1alpha1.AdminPasswordKey}))
	g.Expect(env["SEED_TARGET_PWD"].ValueFrom.SecretKeyRef).To(Equal(&corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: "shop-credentials"}, Key: v1alpha1.RootPasswordKey}))
	for _, e := range c.Env {
		g.Expect(e.Value).NotTo(ContainSubstring(rootPassword), "a password in the Job's spec")
	}
}

// A seed Job that failed is reported on its instance with the runner's reason, and one that succeeded but left
// the instance empty too; a running one is the engine's to report.
func TestSeedOutcomesInTheReport(t *testing.T) {
	g := NewWithT(t)
	plan := clustering.Plan{Steps: []clustering.Step{{Action: clustering.ActionSeed, Instance: 2, Source: 1}}}
	base := func() v1alpha1.ReplicationReport {
		return v1alpha1.ReplicationReport{LastError: "instance 2: seeding from instance 1: ...", Instances: []v1alpha1.ReplicationInstance{
			{Pod: "shop-0"}, {Pod: "shop-1"}, {Pod: "shop-2", Error: "seeding from instance 1: ..."}}}
	}
	rep := base()
	seedOutcomes(&rep, plan, map[int]seedState{2: {job: "shop-seed-2", failed: "the target cannot be seeded: boom"}})
	g.Expect(rep.Instances[2].Error).To(Equal("seeding from instance 1: ...; the seed Job shop-seed-2 failed: the " +
		"target cannot be seeded: boom; another starts once it is removed, 2m0s after it finished"))
	g.Expect(rep.LastError).To(Equal("instance 2: " + rep.Instances[2].Error))

	rep = base()
	seedOutcomes(&rep, plan, map[int]seedState{2: {job: "shop-seed-2", succeeded: true}})
	g.Expect(rep.Instances[2].Error).To(ContainSubstring("succeeded but the instance has executed nothing"))

	rep = base()
	seedOutcomes(&rep, plan, map[int]seedState{2: {job: "shop-seed-2", running: true}})
	g.Expect(rep).To(Equal(base()))
	seedOutcomes(&rep, clustering.Plan{}, map[int]seedState{2: {job: "shop-seed-2", failed: "boom"}})
	g.Expect(rep).To(Equal(base()), "no seed asked for: nothing to say")
}

// toTyped converts an apply configuration into the typed object it describes.
func toTyped(t *testing.T, ac, out any) {
	t.Helper()
	b, err := json.Marshal(ac)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
}
