//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/bench/commitrate"
	"github.com/mysqlfleet/mysqlfleet/bench/machine"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// CommitBench labels the commit-rate bench on kind (make bench-commit-kind): it measures, and runs only when its
// label is selected (it is a Bench too, so every default filter leaves it out).
const CommitBench = "commit-bench"

const (
	commitServers = 3
	commitTrials  = 3
	commitWarmup  = 5
	commitWindow  = 20
)

// handWiredOptions are the hand-wired servers' options: those of the operator's set that decide what a commit
// costs (internal/mysql's MariaDB boot options: a row-based binary log with GTIDs, replicas logging what they
// apply, durable commits), semi-synchronous replication AFTER_SYNC as the member controller turns it on (its
// timeout as good as never), and the data directory where the operator keeps it.
var handWiredOptions = []string{
	"--datadir=" + render.DataDir, "--skip-name-resolve",
	"--log-bin=binlog", "--log-slave-updates=ON", "--binlog-format=ROW", "--gtid-strict-mode=ON",
	"--sync-binlog=1", "--innodb-flush-log-at-trx-commit=1",
	"--rpl-semi-sync-master-enabled=ON", "--rpl-semi-sync-slave-enabled=ON",
	"--rpl-semi-sync-master-wait-point=AFTER_SYNC", "--rpl-semi-sync-master-timeout=86400000",
}

var _ = Describe("Commit rate on kind, against the same servers wired by hand", Ordered,
	Label(Bench, CommitBench, string(RealPods), string(Replication)), func() {
		It("records commits per second through the primary's Service at 1 and 8 connections, for both sets", func(ctx SpecContext) {
			member := memberNames()[0]
			c := mysqlCluster("commit-bench", "orders", []string{member})
			c.Spec.Replicas, c.Spec.Database, c.Spec.User = commitServers, "bench", "app"
			c.Spec.DeletionPolicy = v1alpha1.DeletionPolicyDelete
			res := &commitrate.Results{Timestamp: time.Now().UTC().Format("20060102T150405Z"), Host: machine.Now(),
				Tier: "kind", Member: member, Image: render.Image(c), Servers: commitServers,
				WarmupSeconds: commitWarmup, WindowSeconds: commitWindow, HandWiredOptions: handWiredOptions}
			var nodes corev1.NodeList
			Expect(clients[member].List(ctx, &nodes)).To(Succeed())
			res.Nodes = len(nodes.Items)
			res.ControllerArgs = memberControllerArgs(ctx, member)
			defer func() {
				res.Host.LoadEnd = machine.LoadAverage()
				res.Summarize()
				writeCommitResults(res)
			}()

			By("the hand-wired set: a StatefulSet of " + fmt.Sprint(commitServers) + " servers, replicas pointed at ordinal 0 by hand")
			hand := client.ObjectKey{Namespace: "commit-bench-hand", Name: "hand"}
			startHandWiredSet(ctx, member, hand, render.Image(c))
			DeferCleanup(func(ctx SpecContext) { deleteHandWiredSet(ctx, member, hand) })

			By("the same servers run by mysqlfleet: a MySQLCluster of " + fmt.Sprint(commitServers))
			create(ctx, c)
			key := client.ObjectKeyFromObject(c)
			DeferCleanup(func(ctx SpecContext) { deleteAndWait(ctx, key) })
			eventuallyReadyWithin(ctx, key, 10*time.Minute)
			Eventually(func(g Gomega) int32 {
				mr := memberStatus(get(ctx, key), member).Replication
				g.Expect(mr).NotTo(BeNil())
				return mr.ReplicasInSync
			}).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Equal(int32(commitServers - 1)))

			// Both sets run at once and their windows alternate, the first of each pair alternating by trial: a
			// machine whose speed drifts through the run (load, caches, a first window faster than later ones) then
			// weighs on both sets alike, where measuring one set after the other put the drift on the second.
			sets := []struct {
				name, host string
				key        client.ObjectKey
			}{{commitrate.HandWired, "hand-primary", hand}, {commitrate.Operator, c.PrimaryServiceName(), key}}
			for trial := 1; trial <= commitTrials; trial++ {
				for _, conns := range []int{1, 8} {
					for i := range sets {
						s := sets[(i+trial+1)%len(sets)]
						measureCommits(ctx, res, s.name, member, s.key, s.host, conns, trial)
					}
				}
			}
		})
	})

// measureCommits takes one window at conns connections through host, in a new table and from a new client Pod, as
// the application's account, and adds it to res.
func measureCommits(ctx context.Context, res *commitrate.Results, set, member string, key client.ObjectKey, host string, conns, trial int) {
	s := commitrate.Sample{Set: set, Connections: conns, Trial: trial, Load1: machine.LoadAverage()[0]}
	table := fmt.Sprintf("bench.rate_%d_%d", conns, trial) // one table per window in each set
	runSQL(ctx, member, key, host, "root", v1alpha1.RootPasswordKey,
		"CREATE TABLE "+table+" (id BIGINT AUTO_INCREMENT PRIMARY KEY, c INT); SELECT 1")
	pod := startClient(ctx, member, key, "rate", host, "app", v1alpha1.PasswordKey, table,
		commitrate.Script(conns, commitWarmup, commitWindow))
	var ok bool
	Eventually(func(g Gomega) bool {
		logs, err := clientLogs(ctx, member, key.Namespace, pod)
		g.Expect(err).NotTo(HaveOccurred())
		if strings.Contains(logs, "done") {
			s.Commits, s.Seconds, ok = commitrate.Parse(logs)
			if !ok {
				s.Error = "no rate in the client's output: " + logs
			}
			return true
		}
		return false
	}).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(BeTrue())
	deleteClient(ctx, member, key.Namespace, pod)
	if ok {
		s.PerSecond = float64(s.Commits) / s.Seconds
	}
	res.Samples = append(res.Samples, s)
	_, _ = fmt.Fprintf(GinkgoWriter, "%s, %d connection(s), trial %d: %d commits in %.2f s = %.1f/s (load %.1f) %s\n",
		set, conns, trial, s.Commits, s.Seconds, s.PerSecond, s.Load1, s.Error)
	Expect(s.Error).To(BeEmpty())
}

// startHandWiredSet runs the database image's servers as a user would wire them by hand: a headless Service, a
// Service for ordinal 0 (the primary), a StatefulSet spread over nodes as the operator's is, the image's own
// entrypoint creating root, the database and the application's account from a Secret, and replicas pointed at
// ordinal 0 with CHANGE MASTER once every server runs. It waits until the primary has both replicas as
// semi-synchronous clients.
func startHandWiredSet(ctx context.Context, member string, key client.ObjectKey, image string) {
	cs := memberClientset(member)
	ns := key.Namespace
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	root := rand.String(20)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name + "-credentials"},
		StringData: map[string]string{v1alpha1.RootPasswordKey: root, v1alpha1.PasswordKey: rand.String(20)}}
	_, err = cs.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	labels := map[string]string{"app": key.Name}
	port := []corev1.ServicePort{{Name: "mysql", Port: 3306, TargetPort: intstr.FromInt32(3306)}}
	for _, svc := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: labels, Ports: port, PublishNotReadyAddresses: true}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name + "-primary"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{appsv1.StatefulSetPodNameLabel: key.Name + "-0"}, Ports: port}},
	} {
		_, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
	}
	secretEnv := func(name, k string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret.Name}, Key: k}}}
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: key.Name},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](commitServers), ServiceName: key.Name, PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](999),
						RunAsGroup: ptr.To[int64](999), FSGroup: ptr.To[int64](999),
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname,
						WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}},
					EnableServiceLinks: ptr.To(false),
					Containers: []corev1.Container{{
						Name: "mysql", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
						// server_id from the ordinal, as a DBA's StatefulSet does.
						Command: []string{"sh", "-c", `exec docker-entrypoint.sh mariadbd --server-id=$((${HOSTNAME##*-} + 1)) "$@"`, "sh"},
						Args:    handWiredOptions,
						Env: []corev1.EnvVar{secretEnv("MARIADB_ROOT_PASSWORD", v1alpha1.RootPasswordKey),
							{Name: "MARIADB_ROOT_HOST", Value: "%"}, {Name: "MARIADB_DATABASE", Value: "bench"},
							{Name: "MARIADB_USER", Value: "app"}, secretEnv("MARIADB_PASSWORD", v1alpha1.PasswordKey)},
						Ports: []corev1.ContainerPort{{Name: "mysql", ContainerPort: 3306}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(3306)}},
							PeriodSeconds: 5},
						VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: render.DataMountPath}},
						SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
					}},
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
			}},
		},
	}
	_, err = cs.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func(g Gomega) int32 {
		s, err := cs.AppsV1().StatefulSets(ns).Get(ctx, key.Name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		return s.Status.ReadyReplicas
	}).WithTimeout(10 * time.Minute).WithPolling(2 * time.Second).Should(Equal(int32(commitServers)))

	primary := fmt.Sprintf("%s-0.%s.%s.svc.cluster.local", key.Name, key.Name, ns)
	for i := 1; i < commitServers; i++ {
		runSQL(ctx, member, key, fmt.Sprintf("%s-%d.%s", key.Name, i, key.Name), "root", v1alpha1.RootPasswordKey,
			fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='%s', MASTER_USER='root', MASTER_PASSWORD='%s', MASTER_USE_GTID=slave_pos; "+
				"SET GLOBAL read_only = ON; START SLAVE; SELECT 1", primary, root))
	}
	Eventually(func() (string, error) {
		return querySQL(ctx, member, key, key.Name+"-primary", "root", v1alpha1.RootPasswordKey,
			"SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'RPL_SEMI_SYNC_MASTER_CLIENTS'")
	}).WithTimeout(3*time.Minute).WithPolling(2*time.Second).Should(Equal(fmt.Sprint(commitServers-1)),
		"both replicas acknowledge the primary's commits")
}

// deleteHandWiredSet removes the hand-wired set's namespace (its volumes go with their claims) and waits until it
// is gone, so that it shares the nodes with nothing measured after it.
func deleteHandWiredSet(ctx context.Context, member string, key client.ObjectKey) {
	cs := memberClientset(member)
	err := cs.CoreV1().Namespaces().Delete(ctx, key.Namespace, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	Expect(err).NotTo(HaveOccurred())
	Eventually(func() bool {
		_, err := cs.CoreV1().Namespaces().Get(ctx, key.Namespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(5 * time.Minute).WithPolling(2 * time.Second).Should(BeTrue())
}

// writeCommitResults saves the results as bench/results/commit-kind-<timestamp>.json and commit-kind-latest.json.
func writeCommitResults(res *commitrate.Results) {
	writeBenchResults("commit-kind-", res.Timestamp, res)
	for _, r := range res.Ratios {
		_, _ = fmt.Fprintf(GinkgoWriter, "%d connection(s): hand-wired %.1f/s, mysqlfleet %.1f/s, %.2f× (target ≥ %.2f×)\n",
			r.Connections, r.HandWired, r.Operator, r.Ratio, r.Target)
	}
}
