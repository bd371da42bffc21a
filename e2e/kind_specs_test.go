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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// Specs that only real Pods allow: the database server runs and serves SQL, the manager runs as the chart's
// Deployment, volumes hold data. They carry the RealPods label (see Capability), and Replication where they need
// the member controller; kind_replication_test.go and kind_backup_test.go hold the replication and backup specs.

var _ = Describe("The database on real Pods", Label(string(RealPods), string(Replication)), func() {
	It("becomes Ready in each member and serves SQL through its Service", func(ctx SpecContext) {
		placed := memberNames()
		c := mysqlCluster("sql", "inventory", placed)
		c.Spec.Database, c.Spec.User = "inventory", "app"
		create(ctx, c)
		key := client.ObjectKeyFromObject(c)
		got := eventuallyReady(ctx, key)
		Expect(got.Status.ReadyMembers).To(Equal(fmt.Sprintf("%d/%[1]d", len(placed))))
		for _, member := range placed {
			By("connecting through the Service " + c.ServiceName() + " in " + member + " as the application's user")
			out := runSQL(ctx, member, key, c.ServiceName(), "app", v1alpha1.PasswordKey, fmt.Sprintf(
				"CREATE TABLE inventory.items (id INT PRIMARY KEY, member VARCHAR(64)); INSERT INTO inventory.items VALUES (1, '%s'); "+
					"SELECT CONCAT('row:', member) FROM inventory.items WHERE id = 1", member))
			Expect(out).To(ContainSubstring("row:"+member), member)
		}
	})

	It("keeps the data on the volume when a Retain MySQLCluster is deleted, and a recreated one finds it", func(ctx SpecContext) {
		member := memberNames()[0]
		c := mysqlCluster("vault", "ledger", []string{member})
		c.Spec.Database = "ledger"
		create(ctx, c)
		key := client.ObjectKeyFromObject(c)
		eventuallyReady(ctx, key)
		Expect(runSQL(ctx, member, key, c.ServiceName(), "root", v1alpha1.RootPasswordKey,
			"CREATE TABLE ledger.entries (id INT PRIMARY KEY, note VARCHAR(64)); "+
				"INSERT INTO ledger.entries VALUES (7, 'kept'); SELECT 'written'")).To(ContainSubstring("written"))

		By("deleting the MySQLCluster (deletionPolicy Retain)")
		old := get(ctx, key)
		Expect(old.Spec.DeletionPolicy).NotTo(Equal(v1alpha1.DeletionPolicyDelete))
		Expect(hubClient.Delete(ctx, old)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(hubClient.Get(ctx, key, &v1alpha1.MySQLCluster{})) }).
			WithTimeout(2 * time.Minute).Should(BeTrue())
		Eventually(func() bool {
			return apierrors.IsNotFound(clients[member].Get(ctx, key, &appsv1.StatefulSet{}))
		}).WithTimeout(time.Minute).Should(BeTrue())
		var pvc corev1.PersistentVolumeClaim
		Expect(clients[member].Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: "data-ledger-0"}, &pvc)).To(Succeed())
		Expect(pvc.Labels).To(HaveKeyWithValue(v1alpha1.ClusterUIDLabel, string(old.UID)))

		By("recreating it, adopting what its predecessor kept")
		again := mysqlCluster("vault", "ledger", []string{member})
		again.Spec.Database = "ledger"
		again.Annotations = map[string]string{v1alpha1.AdoptAnnotation: string(old.UID)}
		create(ctx, again)
		eventuallyReady(ctx, key)
		Expect(runSQL(ctx, member, key, again.ServiceName(), "root", v1alpha1.RootPasswordKey,
			"SELECT CONCAT('note:', note) FROM ledger.entries WHERE id = 7")).To(ContainSubstring("note:kept"))
	})
})

var _ = Describe("The manager's Deployment", Label(string(RealPods), string(Replication)), func() {
	// The deleted leader releases the Lease as it stops, so the standby, retrying every 500 ms, and the Pod that
	// replaces the deleted one, trying as it starts, race for it: either may rightly win (seen: the replacement
	// first, 0.7 s after the deletion). What must hold is that another running replica leads and that the fleet
	// is managed from it.
	It("hands the Lease to another replica when the leader's Pod is deleted, and returns to two replicas", func(ctx SpecContext) {
		leader, _ := leaderAndStandby(ctx)
		By("deleting the leader's Pod " + leader.Name())
		Expect(hubClient.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: leader.Name()}})).To(Succeed())
		Eventually(func(g Gomega) string {
			rs, err := provider.Managers(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			for _, r := range rs {
				if r.Name() != leader.Name() && r.IsLeader(ctx) {
					return r.Name()
				}
			}
			return ""
		}).WithTimeout(time.Minute).ShouldNot(BeEmpty())
		Eventually(func(g Gomega) {
			var d appsv1.Deployment
			g.Expect(hubClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: release}, &d)).To(Succeed())
			g.Expect(d.Status.ReadyReplicas).To(Equal(int32(2)))
			g.Expect(d.Status.UpdatedReplicas).To(Equal(int32(2)))
		}).WithTimeout(3 * time.Minute).Should(Succeed())

		By("managing the fleet from the new leader")
		c := mysqlCluster("handover", "after", memberNames()[len(memberNames())-1:])
		create(ctx, c)
		eventuallyReady(ctx, client.ObjectKeyFromObject(c))
	})
})

// runSQL runs statements with the database image's client in a Pod of the member, against host, as user with the
// password from the MySQLCluster's credentials Secret, and returns the Pod's output.
func runSQL(ctx context.Context, member string, key client.ObjectKey, host, user, passwordKey, sql string) string {
	out, err := querySQL(ctx, member, key, host, user, passwordKey, sql)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// querySQL is runSQL that returns the client's failure as an error, for use inside Eventually.
func querySQL(ctx context.Context, member string, key client.ObjectKey, host, user, passwordKey, sql string) (string, error) {
	// A Service made moments ago may not be programmed by kube-proxy yet (a busy node takes seconds), and a
	// connection to its ClusterIP then times out: the client first waits for a connection, as an application's
	// pool retries one, and only then sends the statements, once.
	name := startClient(ctx, member, key, "sql", host, user, passwordKey, sql, `i=0
until "$client" --host="$HOST" --user="$DB_USER" --connect-timeout=2 -e "SELECT 1" >/dev/null 2>&1; do
  i=$((i + 1)); [ "$i" -lt 30 ] || break; sleep 1
done
"$client" --host="$HOST" --user="$DB_USER" --connect-timeout=5 --batch --skip-column-names -e "$SQL"
rc=$?
echo "`+sqlEnd+`"
exit $rc`)
	defer deleteClient(ctx, member, key.Namespace, name)
	logs, phase := waitClient(ctx, member, key.Namespace, name, 3*time.Minute)
	if phase != corev1.PodSucceeded {
		return "", fmt.Errorf("the client in %s said: %s", member, logs)
	}
	// A Pod's log may lack the end of its output: on kind an 8,760-row result came back cut after 8,406 rows,
	// its end never arriving (failover-kind-20261129T073314Z.json). The log is read again until it holds the end
	// marker, and an output without it is an error, never a result.
	for i := 0; !strings.Contains(logs, sqlEnd) && i < 30; i++ {
		time.Sleep(time.Second)
		if l, err := clientLogs(ctx, member, key.Namespace, name); err == nil {
			logs = l
		}
	}
	out, complete := strings.CutSuffix(strings.TrimSpace(logs), sqlEnd)
	if !complete {
		return "", fmt.Errorf("the client's output in %s has no end after 30 s: %s", member, logs)
	}
	return strings.TrimSpace(out), nil
}

// sqlEnd ends a SQL client Pod's output, so that a log read before the output is all there is told from a whole one.
const sqlEnd = "-- mysqlfleet: end of output --"

// startClient starts a Pod of the database image in the member that runs script with sh, the variables HOST,
// DB_USER, SQL and MYSQL_PWD (the password under passwordKey in the MySQLCluster's credentials Secret) set, and
// $client the image's client (mariadb or mysql, whichever it has). It returns the Pod's name.
func startClient(ctx context.Context, member string, key client.ObjectKey, prefix, host, user, passwordKey, sql, script string,
	opts ...func(*corev1.Pod)) string {
	cs := memberClientset(member)
	image := statefulSet(ctx, member, key).Spec.Template.Spec.Containers[0].Image
	name := prefix + "-" + rand.String(6)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](999),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "client", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
				// The official images' entrypoint passes other commands through.
				Command: []string{"sh", "-c", "client=$(command -v mariadb || command -v mysql)\n" + script},
				Env: []corev1.EnvVar{
					{Name: "HOST", Value: host}, {Name: "DB_USER", Value: user}, {Name: "SQL", Value: sql},
					{Name: "MYSQL_PWD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
						LocalObjectReference: corev1.LocalObjectReference{Name: key.Name + "-credentials"}, Key: passwordKey}}},
				},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
	for _, o := range opts {
		o(pod)
	}
	_, err := cs.CoreV1().Pods(key.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return name
}

// offNode keeps a client Pod off a node: a client on the node a fault hits would measure its own fault.
func offNode(node string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpNotIn, Values: []string{node}}},
			}}},
		}}
	}
}

// waitClient waits until the client Pod has ended and returns its output and phase.
func waitClient(ctx context.Context, member, ns, name string, timeout time.Duration) (string, corev1.PodPhase) {
	cs := memberClientset(member)
	var phase corev1.PodPhase
	Eventually(func(g Gomega) corev1.PodPhase {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		phase = p.Status.Phase
		return phase
	}).WithTimeout(timeout).WithPolling(time.Second).Should(BeElementOf(corev1.PodSucceeded, corev1.PodFailed), member)
	logs, err := clientLogs(ctx, member, ns, name)
	Expect(err).NotTo(HaveOccurred())
	return logs, phase
}

// clientLogs is a client Pod's output so far (an error while its container has not started).
func clientLogs(ctx context.Context, member, ns, name string) (string, error) {
	logs, err := memberClientset(member).CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	return string(logs), err
}

func deleteClient(ctx context.Context, member, ns, name string) {
	_ = memberClientset(member).CoreV1().Pods(ns).Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{})
}

func memberClientset(member string) kubernetes.Interface {
	cs, err := kubernetes.NewForConfig(members[member].Config)
	Expect(err).NotTo(HaveOccurred())
	return cs
}
