package mysqlcluster_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/controllers/member"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
	"github.com/mysqlfleet/mysqlfleet/test/dbpods"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

// startMemberController runs the member controller in-process against a member, as its own ServiceAccount
// with the RBAC member.RBAC grants there, until the test ends.
func startMemberController(t *testing.T, name string, resolve member.Resolver) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	mc := members[name]
	const ns = "mysqlfleet-system"
	if err := mc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil &&
		!apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, o := range render.MemberControllerRBAC(ns) {
		if err := mc.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(fleet.Member(name).Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":" + render.MemberControllerName,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	mgr, err := member.New(cfg, member.Options{
		Namespace: ns, MetricsBindAddress: "0", HealthProbeBindAddress: "0",
		Timing: member.Timing{PollInterval: 500 * time.Millisecond, BusyInterval: 200 * time.Millisecond,
			StatusTimeout: 2 * time.Second, PassTimeout: time.Minute, MaxLag: 5 * time.Second,
			ReplicaConnectRetry: time.Second},
		MaxConcurrentReconciles:      2,
		Resolver:                     resolve,
		SkipControllerNameValidation: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the member controller stopped with an error: %v", err)
		}
	})
}

// endpointPods are the ready Pods behind a Service in a member, from its EndpointSlices (made by the member's
// kube-controller-manager from the Service's selector): the Pods a client of the Service reaches.
func endpointPods(g Gomega, name, ns, svc string) []string {
	var sl discoveryv1.EndpointSliceList
	g.Expect(members[name].List(context.Background(), &sl, client.InNamespace(ns),
		client.MatchingLabels{discoveryv1.LabelServiceName: svc})).To(Succeed())
	var pods []string
	for _, s := range sl.Items {
		for _, e := range s.Endpoints {
			if e.TargetRef != nil && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
				pods = append(pods, e.TargetRef.Name)
			}
		}
	}
	slices.Sort(pods)
	return pods
}

// replication is the hub's view of the member: its Replicating condition and report.
func replication(g Gomega, key client.ObjectKey, name string) (metav1.Condition, *v1alpha1.MemberReplication) {
	ms := memberStatus(get(g, key), name)
	if ms == nil {
		return metav1.Condition{}, nil
	}
	return findMemberCondition(ms, v1alpha1.MemberConditionReplicating), ms.Replication
}

// checksum is the checksum of shop.orders on a server.
func checksum(g Gomega, s *mysqltest.Server) string {
	var table string
	var sum sql.NullString
	g.Expect(s.OpenRoot().QueryRow("CHECKSUM TABLE shop.orders").Scan(&table, &sum)).To(Succeed())
	return sum.String
}

func countOrders(s *mysqltest.Server) (int, error) {
	db, err := sql.Open("mysql", s.RootDSN())
	if err != nil {
		return 0, err
	}
	defer func() { _ = db.Close() }()
	var n int
	err = db.QueryRow("SELECT COUNT(*) FROM shop.orders").Scan(&n)
	return n, err
}

// A MariaDB MySQLCluster of three replicas, its Pods backed by real servers and the member controller running in
// the member: the servers form a primary and two semi-sync replicas, the Services follow the role labels, and
// the hub shows it all from the member controller's report. Rows written through <name>-primary are read on
// both replicas; with both replicas down a commit does not return; a replica whose data is wiped after the
// primary purged its binary logs is seeded with a dump by the member controller's seed Job and catches up.
func TestReplicatedSetOnRealServers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := newCluster("repl", "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Engine, c.Spec.Version, c.Spec.Replicas = v1alpha1.EngineMariaDB, "10.11", 3
		c.Spec.Placement.Members = []string{aws}
	})
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	got := eventuallyConverged(g, key)
	cond, _ := replication(g, key, aws)
	g.Expect(cond.Reason).To(Equal(v1alpha1.ReasonNoReport), "no member controller yet")

	// What the hub rendered into the member: my.cnf, and the accounts' init script.
	var cm corev1.ConfigMap
	g.Expect(members[aws].Get(ctx, client.ObjectKey{Namespace: "repl", Name: c.ConfigMapName()}, &cm)).To(Succeed())
	var secret corev1.Secret
	g.Expect(members[aws].Get(ctx, client.ObjectKey{Namespace: "repl", Name: c.CredentialsSecretName()}, &secret)).
		To(Succeed())
	cnf, script := cm.Data[render.MyCnfKey], string(secret.Data[v1alpha1.InitScriptKey])
	rootPassword := string(secret.Data[v1alpha1.RootPasswordKey])
	servers := dbpods.New(t)
	for i := range 3 {
		servers.StartWithRoot(fmt.Sprintf("db-%d", i), cnf, script, rootPassword)
	}
	// The seed Jobs' runner reaches the Pods' servers as the member controller does.
	fleet.Member(aws).SetPodAddresses(func(p *corev1.Pod) (string, error) {
		a, err := servers.MySQLAddr(p)
		return a.String(), err
	})
	t.Cleanup(func() { fleet.Member(aws).SetPodAddresses(nil) })
	dumpJobsOnFailure(t, aws, "repl")
	startMemberController(t, aws, servers.Resolve)

	t.Run("the hub shows a primary and two replicas in sync", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func() string {
			c := get(g, key)
			return fmt.Sprintf("ready %s, serving %s", condition(c, v1alpha1.ConditionReady), c.Status.Serving)
		}, 2*time.Minute, 250*time.Millisecond).Should(Equal("ready True, serving 3/3"))
		got = get(g, key)
		g.Expect(got.Status.Phase).To(Equal(v1alpha1.PhaseReady))
		g.Expect(got.Status.ReadyMembers).To(Equal("1/1"))
		ms := memberStatus(got, aws)
		g.Expect(ms.Replication).NotTo(BeNil())
		g.Expect(ms.Replication.Primary).To(Equal("db-0"))
		g.Expect(ms.Replication.ReplicasInSync).To(Equal(int32(2)))
		g.Expect(ms.Replication.ErrantReplicas).To(BeEmpty())
		g.Expect(ms.Replication.LastTransition).To(HaveField("Kind", "Bootstrap"))
		g.Expect(findMemberCondition(ms, v1alpha1.MemberConditionReplicating)).To(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", v1alpha1.ReasonReplicating)))
		g.Expect(findMemberCondition(ms, v1alpha1.MemberConditionReady).Status).To(Equal(metav1.ConditionTrue))
	})

	t.Run("rows written through the primary Service are on both replicas", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func() []string { return endpointPods(g, aws, "repl", c.PrimaryServiceName()) },
			time.Minute, 250*time.Millisecond).Should(Equal([]string{"db-0"}))
		g.Expect(endpointPods(g, aws, "repl", c.ServiceName())).To(Equal([]string{"db-0"}))
		// Once the member controller reported that it writes them, the hub renders the read-write Services
		// without a selector, and their only EndpointSlice is the member controller's: the endpoint
		// controllers' slices from the selector are gone.
		for _, name := range []string{c.ServiceName(), c.PrimaryServiceName()} {
			g.Eventually(func(g Gomega) {
				var svc corev1.Service
				g.Expect(members[aws].Get(context.Background(), client.ObjectKey{Namespace: "repl", Name: name},
					&svc)).To(Succeed())
				g.Expect(svc.Spec.Selector).To(BeEmpty())
				var sl discoveryv1.EndpointSliceList
				g.Expect(members[aws].List(context.Background(), &sl, client.InNamespace("repl"),
					client.MatchingLabels{discoveryv1.LabelServiceName: name})).To(Succeed())
				g.Expect(sl.Items).To(HaveLen(1))
				g.Expect(sl.Items[0].Labels).To(HaveKeyWithValue(discoveryv1.LabelManagedBy, member.EndpointsManager))
			}, time.Minute, 250*time.Millisecond).Should(Succeed(), name)
		}
		g.Expect(endpointPods(g, aws, "repl", c.PrimaryServiceName())).To(Equal([]string{"db-0"}))
		g.Eventually(func() []string { return endpointPods(g, aws, "repl", c.ReplicasServiceName()) },
			time.Minute, 250*time.Millisecond).Should(Equal([]string{"db-1", "db-2"}))

		primary := servers.Server(endpointPods(g, aws, "repl", c.PrimaryServiceName())[0]).OpenRoot()
		for _, q := range []string{"CREATE DATABASE shop", "CREATE TABLE shop.orders (id INT PRIMARY KEY)",
			"INSERT INTO shop.orders VALUES (1), (2), (3)"} {
			_, err := primary.Exec(q)
			g.Expect(err).NotTo(HaveOccurred(), q)
		}
		for _, pod := range endpointPods(g, aws, "repl", c.ReplicasServiceName()) {
			g.Eventually(func() (int, error) { return countOrders(servers.Server(pod)) },
				time.Minute, 100*time.Millisecond).Should(Equal(3), pod)
		}
	})

	t.Run("with both replicas down a commit waits and the hub says why", func(t *testing.T) {
		g := NewWithT(t)
		servers.Server("db-1").Kill()
		servers.Server("db-2").Kill()
		g.Eventually(func() string {
			cond, _ := replication(g, key, aws)
			return cond.Reason
		}, time.Minute, 250*time.Millisecond).Should(Equal(v1alpha1.ReasonReplicasNotInSync))
		g.Expect(condition(get(g, key), v1alpha1.ConditionReady)).To(Equal(metav1.ConditionFalse))
		g.Eventually(func() []string { return endpointPods(g, aws, "repl", c.ReplicasServiceName()) },
			time.Minute, 250*time.Millisecond).Should(BeEmpty())

		primary := servers.Server("db-0").OpenRoot()
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := primary.ExecContext(wctx, "INSERT INTO shop.orders VALUES (4)")
		g.Expect(err).To(HaveOccurred(), "a commit returned with no replica to acknowledge it")

		// A replica comes back: the commit that waited completes, and it reaches the replica.
		servers.Server("db-1").Restart()
		g.Eventually(func() (int, error) { return countOrders(servers.Server("db-1")) },
			time.Minute, 100*time.Millisecond).Should(Equal(4))
		servers.Server("db-2").Restart()
		g.Eventually(func() int32 {
			_, mr := replication(g, key, aws)
			if mr == nil {
				return -1
			}
			return mr.ReplicasInSync
		}, time.Minute, 250*time.Millisecond).Should(Equal(int32(2)))
	})

	t.Run("a replica whose data is wiped after the primary purged its binary logs is seeded and catches up", func(t *testing.T) {
		g := NewWithT(t)
		// The primary's binary logs no longer hold the rows (as after PURGE BINARY LOGS or their expiry):
		// GTID auto-positioning alone cannot bring an empty replica up to date.
		servers.Server("db-0").PurgeBinaryLogs()
		primary := servers.Server("db-0").OpenRoot()
		for id := 100; id < 110; id++ {
			_, err := primary.Exec("INSERT INTO shop.orders VALUES (?)", id)
			g.Expect(err).NotTo(HaveOccurred())
		}
		fresh := servers.StartWithRoot("db-2", cnf, script, rootPassword) // a new, empty data directory for the Pod
		g.Eventually(func() (int, error) { return countOrders(fresh) }, 3*time.Minute, 250*time.Millisecond).
			Should(Equal(14))
		g.Expect(checksum(g, fresh)).To(Equal(checksum(g, servers.Server("db-0"))))

		// It was seeded by the member controller's Job, from the replica in sync, and replicates from the
		// primary: a row written now reaches it.
		var job batchv1.Job
		g.Eventually(func() (int32, error) {
			err := members[aws].Get(ctx, client.ObjectKey{Namespace: "repl", Name: "db-seed-2"}, &job)
			return job.Status.Succeeded, err
		}, time.Minute, 250*time.Millisecond).Should(BeEquivalentTo(1))
		g.Expect(job.Spec.Template.Spec.Containers[0].Env).To(ContainElement(
			corev1.EnvVar{Name: "MYSQL_HOST", Value: "db-1." + c.HeadlessServiceName()}))
		_, err := primary.Exec("INSERT INTO shop.orders VALUES (110)")
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(func() (int, error) { return countOrders(fresh) }, time.Minute, 250*time.Millisecond).
			Should(Equal(15))
		g.Eventually(func() string { return get(g, key).Status.Serving }, time.Minute, 250*time.Millisecond).
			Should(Equal("3/3"))
		_, mr := replication(g, key, aws)
		g.Expect(mr.ReplicasInSync).To(Equal(int32(2)))
		g.Expect(mr.ErrantReplicas).To(BeEmpty())
		g.Eventually(func() []string { return endpointPods(g, aws, "repl", c.ReplicasServiceName()) },
			time.Minute, 250*time.Millisecond).Should(Equal([]string{"db-1", "db-2"}))
	})

	t.Run("a switchover requested on the hub moves the primary", func(t *testing.T) {
		g := NewWithT(t)
		update(g, key, func(c *v1alpha1.MySQLCluster) { c.Spec.Primaries = map[string]int32{aws: 1} })
		g.Eventually(func() metav1.Condition {
			return findMemberCondition(memberStatus(get(g, key), aws), v1alpha1.MemberConditionPrimaryAsRequested)
		}, time.Minute, 250*time.Millisecond).Should(And(HaveField("Status", metav1.ConditionTrue),
			HaveField("Reason", v1alpha1.ReasonPrimaryAsRequested)))
		_, mr := replication(g, key, aws)
		g.Expect(mr.Primary).To(Equal("db-1"))
		g.Expect(mr.RequestedPrimary).To(Equal("db-1"))
		g.Expect(mr.LastTransition).To(And(HaveField("Kind", "Switchover"), HaveField("From", "db-0"),
			HaveField("To", "db-1")))
		g.Eventually(func() []string { return endpointPods(g, aws, "repl", c.PrimaryServiceName()) },
			time.Minute, 250*time.Millisecond).Should(Equal([]string{"db-1"}))
		g.Eventually(func() []string { return replicationEvents(g, c, "Switchover") }, 30*time.Second,
			250*time.Millisecond).Should(ContainElement(ContainSubstring("from db-0 to db-1")))
	})

	t.Run("a switchover to a replica that is down is refused until it is back", func(t *testing.T) {
		g := NewWithT(t)
		servers.Server("db-2").Kill()
		g.Eventually(func() []string {
			_, mr := replication(g, key, aws)
			return mr.Unreachable
		}, time.Minute, 250*time.Millisecond).Should(Equal([]string{"db-2"}))
		update(g, key, func(c *v1alpha1.MySQLCluster) { c.Spec.Primaries = map[string]int32{aws: 2} })
		g.Eventually(func() metav1.Condition {
			return findMemberCondition(memberStatus(get(g, key), aws), v1alpha1.MemberConditionPrimaryAsRequested)
		}, time.Minute, 250*time.Millisecond).Should(And(HaveField("Status", metav1.ConditionFalse),
			HaveField("Reason", v1alpha1.ReasonSwitchoverRefused), HaveField("Message", ContainSubstring("db-2"))))
		_, mr := replication(g, key, aws)
		g.Expect(mr.Primary).To(Equal("db-1"), "a refused switchover leaves the primary where it is")

		// The request stands: once the target is back and in sync, the switchover goes through.
		servers.Server("db-2").Restart()
		g.Eventually(func() string {
			_, mr := replication(g, key, aws)
			return mr.Primary
		}, 2*time.Minute, 250*time.Millisecond).Should(Equal("db-2"))
		g.Eventually(func() (int, error) { return countOrders(servers.Server("db-2")) }).Should(Equal(15))
	})

	t.Run("a killed primary is failed over and the hub shows it", func(t *testing.T) {
		g := NewWithT(t)
		update(g, key, func(c *v1alpha1.MySQLCluster) { c.Spec.Primaries = nil })
		before := failoverCount(g, c, aws)
		servers.Server("db-2").Kill()
		g.Eventually(func() *v1alpha1.ReplicationTransition {
			_, mr := replication(g, key, aws)
			return mr.LastTransition
		}, 2*time.Minute, 250*time.Millisecond).Should(And(Not(BeNil()), HaveField("Kind", "Failover"),
			HaveField("From", "db-2")))
		_, mr := replication(g, key, aws)
		g.Expect(mr.Primary).To(BeElementOf("db-0", "db-1"))
		g.Expect(replicationEvents(g, c, "Failover")).To(ContainElement(ContainSubstring("from db-2 to " + mr.Primary)))
		g.Expect(failoverCount(g, c, aws) - before).To(BeNumerically("==", 1))
		primary := servers.Server(mr.Primary).OpenRoot()
		_, err := primary.Exec("INSERT INTO shop.orders VALUES (5)")
		g.Expect(err).NotTo(HaveOccurred(), "writes resume on the new primary")
	})

	t.Run("a frozen primary holding a commit no replica received is rebuilt when it thaws, and a second fault is failed over", func(t *testing.T) {
		g := NewWithT(t)
		servers.Server("db-2").Restart() // killed above: it rejoins
		inSync := func() int32 {
			_, mr := replication(g, key, aws)
			if mr == nil {
				return -1
			}
			return mr.ReplicasInSync
		}
		g.Eventually(inSync, 2*time.Minute, 250*time.Millisecond).Should(Equal(int32(2)))
		_, mr := replication(g, key, aws)
		old := mr.Primary
		var others []string
		for _, p := range []string{"db-0", "db-1", "db-2"} {
			if p != old {
				others = append(others, p)
			}
		}
		want, err := countOrders(servers.Server(old))
		g.Expect(err).NotTo(HaveOccurred())

		// A commit that waits for an acknowledgement no replica can give (both are down), and the primary freezes
		// with it: it is in the primary's binary log and nowhere else, and its client is never told it committed.
		for _, p := range others {
			servers.Server(p).Kill()
		}
		inflight := make(chan error, 1)
		go func() {
			_, err := servers.Server(old).OpenRoot().Exec("INSERT INTO shop.orders VALUES (999)")
			inflight <- err
		}()
		g.Eventually(func() int {
			var n int
			_ = servers.Server(old).OpenRoot().QueryRow("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS " +
				"WHERE VARIABLE_NAME = 'Rpl_semi_sync_master_wait_sessions'").Scan(&n)
			return n
		}, 30*time.Second, 100*time.Millisecond).Should(Equal(1), "the commit waits for an acknowledgement")
		servers.Server(old).Freeze()
		for _, p := range others {
			servers.Server(p).Restart()
		}
		g.Eventually(func() string {
			_, mr := replication(g, key, aws)
			return mr.Primary
		}, 2*time.Minute, 250*time.Millisecond).Should(BeElementOf(others))
		servers.Server(old).Thaw()
		g.Expect(<-inflight).To(HaveOccurred(), "the in-flight commit was acknowledged")

		// It comes back errant with that commit, is emptied by itself, seeded from the set, and in sync again.
		var rep *v1alpha1.ReplicationReport
		g.Eventually(func() []v1alpha1.ServerRebuild {
			rep = memberReport(g, aws, "repl", c.StatefulSetName())
			return rep.Rebuilds
		}, 2*time.Minute, 250*time.Millisecond).Should(ContainElement(HaveField("Pod", old)))
		t.Logf("rebuilt: %+v", rep.Rebuilds[0])
		g.Expect(rep.Rebuilds[0].Request).To(BeEmpty(), "rebuilt without a human")
		g.Expect(rep.Rebuilds[0].Discarded).NotTo(BeEmpty())
		g.Eventually(inSync, 3*time.Minute, 250*time.Millisecond).Should(Equal(int32(2)))
		_, mr = replication(g, key, aws)
		g.Expect(mr.ErrantReplicas).To(BeEmpty())
		g.Expect(mr.Rebuilds).To(ContainElement(HaveField("Pod", old)), "the hub shows the rebuild")
		g.Eventually(func() []string { return replicationEvents(g, c, "ServerRebuilt") }, 30*time.Second,
			250*time.Millisecond).Should(ContainElement(ContainSubstring(old)))
		for _, p := range []string{"db-0", "db-1", "db-2"} {
			g.Eventually(func() (int, error) { return countOrders(servers.Server(p)) }, time.Minute,
				250*time.Millisecond).Should(Equal(want), "%s holds every committed row and not the unacknowledged one", p)
		}
		g.Expect(checksum(g, servers.Server(old))).To(Equal(checksum(g, servers.Server(mr.Primary))))

		// A second fault right after: the new primary is killed, and the writes resume on another.
		second := mr.Primary
		servers.Server(second).Kill()
		g.Eventually(func() string {
			_, mr := replication(g, key, aws)
			return mr.Primary
		}, 2*time.Minute, 250*time.Millisecond).Should(And(Not(Equal(second)), Not(BeEmpty())))
		_, mr = replication(g, key, aws)
		_, err = servers.Server(mr.Primary).OpenRoot().Exec("INSERT INTO shop.orders VALUES (6)")
		g.Expect(err).NotTo(HaveOccurred(), "writes resume after the second fault")
		servers.Server(second).Restart()
	})

	g.Expect(hub.Delete(ctx, get(g, key))).To(Succeed())
	eventuallyGone(g, key)
}

// memberReport is the member controller's report on a StatefulSet in a member, read from its ConfigMap.
func memberReport(g Gomega, member, ns, sts string) *v1alpha1.ReplicationReport {
	var cm corev1.ConfigMap
	g.Expect(members[member].Get(context.Background(), client.ObjectKey{Namespace: ns,
		Name: v1alpha1.ReplicationReportName(sts)}, &cm)).To(Succeed())
	rep := &v1alpha1.ReplicationReport{}
	g.Expect(json.Unmarshal([]byte(cm.Data[v1alpha1.ReplicationReportKey]), rep)).To(Succeed())
	return rep
}

// replicationEvents are the notes of the Events with the given reason on the MySQLCluster.
func replicationEvents(g Gomega, c *v1alpha1.MySQLCluster, reason string) []string {
	var list eventsv1.EventList
	g.Expect(hub.List(context.Background(), &list, client.InNamespace(c.Namespace))).To(Succeed())
	var notes []string
	for _, e := range list.Items {
		if e.Regarding.Name == c.Name && e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// failoverCount reads the manager's mysqlfleet_member_failovers_total for the MySQLCluster in a member.
func failoverCount(g Gomega, c *v1alpha1.MySQLCluster, member string) float64 {
	for _, m := range managerMetrics(g)["mysqlfleet_member_failovers_total"].GetMetric() {
		if l := labelsOf(m); l["cluster_namespace"] == c.Namespace && l["cluster_name"] == c.Name && l["member"] == member {
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
