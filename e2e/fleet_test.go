//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

var classes = map[string]string{"aws-eu-west-1": "gp3", "azure-westeurope": "managed-csi", "gcp-us-central1": "pd-ssd"}

var _ = Describe("A MySQLCluster across three clouds", Ordered, func() {
	var key client.ObjectKey

	BeforeAll(func(ctx SpecContext) {
		c := mysqlCluster("shop", "orders", []string{"aws-eu-west-1", "azure-westeurope", "gcp-us-central1"})
		c.Spec.Backup = &v1alpha1.Backup{Schedule: "H 3 * * *", Retention: 5, Target: v1alpha1.BackupTarget{
			PVC: &v1alpha1.PVCTarget{Size: resource.MustParse("5Gi")},
		}}
		create(ctx, c)
		key = client.ObjectKeyFromObject(c)
	})

	It("converges with each cloud's storage class, and says what is known of replication", func(ctx SpecContext) {
		c := eventuallyConverged(ctx, key)
		// With real servers and the member controller (kind), each member replicates and the database is
		// Ready. The local fleet's Pods are kwok's: no server runs behind them and no member controller is
		// installed, so replication is Unknown, with the reason, and the database is not called Ready.
		replicates := slices.Contains(provider.Capabilities(), Replication)
		if replicates {
			c = eventuallyReady(ctx, key)
		}
		for member := range classes {
			cond := meta.FindStatusCondition(memberStatus(c, member).Conditions, v1alpha1.MemberConditionReplicating)
			Expect(cond).NotTo(BeNil(), member)
			if replicates {
				Expect(cond.Status).To(Equal(metav1.ConditionTrue), member)
				continue
			}
			Expect(cond.Status).To(Equal(metav1.ConditionUnknown), member)
			Expect(cond.Reason).To(Equal(v1alpha1.ReasonNoReport), member)
		}
		Expect(c.Status.StorageClasses).To(Equal("gp3,managed-csi,pd-ssd"))
		for member, class := range classes {
			sts := statefulSet(ctx, member, key)
			Expect(*sts.Spec.VolumeClaimTemplates[0].Spec.StorageClassName).To(Equal(class), member)
			Expect(sts.Status.ReadyReplicas).To(Equal(int32(1)), member)
		}

		By("looking at the fleet as a user does: kubectl get mysqlclusters.mysqlfleet.io -A")
		out, err := exec.Command(filepath.Join("..", "bin", "kubectl"), "--kubeconfig", hub.KubeconfigPath,
			"get", "mysqlclusters.mysqlfleet.io", "-A").CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), string(out))
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		Expect(strings.Fields(lines[0])).To(Equal([]string{"NAMESPACE", "NAME", "READY", "MEMBERS", "REPLICAS", "SERVING", "PHASE", "AGE"}))
		var row []string
		for _, l := range lines[1:] {
			if f := strings.Fields(l); len(f) > 1 && f[0] == key.Namespace && f[1] == key.Name {
				row = f
			}
		}
		Expect(row).To(HaveLen(8), string(out))
		if replicates {
			Expect(row[2:7]).To(Equal([]string{"True", "3/3", "3/3", "3/3", "Ready"}))
		} else {
			Expect(row[2:7]).To(Equal([]string{"False", "0/3", "3/3", "0/3", "Progressing"}))
		}
	})

	It("runs a backup CronJob per member on staggered schedules, whose Job runs the backup runner", func(ctx SpecContext) {
		schedules := map[string]bool{}
		for member := range classes {
			var cj batchv1.CronJob
			Expect(clients[member].Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: key.Name + "-backup"}, &cj)).To(Succeed())
			Expect(cj.Spec.ConcurrencyPolicy).To(Equal(batchv1.ForbidConcurrent))
			schedules[cj.Spec.Schedule] = true

			// As `kubectl create job --from=cronjob/orders-backup` does. The runner leaves its report in the
			// Pod's termination message. On kind it dumps the one server, orders-0, into the backup volume. The
			// local fleet runs the Job's runner for real too (test/testfleet's jobs runner), but no database
			// server runs behind kwok's Pods: the runner finds none to dump, and says so.
			job := &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: "orders-backup-manual",
					Labels: cj.Spec.JobTemplate.Labels},
				Spec: cj.Spec.JobTemplate.Spec,
			}
			Expect(clients[member].Create(ctx, job)).To(Succeed())
			var message string
			Eventually(func(g Gomega) string {
				var pods corev1.PodList
				g.Expect(clients[member].List(ctx, &pods, client.InNamespace(key.Namespace),
					client.MatchingLabels{batchv1.JobNameLabel: job.Name})).To(Succeed())
				for _, p := range pods.Items {
					for _, cs := range p.Status.ContainerStatuses {
						if cs.State.Terminated != nil {
							message = cs.State.Terminated.Message
							return message
						}
					}
				}
				return ""
			}).WithTimeout(3*time.Minute).ShouldNot(BeEmpty(), member)
			var report struct {
				Backup *struct{ Name, Member, Pod, Engine, SHA256 string }
				Error  string
			}
			Expect(json.Unmarshal([]byte(message), &report)).To(Succeed(), message)
			if !slices.Contains(provider.Capabilities(), Backup) {
				Expect(report.Error).To(ContainSubstring("no server answers"), member)
				continue
			}
			Expect(report.Error).To(BeEmpty(), member)
			Expect(report.Backup).NotTo(BeNil(), message)
			Expect(report.Backup.Member).To(Equal(member))
			Expect(report.Backup.Pod).To(Equal("orders-0"), member)
			engine, _ := provider.Database()
			Expect(report.Backup.Engine).To(Equal(string(engine)), member)
			Expect(report.Backup.SHA256).To(HaveLen(64), member)
		}
		Expect(len(schedules)).To(BeNumerically(">", 1), "H spreads the members' backups")
	})

	It("scales replicas in every member", func(ctx SpecContext) {
		update(ctx, key, func(c *v1alpha1.MySQLCluster) { c.Spec.Replicas = 2 })
		c := eventuallyConverged(ctx, key)
		Expect(c.Status.ReadyReplicas).To(Equal("6/6"))
	})

	It("grows storage in place without restarting Pods", func(ctx SpecContext) {
		before := podUIDs(ctx, key.Namespace)
		update(ctx, key, func(c *v1alpha1.MySQLCluster) { c.Spec.Storage.Size = resource.MustParse("2Gi") })
		eventuallyConverged(ctx, key)
		for member := range classes {
			Eventually(func(g Gomega) string {
				var pvcs corev1.PersistentVolumeClaimList
				g.Expect(clients[member].List(ctx, &pvcs, client.InNamespace(key.Namespace),
					client.MatchingLabels{v1alpha1.ClusterNameLabel: key.Name})).To(Succeed())
				sizes := []string{}
				for _, p := range pvcs.Items {
					if strings.HasPrefix(p.Name, "data-") {
						q := p.Status.Capacity[corev1.ResourceStorage]
						sizes = append(sizes, q.String())
					}
				}
				return strings.Join(sizes, ",")
			}).WithTimeout(time.Minute).Should(Equal("2Gi,2Gi"), member)
		}
		Expect(podUIDs(ctx, key.Namespace)).To(Equal(before))
	})

	It("repairs drift in a member", func(ctx SpecContext) {
		member := "azure-westeurope"
		sts := statefulSet(ctx, member, key)
		sts.Spec.Replicas = ptr.To[int32](5)
		Expect(clients[member].Update(ctx, sts)).To(Succeed())
		Eventually(func() int32 { return *statefulSet(ctx, member, key).Spec.Replicas }).
			WithTimeout(30 * time.Second).Should(Equal(int32(2)))
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
		Expect(clients[member].Delete(ctx, svc)).To(Succeed())
		Eventually(func() error { return clients[member].Get(ctx, key, &corev1.Service{}) }).
			WithTimeout(30 * time.Second).Should(Succeed())
	})

	It("keeps the others going while a member's API server is down, and catches up when it returns", func(ctx SpecContext) {
		member := "gcp-us-central1"
		Expect(provider.StopAPIServer(member)).To(Succeed())
		DeferCleanup(func() { _ = provider.StartAPIServer(member) })
		Eventually(func() v1alpha1.Phase { return memberStatus(get(ctx, key), member).Phase }).
			WithTimeout(time.Minute).Should(Equal(v1alpha1.PhaseUnreachable))
		update(ctx, key, func(c *v1alpha1.MySQLCluster) { c.Spec.Config = map[string]string{"max_connections": "300"} })
		for _, other := range []string{"aws-eu-west-1", "azure-westeurope"} {
			Eventually(func(g Gomega) string {
				var cm corev1.ConfigMap
				g.Expect(clients[other].Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: key.Name + "-config"}, &cm)).To(Succeed())
				return cm.Data["my.cnf"]
			}).WithTimeout(time.Minute).Should(ContainSubstring("max_connections"), other)
		}
		Expect(provider.StartAPIServer(member)).To(Succeed())
		c := eventuallyConverged(ctx, key)
		Expect(meta.IsStatusConditionTrue(memberStatus(c, member).Conditions, v1alpha1.MemberConditionPodsReady)).To(BeTrue())
	})

	It("fails over to the standby replica when the leader dies", func(ctx SpecContext) {
		leader, standby := leaderAndStandby(ctx)
		Expect(leader.Kill(ctx)).To(Succeed())
		update(ctx, key, func(c *v1alpha1.MySQLCluster) { c.Spec.Replicas = 1 })
		Eventually(func() bool { return standby.IsLeader(ctx) }).WithTimeout(time.Minute).Should(BeTrue())
		c := eventuallyConverged(ctx, key)
		Expect(c.Status.ReadyReplicas).To(Equal("3/3"))
	})
})

// leaderAndStandby waits for a leading manager replica and a running standby.
func leaderAndStandby(ctx context.Context) (leader, standby ManagerReplica) {
	Eventually(func(g Gomega) {
		leader, standby = nil, nil
		rs, err := provider.Managers(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		for _, r := range rs {
			switch {
			case r.IsLeader(ctx):
				leader = r
			case r.Running(ctx):
				standby = r
			}
		}
		g.Expect(leader).NotTo(BeNil(), "a leader")
		g.Expect(standby).NotTo(BeNil(), "a standby")
	}).WithTimeout(2 * time.Minute).Should(Succeed())
	return leader, standby
}

var _ = Describe("Placement by selector", func() {
	It("places only on members whose labels match", func(ctx SpecContext) {
		c := mysqlCluster("analytics", "events", nil)
		c.Spec.Placement = v1alpha1.Placement{MemberSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: v1alpha1.CloudLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"azure", "gcp"},
		}}}}
		create(ctx, c)
		key := client.ObjectKeyFromObject(c)
		got := eventuallyConverged(ctx, key)
		Expect(podsReadyMembers(got)).To(Equal(2))
		Expect(got.Status.StorageClasses).To(Equal("managed-csi,pd-ssd"))
		err := clients["aws-eu-west-1"].Get(ctx, key, &appsv1.StatefulSet{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue())
	})
})

var _ = Describe("Deletion", func() {
	It("keeps volumes with Retain and removes them with Delete", func(ctx SpecContext) {
		keep := mysqlCluster("ledger", "keep", []string{"aws-eu-west-1", "gcp-us-central1"})
		drop := mysqlCluster("ledger", "drop", []string{"aws-eu-west-1", "gcp-us-central1"})
		drop.Spec.DeletionPolicy = v1alpha1.DeletionPolicyDelete
		for _, c := range []*v1alpha1.MySQLCluster{keep, drop} {
			create(ctx, c)
			eventuallyConverged(ctx, client.ObjectKeyFromObject(c))
		}
		for _, c := range []*v1alpha1.MySQLCluster{keep, drop} {
			Expect(hubClient.Delete(ctx, c)).To(Succeed())
			Eventually(func() bool {
				return apierrors.IsNotFound(hubClient.Get(ctx, client.ObjectKeyFromObject(c), &v1alpha1.MySQLCluster{}))
			}).WithTimeout(time.Minute).Should(BeTrue())
		}
		for _, member := range []string{"aws-eu-west-1", "gcp-us-central1"} {
			Eventually(func(g Gomega) []string {
				var pvcs corev1.PersistentVolumeClaimList
				g.Expect(clients[member].List(ctx, &pvcs, client.InNamespace("ledger"))).To(Succeed())
				var names []string
				for _, p := range pvcs.Items {
					names = append(names, p.Name)
				}
				return names
			}).WithTimeout(time.Minute).Should(ConsistOf("data-keep-0"), member)
			err := clients[member].Get(ctx, client.ObjectKey{Namespace: "ledger", Name: "keep"}, &appsv1.StatefulSet{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue())
		}
	})
})

var _ = Describe("A hostile member kubeconfig", func() {
	It("is refused and its exec plugin never runs", func(ctx SpecContext) {
		marker := filepath.Join(workDir, "exec-ran")
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["m"] = &clientcmdapi.Cluster{Server: members["aws-eu-west-1"].Config.Host, CertificateAuthorityData: members["aws-eu-west-1"].Config.CAData}
		cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{
			APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh", Args: []string{"-c", "touch " + marker},
			InteractiveMode: clientcmdapi.NeverExecInteractiveMode,
		}}
		cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "m", AuthInfo: "u"}
		cfg.CurrentContext = "c"
		data, err := clientcmd.Write(*cfg)
		Expect(err).NotTo(HaveOccurred())
		Expect(registerMember(ctx, "intruder", "aws", "eu-west-1", data)).To(Succeed())
		Eventually(func(g Gomega) string {
			var events eventsv1.EventList
			g.Expect(hubClient.List(ctx, &events, client.InNamespace(namespace))).To(Succeed())
			for _, e := range events.Items {
				if e.Regarding.Name == "intruder" && e.Reason == "KubeconfigRefused" {
					return e.Note
				}
			}
			return ""
		}).WithTimeout(time.Minute).Should(ContainSubstring("exec"))
		_, err = os.Stat(marker)
		Expect(os.IsNotExist(err)).To(BeTrue())
	})
})

// mysqlCluster is a MySQLCluster of the engine and version the provider's nodes run (MySQL 8.4 on the local
// fleet, MariaDB 10.11 on kind).
func mysqlCluster(ns, name string, placed []string) *v1alpha1.MySQLCluster {
	engine, version := provider.Database()
	return &v1alpha1.MySQLCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.MySQLClusterSpec{
			Engine: engine, Version: version, Replicas: 1, Placement: v1alpha1.Placement{Members: placed},
			Storage: v1alpha1.Storage{Size: resource.MustParse("1Gi")},
		},
	}
}

func create(ctx context.Context, c *v1alpha1.MySQLCluster) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.Namespace}}
	if err := hubClient.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	Expect(hubClient.Create(ctx, c)).To(Succeed())
}

func get(ctx context.Context, key client.ObjectKey) *v1alpha1.MySQLCluster {
	var c v1alpha1.MySQLCluster
	Expect(hubClient.Get(ctx, key, &c)).To(Succeed())
	return &c
}

func update(ctx context.Context, key client.ObjectKey, change func(*v1alpha1.MySQLCluster)) {
	Eventually(func() error {
		c := get(ctx, key)
		change(c)
		return hubClient.Update(ctx, c)
	}).WithTimeout(30 * time.Second).Should(Succeed())
}

// eventuallyConverged waits until every placed member applied this generation and runs all its Pods ready. On the
// local fleet that is as far as a database gets: its Pods run no server.
func eventuallyConverged(ctx context.Context, key client.ObjectKey) *v1alpha1.MySQLCluster {
	var c *v1alpha1.MySQLCluster
	Eventually(func() bool {
		c = get(ctx, key)
		if c.Status.ObservedGeneration != c.Generation || len(c.Status.Members) == 0 {
			return false
		}
		for _, ms := range c.Status.Members {
			if !meta.IsStatusConditionTrue(ms.Conditions, v1alpha1.MemberConditionApplied) {
				return false
			}
		}
		return podsReadyMembers(c) == len(c.Status.Members)
	}).WithTimeout(3 * time.Minute).WithPolling(250 * time.Millisecond).Should(BeTrue())
	return c
}

// eventuallyReady waits until the MySQLCluster is Ready on this generation: every member has a writable primary
// and every replica in sync, as their member controllers report (providers with the Replication capability).
func eventuallyReady(ctx context.Context, key client.ObjectKey) *v1alpha1.MySQLCluster {
	return eventuallyReadyWithin(ctx, key, 5*time.Minute)
}

// eventuallyReadyWithin is eventuallyReady with a timeout of its own, for sets of many servers.
func eventuallyReadyWithin(ctx context.Context, key client.ObjectKey, timeout time.Duration) *v1alpha1.MySQLCluster {
	var c *v1alpha1.MySQLCluster
	// The message on timeout is the Ready condition as last seen, which names what is missing.
	Eventually(func() string {
		c = get(ctx, key)
		cond := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.ConditionReady)
		if c.Status.ObservedGeneration == c.Generation && cond != nil && cond.Status == metav1.ConditionTrue &&
			cond.ObservedGeneration == c.Generation {
			return "Ready"
		}
		return fmt.Sprintf("generation %d, observed %d, Ready %+v", c.Generation, c.Status.ObservedGeneration, cond)
	}).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Equal("Ready"))
	return c
}

// podsReadyMembers counts the members whose Pods are all ready.
func podsReadyMembers(c *v1alpha1.MySQLCluster) int {
	n := 0
	for _, ms := range c.Status.Members {
		if meta.IsStatusConditionTrue(ms.Conditions, v1alpha1.MemberConditionPodsReady) {
			n++
		}
	}
	return n
}

func statefulSet(ctx context.Context, member string, key client.ObjectKey) *appsv1.StatefulSet {
	var sts appsv1.StatefulSet
	Expect(clients[member].Get(ctx, key, &sts)).To(Succeed())
	return &sts
}

func memberStatus(c *v1alpha1.MySQLCluster, name string) *v1alpha1.MemberStatus {
	for i := range c.Status.Members {
		if c.Status.Members[i].Name == name {
			return &c.Status.Members[i]
		}
	}
	return &v1alpha1.MemberStatus{}
}

func podUIDs(ctx context.Context, ns string) map[string]string {
	out := map[string]string{}
	for member := range classes {
		var pods corev1.PodList
		Expect(clients[member].List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{v1alpha1.ComponentLabel: "database"})).To(Succeed())
		for _, p := range pods.Items {
			out[member+"/"+p.Name] = string(p.UID)
		}
	}
	return out
}
