package member

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/clustering"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
	"github.com/mysqlfleet/mysqlfleet/test/dbpods"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

// Failover and fencing through the member controller as it runs in production, against real servers: the
// writes come from an application that follows the Pod labelled primary (what <name>-primary selects), and
// the servers boot as the database image boots them from what the hub renders (dbpods).

const (
	appUser     = "app"
	appPassword = "app-pw"
	// appScript is what the database image's entrypoint does with MYSQL_USER and MYSQL_DATABASE on a new data
	// directory, out of the binary log (it follows the rendered init script, which turns the log off).
	appScript = "CREATE DATABASE shop;\n" +
		"CREATE USER '" + appUser + "'@'%' IDENTIFIED BY '" + appPassword + "';\n" +
		"GRANT ALL ON shop.* TO '" + appUser + "'@'%';\n"
)

// set is a StatefulSet in the env, each Pod backed by a server of servers.
type set struct {
	e       *env
	sts     *appsv1.StatefulSet
	servers *dbpods.Servers
	// cnf and script are what each server boots with: the rendered my.cnf, and the rendered init script with
	// the application's database and account.
	cnf, script string

	mu   sync.Mutex
	apps map[string]*sql.DB
	// primary is the Pod labelled primary, as the application last saw it ("" for none).
	primary string
}

// startSet starts n servers booted with what the hub renders for a set named name (my.cnf, the accounts' init
// script, root's password) and adds the set, each Pod served by its server and with its server's host as Pod
// IP. opts go to every server.
func (e *env) startSet(name string, n int, opts ...mysqltest.Option) *set {
	e.t.Helper()
	objs := renderSet(e.t, name, "uid-"+name, n)
	cnf := objs.ConfigMap.Data[render.MyCnfKey]
	script := string(objs.Secret.Data[v1alpha1.InitScriptKey]) + appScript
	s := &set{e: e, servers: dbpods.New(e.t, opts...), apps: map[string]*sql.DB{}, cnf: cnf, script: script}
	addrs := make([]clustering.Address, n)
	for i := range n {
		addrs[i] = adminOf(s.servers.StartWithRoot(fmt.Sprintf("%s-%d", name, i), cnf, script, rootPassword))
	}
	s.sts = e.addSet(name, "uid-"+name, addrs)
	return s
}

func (s *set) pod(i int) string { return podName(s.sts, i) }

func (s *set) server(i int) *mysqltest.Server { return s.servers.Server(s.pod(i)) }

// report is the set's report; nil while there is none.
func (s *set) report() *v1alpha1.ReplicationReport {
	_, rep := s.e.report(s.sts.Name)
	return rep
}

// waitFormed waits until the report shows primary p and the others in sync.
func (s *set) waitFormed(g Gomega, p int, replicas ...int) {
	var names []string
	for _, r := range replicas {
		names = append(names, s.pod(r))
	}
	g.Eventually(func() error { return formed(s.report(), s.pod(p), names...) }, convergeWithin,
		200*time.Millisecond).Should(Succeed())
}

// lastTransition is the report's last change of primary, as "Kind from -> to".
func (s *set) lastTransition() string {
	rep := s.report()
	if rep == nil || rep.LastTransition == nil {
		return ""
	}
	return fmt.Sprintf("%s %s -> %s", rep.LastTransition.Kind, rep.LastTransition.From, rep.LastTransition.To)
}

// app is the application's pool to a Pod's server, in its database.
func (s *set) app(pod string) *sql.DB {
	s.mu.Lock()
	defer s.mu.Unlock()
	if db, ok := s.apps[pod]; ok {
		return db
	}
	srv := s.servers.Server(pod)
	db, err := sql.Open("mysql", srv.DSN(appUser, appPassword)+"shop?timeout=1s")
	if err != nil {
		s.e.t.Fatal(err)
	}
	s.e.t.Cleanup(func() { _ = db.Close() })
	s.apps[pod] = db
	return db
}

// root runs statements on a Pod's server as root over its socket, which writes past read_only as a human with
// too many privileges would.
func (s *set) root(i int, stmts ...string) {
	s.e.t.Helper()
	db := s.server(i).OpenRoot()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			s.e.t.Fatalf("%s: %s: %v", s.pod(i), q, err)
		}
	}
}

// followPrimary keeps, until the test ends, the Pod labelled primary as the application sees it: read from the
// API server every 50 ms, as a client of <name>-primary follows its endpoints.
func (s *set) followPrimary() {
	ctx, cancel := context.WithCancel(s.e.ctx)
	s.e.t.Cleanup(cancel)
	go wait.UntilWithContext(ctx, func(ctx context.Context) {
		var pods corev1.PodList
		if err := s.e.c.List(ctx, &pods, client.InNamespace(testNS), client.MatchingLabels{
			v1alpha1.InstanceLabel: s.sts.Labels[v1alpha1.InstanceLabel], v1alpha1.RoleLabel: v1alpha1.RolePrimary,
		}); err != nil {
			return
		}
		primary := ""
		if len(pods.Items) == 1 {
			primary = pods.Items[0].Name
		}
		s.mu.Lock()
		s.primary = primary
		s.mu.Unlock()
	}, 50*time.Millisecond)
}

// startWriter starts the application: one row at a time into shop.orders on the Pod labelled primary, the
// ordinal of that Pod recorded with each acknowledgement.
func (s *set) startWriter(first int) *mysqltest.Writer {
	s.root(s.primaryIndex(), "CREATE TABLE IF NOT EXISTS shop.orders (id INT PRIMARY KEY, server INT)")
	s.followPrimary()
	return mysqltest.StartWriter(s.e.t, first, s.writeTarget)
}

// writeTarget is where the application writes: the pool of the Pod labelled primary, and its ordinal.
func (s *set) writeTarget() (*sql.DB, int) {
	s.mu.Lock()
	pod := s.primary
	s.mu.Unlock()
	if pod == "" || s.servers.Server(pod) == nil {
		return nil, -1
	}
	return s.app(pod), s.ordinal(pod)
}

func (s *set) ordinal(pod string) int {
	var i int
	_, _ = fmt.Sscanf(strings.TrimPrefix(pod, s.sts.Name+"-"), "%d", &i)
	return i
}

// primaryIndex is the report's primary.
func (s *set) primaryIndex() int {
	rep := s.report()
	if rep == nil || rep.Primary == "" {
		s.e.t.Fatal("the set has no primary")
	}
	return s.ordinal(rep.Primary)
}

// missing returns the ids among ids that Pod i's server lacks.
func (s *set) missing(g Gomega, i int, ids []int) []int {
	have, err := mysqltest.IDs(s.app(s.pod(i)))
	g.Expect(err).NotTo(HaveOccurred())
	var out []int
	for _, id := range ids {
		if !have[id] {
			out = append(out, id)
		}
	}
	return out
}

// failOverToDelayedReplica makes replica 1 apply what it receives delaySeconds late and leaves it to
// acknowledge alone, then kills the primary 0 and starts replica 2 again: a failover must promote 1 (it alone
// received the last writes) and, promoting, wait until it has applied them. The failover waits for 2 (the
// acknowledgements might have been its), then records 1.
func (s *set) failOverToDelayedReplica(g Gomega, w *mysqltest.Writer, delaySeconds int) {
	s.root(1, "STOP SLAVE", fmt.Sprintf("CHANGE MASTER TO MASTER_DELAY = %d", delaySeconds), "START SLAVE")
	s.server(2).Stop()
	waitAcks(g, w, 50)
	s.server(0).Kill()
	s.server(2).Restart()
}

func waitAcks(g Gomega, w *mysqltest.Writer, n int) {
	g.Expect(w.WaitAcks(n, convergeWithin)).To(Succeed())
}

// kill -9 of the primary's server under a steady stream of acknowledged writes: the member controller fails over
// to a replica, the writes resume there, every acknowledged write is on it, the Pods' role labels follow, and
// the old primary, started again, rejoins as a replica (or, if it holds a commit no replica received, is kept
// out as errant).
func TestFailoverUnderWritesKeepsEveryAcknowledgedWrite(t *testing.T) {
	g := NewWithT(t)
	e := startEnv(t)
	s := e.startSet("kill", 3)
	s.waitFormed(g, 0, 1, 2)
	w := s.startWriter(1)
	waitAcks(g, w, 200)

	s.server(0).Kill()
	killed := time.Now()
	g.Eventually(s.lastTransition, convergeWithin, 100*time.Millisecond).Should(MatchRegexp(`^Failover kill-0 -> kill-[12]$`))
	p := s.primaryIndex()
	waitAcks(g, w, 100)
	at, where := w.FirstAckAfter(killed)
	t.Logf("killed to the first acknowledged write, on %s: %s", s.pod(where), at.Sub(killed).Round(time.Millisecond))
	g.Expect(where).To(Equal(p), "the writes resumed on the new primary")
	w.Stop()
	t.Logf("writer: %s", w)
	g.Expect(s.missing(g, p, w.Acked())).To(BeEmpty(), "acknowledged writes lost by the failover")
	other := 3 - p
	g.Eventually(func() map[string]string { return e.roles(s.sts) }, convergeWithin, 100*time.Millisecond).
		Should(Equal(map[string]string{"kill-0": "", s.pod(p): "primary", s.pod(other): "replica"}))
	g.Eventually(func() []int { return s.missing(g, other, w.Acked()) }, convergeWithin, 100*time.Millisecond).
		Should(BeEmpty())

	s.server(0).Restart()
	var last string // the report's last word on the old primary, for a failure to show why it did not rejoin
	g.Eventually(func() v1alpha1.ReplicationRole {
		if rep := s.report(); rep != nil {
			last = fmt.Sprintf("%+v (report: decision %q, last error %q)", rep.Instances[0], rep.Decision, rep.LastError)
			return rep.Instances[0].Role
		}
		return ""
	}, convergeWithin, 100*time.Millisecond).Should(BeElementOf(v1alpha1.ReplicationRoleReplica,
		v1alpha1.ReplicationRoleErrant), func() string { return fmt.Sprintf("the old primary, last reported: %s", last) })
	in := s.report().Instances[0]
	t.Logf("the old primary came back as %s (errant %q)", in.Role, in.ErrantGTIDs)
	if in.Role == v1alpha1.ReplicationRoleReplica {
		g.Eventually(func() []int { return s.missing(g, 0, w.Acked()) }, convergeWithin, 100*time.Millisecond).
			Should(BeEmpty())
	}
}

// The primary is killed while one replica's server is stopped: MariaDB's semi-sync waits for one
// acknowledgement, which may have come from either replica, so the controller refuses to fail over while the
// stopped one cannot be read, and no server is writable. Once it is back, the controller promotes the replica
// that holds every acknowledged write (not the lowest ordinal, which missed the writes made while it was
// down), and the returning replica follows it and catches up.
func TestFailoverWithAReplicaStopped(t *testing.T) {
	g := NewWithT(t)
	e := startEnv(t)
	s := e.startSet("stop", 3)
	s.waitFormed(g, 0, 1, 2)
	w := s.startWriter(1)
	waitAcks(g, w, 50)

	s.server(1).Stop()
	waitAcks(g, w, 50) // acknowledged by stop-2 alone
	s.server(0).Kill()
	g.Eventually(func() string {
		if rep := s.report(); rep != nil {
			return rep.Decision.Kind + ": " + rep.Decision.Reason
		}
		return ""
	}, convergeWithin, 100*time.Millisecond).Should(And(HavePrefix("Refused: failover refused"),
		ContainSubstring("2 of the 2 other instances must answer")))
	_, err := s.app("stop-2").Exec("INSERT INTO orders (id, server) VALUES (1000000, 2)")
	g.Expect(err).To(MatchError(ContainSubstring("read-only")), "stop-2 took a write while the failover was refused")

	s.server(1).Restart()
	g.Eventually(s.lastTransition, convergeWithin, 100*time.Millisecond).Should(Equal("Failover stop-0 -> stop-2"))
	waitAcks(g, w, 50)
	w.Stop()
	t.Logf("writer: %s", w)
	g.Expect(s.missing(g, 2, w.Acked())).To(BeEmpty(), "acknowledged writes lost by the failover")
	g.Eventually(func() []int { return s.missing(g, 1, w.Acked()) }, convergeWithin, 100*time.Millisecond).
		Should(BeEmpty(), "the stopped replica caught up from the new primary")
	g.Eventually(func() map[string]string { return e.roles(s.sts) }, convergeWithin, 100*time.Millisecond).
		Should(Equal(map[string]string{"stop-0": "", "stop-1": "replica", "stop-2": "primary"}))
}

// A transaction written on a replica past read_only (as root can) is errant: the controller records and reports
// it, stops the replica's receiver, and takes the replica's role label away, so that <name>-replicas no longer
// sends reads to it; the other replica stays in sync.
func TestErrantReplicaIsFencedAndLeavesTheReplicasService(t *testing.T) {
	g := NewWithT(t)
	e := startEnv(t)
	s := e.startSet("errant", 3)
	s.waitFormed(g, 0, 1, 2)
	s.root(0, "CREATE TABLE shop.orders (id INT PRIMARY KEY, server INT)", "INSERT INTO shop.orders VALUES (1, 0)")
	g.Eventually(func() map[string]string { return e.roles(s.sts) }, convergeWithin, 100*time.Millisecond).
		Should(Equal(map[string]string{"errant-0": "primary", "errant-1": "replica", "errant-2": "replica"}))

	s.root(2, "INSERT INTO shop.orders VALUES (100, 2)")
	g.Eventually(func() []string {
		rep := s.report()
		var errant []string
		for _, in := range rep.Instances {
			if in.Role == v1alpha1.ReplicationRoleErrant {
				errant = append(errant, in.Pod)
			}
		}
		return errant
	}, convergeWithin, 100*time.Millisecond).Should(Equal([]string{"errant-2"}))
	rep := s.report()
	g.Expect(rep.Instances[2].ErrantGTIDs).To(HavePrefix(fmt.Sprintf("0-%d-", s.server(2).ServerID)))
	g.Expect(rep.Instances[2].InSync).To(BeFalse())
	g.Expect(rep.Instances[1].InSync).To(BeTrue())
	g.Eventually(func() map[string]string { return e.roles(s.sts) }, convergeWithin, 100*time.Millisecond).
		Should(Equal(map[string]string{"errant-0": "primary", "errant-1": "replica", "errant-2": ""}))
	cm, _ := e.report("errant")
	g.Expect(cm.Data[v1alpha1.ReplicationRecordKey]).To(HavePrefix(`{"primary":0,"errant":[2],`))
	root, err := mysql.Open(mysql.MariaDBFlavor{}, s.server(2).RootDSN())
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = root.Close() }()
	st, err := root.Status(e.ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Replica.IOState).To(Equal("No"), "the errant replica still receives from the primary")

	// It stays out while the primary takes writes, which reach the other replica only.
	s.root(0, "INSERT INTO shop.orders VALUES (2, 0)")
	g.Eventually(func() []int { return s.missing(g, 1, []int{1, 2}) }, convergeWithin, 100*time.Millisecond).
		Should(BeEmpty())
	g.Consistently(func() []int { return s.missing(g, 2, []int{2}) }, time.Second, 100*time.Millisecond).
		Should(Equal([]int{2}))
	g.Expect(e.roles(s.sts)).To(HaveKeyWithValue("errant-2", ""))
	g.Expect(rep.Instances[2].Error).To(ContainSubstring("fenced until rebuilt by hand"),
		"a replica's own write is no deposed primary's unacknowledged tail: it is not rebuilt by itself")
	g.Expect(s.report().Rebuilds).To(BeEmpty())

	// A human asks for the rebuild (the hub copies mysqlfleet rebuild's request to the StatefulSet): the
	// controller empties it as root, reports what it discarded, and it catches up from the primary's binary
	// logs, back in sync without its errant row and with every row of the primary.
	errantGTIDs := rep.Instances[2].ErrantGTIDs
	// The servers here booted with the application's database too (appScript); the rendered init script has it
	// when spec.database is set, and an emptied server runs that script again.
	k, err := readContract(s.sts)
	g.Expect(err).NotTo(HaveOccurred())
	sec := &corev1.Secret{}
	g.Expect(e.c.Get(e.ctx, types.NamespacedName{Namespace: testNS, Name: k.credentialsSecret}, sec)).To(Succeed())
	sec.Data[v1alpha1.InitScriptKey] = append(sec.Data[v1alpha1.InitScriptKey], "CREATE DATABASE IF NOT EXISTS shop;\n"...)
	g.Expect(e.c.Update(e.ctx, sec)).To(Succeed())
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+
		v1alpha1.RebuildAnnotation+`":"eu1/errant-2=r1"}}}`))
	g.Expect(e.c.Patch(e.ctx, s.sts.DeepCopy(), patch)).To(Succeed())
	g.Eventually(func() error { return formed(s.report(), "errant-0", "errant-1", "errant-2") }, convergeWithin,
		200*time.Millisecond).Should(Succeed())
	rebuilds := s.report().Rebuilds
	g.Expect(rebuilds).To(HaveLen(1))
	g.Expect(rebuilds[0].Pod).To(Equal("errant-2"))
	g.Expect(rebuilds[0].Request).To(Equal("r1"))
	g.Expect(rebuilds[0].Discarded).To(Equal(errantGTIDs))
	g.Eventually(func() []int { return s.missing(g, 2, []int{1, 2}) }, convergeWithin, 100*time.Millisecond).
		Should(BeEmpty())
	g.Expect(s.missing(g, 2, []int{100})).To(Equal([]int{100}), "the errant row is gone")
	var events eventsv1.EventList
	g.Expect(e.c.List(e.ctx, &events, client.InNamespace(testNS))).To(Succeed())
	g.Expect(slices.ContainsFunc(events.Items, func(ev eventsv1.Event) bool {
		return ev.Reason == ReasonServerRebuilt && ev.Regarding.Name == "errant" &&
			strings.Contains(ev.Note, errantGTIDs)
	})).To(BeTrue(), "a ServerRebuilt Event on the StatefulSet naming what was discarded")
	// Carried out once: the request stays on the StatefulSet, and the server is not emptied again.
	g.Consistently(func() []v1alpha1.ServerRebuild { return s.report().Rebuilds }, 2*time.Second,
		200*time.Millisecond).Should(HaveLen(1))
}

// The primary's Pod is deleted while its server goes on running (a finalizer holds the Pod here; in a member,
// a node that stopped reporting does, or the 60 s the server takes to shut down): the controller fails over,
// and fences the old primary first, so that it is never writable beside the new one. A Pod being deleted is
// unhealthy (see unhealthy), not unreachable: its server is still read while it answers.
func TestDeletedPrimaryIsFencedAndFailedOver(t *testing.T) {
	g := NewWithT(t)
	e := startEnv(t)
	s := e.startSet("gone", 3)
	s.waitFormed(g, 0, 1, 2)
	s.root(0, "CREATE TABLE shop.orders (id INT PRIMARY KEY, server INT)", "INSERT INTO shop.orders VALUES (1, 0)")

	pod := &corev1.Pod{}
	g.Expect(e.c.Get(e.ctx, client.ObjectKey{Namespace: testNS, Name: "gone-0"}, pod)).To(Succeed())
	const finalizer = "test.mysqlfleet.io/hold"
	pod.Finalizers = append(pod.Finalizers, finalizer)
	g.Expect(e.c.Update(e.ctx, pod)).To(Succeed())
	t.Cleanup(func() {
		if err := e.c.Get(e.ctx, client.ObjectKeyFromObject(pod), pod); err == nil {
			pod.Finalizers = nil
			_ = e.c.Update(e.ctx, pod)
		}
	})
	g.Expect(e.c.Delete(e.ctx, pod)).To(Succeed())

	g.Eventually(s.lastTransition, convergeWithin, 100*time.Millisecond).Should(Equal("Failover gone-0 -> gone-1"))
	root, err := mysql.Open(mysql.MariaDBFlavor{}, s.server(0).RootDSN())
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = root.Close() }()
	st, err := root.Status(e.ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.ReadOnly).To(BeTrue(), "the deleted primary's server is still writable beside the new primary")
	in := s.report().Instances[0]
	g.Expect(in.Role).NotTo(Equal(v1alpha1.ReplicationRolePrimary))
	g.Expect(in.Error).To(Equal("unhealthy: pod gone-0 is being deleted"))
	g.Expect(e.roles(s.sts)).To(HaveKeyWithValue("gone-1", v1alpha1.RolePrimary))
	g.Expect(e.roles(s.sts)).NotTo(HaveKeyWithValue("gone-0", v1alpha1.RolePrimary))
	g.Expect(s.missing(g, 1, []int{1})).To(BeEmpty())
}
