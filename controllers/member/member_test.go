package member

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/clustering"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

// The member controller runs in-process against a real API server (testfleet.APIServer) and real mariadbd
// processes (mysqltest), as its own ServiceAccount with the RBAC of RBAC (impersonated), with leader election
// on. The StatefulSet and the credentials Secret are what render makes for a MariaDB MySQLCluster; the Pods
// are made by the test (no kubelet), their IPs set through the status subresource, and the resolver maps each
// Pod to the loopback server standing for it.

const (
	testNS         = "shop"
	controllerNS   = "mysqlfleet-system"
	rootPassword   = `r00t'p@ss/w\d`
	adminPassword  = `adm;n'pw`
	replPassword   = `r\epl"pw`
	convergeWithin = 90 * time.Second
)

// writeCounter counts the requests that change something, other than the leader election's Lease and Events.
type writeCounter struct {
	mu     sync.Mutex
	writes []string
}

// wrap counts the requests of every client built from the config (the cache, the client, leader election).
func (w *writeCounter) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodGet && !strings.Contains(req.URL.Path, "/leases") &&
			!strings.Contains(req.URL.Path, "/events") {
			w.mu.Lock()
			w.writes = append(w.writes, req.Method+" "+req.URL.Path)
			w.mu.Unlock()
		}
		return next.RoundTrip(req)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func (w *writeCounter) snapshot() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.writes)
}

// env is one API server, a controller running in it, and the servers behind a set's Pods.
type env struct {
	t      *testing.T
	ctx    context.Context
	cancel context.CancelFunc
	// cfg is the API server's administrator; c is a client with it.
	cfg    *rest.Config
	c      client.Client
	r      *Reconciler
	writes *writeCounter
	// addrs maps "<namespace>/<pod>" to the server the resolver returns for it.
	mu    sync.Mutex
	addrs map[string]clustering.Address
}

// adminOf is where a test server is reached (see Resolver): its own administrative port.
func adminOf(s *mysqltest.Server) clustering.Address {
	return clustering.Address{Host: s.Host, Port: s.AdminPort}
}

func (e *env) resolve(p *corev1.Pod) (clustering.Address, error) {
	if p.Status.PodIP == "" {
		return clustering.Address{}, fmt.Errorf("pod %s has no IP yet", p.Name)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	a, ok := e.addrs[p.Namespace+"/"+p.Name]
	if !ok {
		return clustering.Address{}, fmt.Errorf("no server stands for pod %s", p.Name)
	}
	return a, nil
}

// startAPI starts an API server with the test's namespaces and the member controller's RBAC, and returns the
// env (no controller yet) and the controller's identity: a config that impersonates its ServiceAccount.
func startAPI(t *testing.T) (*env, *rest.Config) {
	t.Helper()
	cfg := testfleet.APIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := client.New(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, ctx: ctx, cancel: cancel, cfg: cfg, c: c, addrs: map[string]clustering.Address{}}
	for _, ns := range []string{testNS, controllerNS} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range render.MemberControllerRBAC(controllerNS) {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("failed to create %T %s: %v", o, o.GetName(), err)
		}
	}

	// The controller's identity: its ServiceAccount, so that the RBAC above is what it may do.
	sa := rest.CopyConfig(cfg)
	sa.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + controllerNS + ":" + render.MemberControllerName,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + controllerNS, "system:authenticated"},
	}
	// The RBAC is enforced: a test that passed because everything is allowed would prove nothing.
	saClient, err := client.New(sa, client.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	if err := saClient.List(ctx, &corev1.SecretList{}); !apierrors.IsForbidden(err) {
		t.Fatalf("listing Secrets as the controller's ServiceAccount: got %v, want Forbidden", err)
	}
	return e, sa
}

// startEnv starts an API server and the member controller in-process, as its ServiceAccount, with leader
// election, reaching each Pod's server through the env's resolver.
func startEnv(t *testing.T) *env {
	t.Helper()
	e, sa := startAPI(t)
	ctx := e.ctx
	e.writes = &writeCounter{}
	sa.Wrap(e.writes.wrap)

	mgr, r, err := newManager(sa, Options{
		Namespace:      controllerNS,
		LeaderElection: true,
		LeaseDuration:  4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: time.Second,
		MetricsBindAddress: "0", HealthProbeBindAddress: "0",
		Timing: Timing{PollInterval: 300 * time.Millisecond, BusyInterval: 200 * time.Millisecond,
			StatusTimeout: 2 * time.Second, PassTimeout: time.Minute, MaxLag: 5 * time.Second,
			ReplicaConnectRetry: time.Second},
		MaxConcurrentReconciles:      2,
		Resolver:                     e.resolve,
		SkipControllerNameValidation: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.r = r
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		e.cancel()
		if err := <-done; err != nil {
			t.Errorf("the member controller stopped with an error: %v", err)
		}
	})
	return e
}

// initRoot does what the official image's entrypoint does on first start with MYSQL_ROOT_PASSWORD: root@'%'
// with that password, out of the binary log. It also gives the password to the loopback root accounts that
// mariadb-install-db made, which TCP logins from 127.0.0.1 would otherwise match.
func initRoot(t *testing.T, s *mysqltest.Server) {
	t.Helper()
	ctx := context.Background()
	conn, err := s.OpenRoot().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	rows, err := conn.QueryContext(ctx, "SELECT Host FROM mysql.user WHERE User = 'root' AND Host IN ('127.0.0.1', '::1')")
	if err != nil {
		t.Fatal(err)
	}
	var hosts []string
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, h)
	}
	_ = rows.Close()
	pw := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(rootPassword)
	stmts := []string{"SET SESSION sql_log_bin = 0"}
	for _, h := range hosts {
		stmts = append(stmts, fmt.Sprintf("ALTER USER 'root'@'%s' IDENTIFIED BY '%s'", h, pw))
	}
	stmts = append(stmts,
		fmt.Sprintf("CREATE USER IF NOT EXISTS 'root'@'%%' IDENTIFIED BY '%s'", pw),
		"GRANT ALL PRIVILEGES ON *.* TO 'root'@'%' WITH GRANT OPTION")
	for _, q := range stmts {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// renderSet is what the hub renders, for member eu1, for a MariaDB MySQLCluster of n replicas, with opts.
func renderSet(t *testing.T, name, uid string, n int, opts ...render.Option) *render.Objects {
	t.Helper()
	mc := &v1alpha1.MySQLCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, UID: types.UID(uid)},
		Spec: v1alpha1.MySQLClusterSpec{Engine: v1alpha1.EngineMariaDB, Version: "10.11", Replicas: int32(n),
			Storage: v1alpha1.Storage{Size: resource.MustParse("1Gi")}},
	}
	objs, err := render.Render(mc, placement.Member{Name: "eu1", Cloud: v1alpha1.CloudAWS},
		render.Credentials{RootPassword: rootPassword, AdminPassword: adminPassword, ReplicationPassword: replPassword},
		opts...)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// addSet creates what the hub renders for a MariaDB MySQLCluster of n replicas (StatefulSet and credentials
// Secret, applied as the hub does, after opts changed them), and the n Pods the StatefulSet controller would
// make. Pod i is served by addrs[i], and its Pod IP is addrs[i]'s host.
func (e *env) addSet(name, uid string, addrs []clustering.Address, opts ...func(*render.Objects)) *appsv1.StatefulSet {
	e.t.Helper()
	objs := renderSet(e.t, name, uid, len(addrs))
	for _, o := range opts {
		o(objs)
	}
	if err := e.c.Apply(e.ctx, objs.Secret, client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership); err != nil {
		e.t.Fatal(err)
	}
	if err := e.c.Apply(e.ctx, objs.StatefulSet, client.FieldOwner(v1alpha1.FieldManager),
		client.ForceOwnership); err != nil {
		e.t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{}
	if err := e.c.Get(e.ctx, types.NamespacedName{Namespace: testNS, Name: name}, sts); err != nil {
		e.t.Fatal(err)
	}
	for i, a := range addrs {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: podName(sts, i), Namespace: testNS, Labels: sts.Spec.Template.Labels,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(sts,
					appsv1.SchemeGroupVersion.WithKind("StatefulSet"))},
			},
			// The volumes come from claims the StatefulSet controller would make; the Pod needs none here.
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: render.MySQLContainerName,
				Image: sts.Spec.Template.Spec.Containers[0].Image}}},
		}
		if err := e.c.Create(e.ctx, pod); err != nil {
			e.t.Fatal(err)
		}
		pod.Status.PodIP = a.Host
		pod.Status.Phase = corev1.PodRunning
		if err := e.c.Status().Update(e.ctx, pod); err != nil {
			e.t.Fatal(err)
		}
		e.mu.Lock()
		e.addrs[testNS+"/"+pod.Name] = a
		e.mu.Unlock()
	}
	return sts
}

// initScript is the script the rendered credentials Secret of set name holds for the image's init directory.
func (e *env) initScript(name string) string {
	e.t.Helper()
	sec := &corev1.Secret{}
	if err := e.c.Get(e.ctx, types.NamespacedName{Namespace: testNS, Name: name + "-credentials"}, sec); err != nil {
		e.t.Fatal(err)
	}
	script := string(sec.Data[v1alpha1.InitScriptKey])
	if script == "" {
		e.t.Fatalf("the credentials Secret of %s has no %s", name, v1alpha1.InitScriptKey)
	}
	return script
}

// runScript runs an SQL script on the server as root over its socket, in one session, as the official image's
// entrypoint runs the scripts of its init directory.
func runScript(t *testing.T, s *mysqltest.Server, script string) {
	t.Helper()
	db, err := sql.Open("mysql", s.RootDSN()+"?multiStatements=true")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	if _, err := db.Exec(script); err != nil {
		t.Fatalf("the init script failed: %v\n%s", err, script)
	}
}

// report reads the set's report ConfigMap from the API server; nil while there is none.
func (e *env) report(sts string) (*corev1.ConfigMap, *v1alpha1.ReplicationReport) {
	cm := &corev1.ConfigMap{}
	err := e.c.Get(e.ctx, types.NamespacedName{Namespace: testNS, Name: v1alpha1.ReplicationReportName(sts)}, cm)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		e.t.Fatal(err)
	}
	var rep v1alpha1.ReplicationReport
	if err := json.Unmarshal([]byte(cm.Data[v1alpha1.ReplicationReportKey]), &rep); err != nil {
		return cm, nil
	}
	return cm, &rep
}

// roles are the Pods' role labels, by Pod name ("" for none).
func (e *env) roles(sts *appsv1.StatefulSet) map[string]string {
	out := map[string]string{}
	for i := range instances(sts) {
		p := &corev1.Pod{}
		if err := e.c.Get(e.ctx, types.NamespacedName{Namespace: testNS, Name: podName(sts, i)}, p); err != nil {
			e.t.Fatal(err)
		}
		out[p.Name] = p.Labels[v1alpha1.RoleLabel]
	}
	return out
}

// formed tells whether the report shows primary p and every other listed Pod as an in-sync replica.
func formed(rep *v1alpha1.ReplicationReport, primary string, replicas ...string) error {
	if rep == nil {
		return fmt.Errorf("no report yet")
	}
	if rep.Primary != primary {
		return fmt.Errorf("primary is %q, want %q (report %+v)", rep.Primary, primary, rep)
	}
	for _, in := range rep.Instances {
		if in.Pod == primary && in.Role != v1alpha1.ReplicationRolePrimary {
			return fmt.Errorf("%s has role %s", in.Pod, in.Role)
		}
		if slices.Contains(replicas, in.Pod) && (in.Role != v1alpha1.ReplicationRoleReplica || !in.InSync) {
			return fmt.Errorf("%s has role %s, in sync %t, error %q", in.Pod, in.Role, in.InSync, in.Error)
		}
	}
	return nil
}

func openTCP(t *testing.T, a clustering.Address) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn("root", rootPassword, a, 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func countRows(db *sql.DB, id int) (int, error) {
	var n int
	err := db.QueryRow("SELECT COUNT(*) FROM shop.orders WHERE id = ?", id).Scan(&n)
	return n, err
}

func TestMemberController(t *testing.T) {
	servers := mysqltest.StartN(t, 3)
	addrs := make([]clustering.Address, len(servers))
	dbs := make([]*sql.DB, len(servers))
	for i, s := range servers {
		initRoot(t, s)
		addrs[i] = adminOf(s)
		dbs[i] = openTCP(t, clustering.Address{Host: s.Host, Port: s.Port})
	}
	// The official image runs the rendered init script when it initialises a data directory: servers 1 and 2
	// get it so, before the controller can reach them, as in a Pod (run after, a controller that connected
	// between the script's CREATE USER and GRANT kept a session without the global privileges, which MariaDB
	// reads at login: 90 s of "Access denied" in CI). Server 0 stands for a data directory initialised without
	// it (an earlier release): the controller, refused by server 0, creates the accounts there as root.
	script := string(renderSet(t, "shop", "uid-shop", len(servers)).Secret.Data[v1alpha1.InitScriptKey])
	for _, s := range servers[1:] {
		runScript(t, s, script)
	}
	e := startEnv(t)
	sts := e.addSet("shop", "uid-shop", addrs)
	key := client.ObjectKeyFromObject(sts)
	g0 := NewWithT(t)
	g0.Expect(e.initScript("shop")).To(Equal(script), "the script run is the one the Secret holds")

	// A set whose Pods are served by nothing: a port nobody listens on.
	ghostAddr := clustering.Address{Host: "127.0.0.1", Port: closedPort(t)}
	ghost := e.addSet("ghost", "uid-ghost", []clustering.Address{ghostAddr, ghostAddr})

	t.Run("forms a primary and two replicas", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func() error {
			_, rep := e.report("shop")
			return formed(rep, "shop-0", "shop-1", "shop-2")
		}, convergeWithin, 200*time.Millisecond).Should(Succeed())
		g.Eventually(func() map[string]string { return e.roles(sts) }, convergeWithin, 200*time.Millisecond).
			Should(Equal(map[string]string{"shop-0": "primary", "shop-1": "replica", "shop-2": "replica"}))

		cm, rep := e.report("shop")
		g.Expect(rep.LastTransition).To(Equal(&v1alpha1.ReplicationDecision{Kind: "Bootstrap", To: "shop-0"}))
		g.Expect(rep.LastError).To(BeEmpty())
		g.Expect(cm.Labels).To(Equal(map[string]string{
			v1alpha1.ManagedByLabel:            v1alpha1.ManagedByValue,
			v1alpha1.ClusterNameLabel:          "shop",
			v1alpha1.ClusterNamespaceLabel:     testNS,
			v1alpha1.ReplicationComponentLabel: v1alpha1.ReplicationComponent,
		}))
		g.Expect(cm.Annotations).To(HaveKeyWithValue(v1alpha1.StatefulSetUIDAnnotation, string(sts.UID)))
		g.Expect(metav1.IsControlledBy(cm, sts)).To(BeTrue(), "owner references %v", cm.OwnerReferences)
		g.Expect(cm.Data[v1alpha1.ReplicationRecordKey]).To(Equal(fmt.Sprintf(
			`{"primary":0,"primaryServerID":%d,"semiSyncWait":1,"change":{"kind":"Bootstrap","from":-1},"leaseTransitions":0}`,
			servers[0].ServerID)))
	})

	t.Run("a row written to the primary is on both replicas", func(t *testing.T) {
		g := NewWithT(t)
		for _, q := range []string{"CREATE DATABASE shop", "CREATE TABLE shop.orders (id INT PRIMARY KEY)",
			"INSERT INTO shop.orders VALUES (1)"} {
			_, err := dbs[0].Exec(q)
			g.Expect(err).NotTo(HaveOccurred(), q)
		}
		for _, i := range []int{1, 2} {
			g.Eventually(func() (int, error) { return countRows(dbs[i], 1) }, convergeWithin, 100*time.Millisecond).
				Should(Equal(1), "replica %d", i)
		}
	})

	t.Run("an idle set makes no writes", func(t *testing.T) {
		g := NewWithT(t)
		// Let whatever the row's replication changed settle: the report stops changing.
		g.Eventually(func() error {
			_, rep := e.report("shop")
			return formed(rep, "shop-0", "shop-1", "shop-2")
		}, convergeWithin, 200*time.Millisecond).Should(Succeed())
		waitPasses(t, e.r, key, 3)
		before := e.writes.snapshot()
		cm, _ := e.report("shop")
		pods := e.resourceVersions(sts)
		waitPasses(t, e.r, key, 8)
		after := e.writes.snapshot()
		g.Expect(after[len(before):]).To(BeEmpty(), "write requests while the set was idle")
		cm2, _ := e.report("shop")
		g.Expect(cm2.ResourceVersion).To(Equal(cm.ResourceVersion), "the report ConfigMap was written")
		g.Expect(e.resourceVersions(sts)).To(Equal(pods), "Pods were written")
	})

	t.Run("the annotation-requested switchover moves the primary", func(t *testing.T) {
		g := NewWithT(t)
		patch := client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"`+v1alpha1.PrimaryAnnotation+`":"1"}}}`))
		g.Expect(e.c.Patch(e.ctx, sts.DeepCopy(), patch)).To(Succeed())
		g.Eventually(func() error {
			_, rep := e.report("shop")
			return formed(rep, "shop-1", "shop-0", "shop-2")
		}, convergeWithin, 200*time.Millisecond).Should(Succeed())
		_, rep := e.report("shop")
		g.Expect(rep.LastTransition).To(Equal(&v1alpha1.ReplicationDecision{Kind: "Switchover", From: "shop-0",
			To: "shop-1"}))
		g.Eventually(func() map[string]string { return e.roles(sts) }, convergeWithin, 200*time.Millisecond).
			Should(Equal(map[string]string{"shop-0": "replica", "shop-1": "primary", "shop-2": "replica"}))
		_, err := dbs[1].Exec("INSERT INTO shop.orders VALUES (2)")
		g.Expect(err).NotTo(HaveOccurred())
		for _, i := range []int{0, 2} {
			g.Eventually(func() (int, error) { return countRows(dbs[i], 2) }, convergeWithin, 100*time.Millisecond).
				Should(Equal(1), "instance %d", i)
		}
	})

	t.Run("killing the primary's server leads to a failover", func(t *testing.T) {
		g := NewWithT(t)
		servers[1].Kill()
		var rep *v1alpha1.ReplicationReport
		g.Eventually(func() string {
			_, rep = e.report("shop")
			if rep == nil || rep.LastTransition == nil {
				return ""
			}
			return rep.LastTransition.Kind + " from " + rep.LastTransition.From
		}, convergeWithin, 200*time.Millisecond).Should(Equal("Failover from shop-1"))
		// The lowest index that holds everything: both survivors do, so shop-0.
		g.Expect(rep.LastTransition.To).To(Equal("shop-0"))
		g.Eventually(func() error {
			_, rep := e.report("shop")
			return formed(rep, "shop-0", "shop-2")
		}, convergeWithin, 200*time.Millisecond).Should(Succeed())
		_, rep = e.report("shop")
		dead := rep.Instances[1]
		g.Expect(dead.Role).To(Equal(v1alpha1.ReplicationRoleUnreachable))
		g.Expect(dead.Error).NotTo(BeEmpty())
		g.Eventually(func() map[string]string { return e.roles(sts) }, convergeWithin, 200*time.Millisecond).
			Should(Equal(map[string]string{"shop-0": "primary", "shop-1": "", "shop-2": "replica"}))
		// Nothing acknowledged was lost, and the new primary takes writes that reach the replica.
		g.Expect(countRows(dbs[0], 2)).To(Equal(1))
		_, err := dbs[0].Exec("INSERT INTO shop.orders VALUES (3)")
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(func() (int, error) { return countRows(dbs[2], 3) }, convergeWithin, 100*time.Millisecond).
			Should(Equal(1))
	})

	t.Run("a set whose servers cannot be reached reports that", func(t *testing.T) {
		g := NewWithT(t)
		_, rep := e.report("ghost")
		g.Expect(rep).NotTo(BeNil())
		g.Expect(rep.Primary).To(BeEmpty())
		g.Expect(rep.LastTransition).To(BeNil())
		g.Expect(rep.Decision.Kind).To(Equal("Refused"))
		g.Expect(rep.LastError).To(ContainSubstring("do not answer"))
		g.Expect(rep.Instances).To(HaveLen(2))
		for _, in := range rep.Instances {
			g.Expect(in.Role).To(Equal(v1alpha1.ReplicationRoleUnreachable), in.Pod)
			g.Expect(in.Error).To(ContainSubstring("connection refused"), in.Pod)
		}
		g.Expect(e.roles(ghost)).To(Equal(map[string]string{"ghost-0": "", "ghost-1": ""}))
	})
}

// waitPasses waits until the controller has made n more passes over a set.
func waitPasses(t *testing.T, r *Reconciler, key types.NamespacedName, n int) {
	t.Helper()
	start := r.passCount(key)
	NewWithT(t).Eventually(func() int { return r.passCount(key) - start }, convergeWithin, 50*time.Millisecond).
		Should(BeNumerically(">=", n))
}

func (e *env) resourceVersions(sts *appsv1.StatefulSet) map[string]string {
	out := map[string]string{}
	for i := range instances(sts) {
		p := &corev1.Pod{}
		if err := e.c.Get(e.ctx, types.NamespacedName{Namespace: testNS, Name: podName(sts, i)}, p); err != nil {
			e.t.Fatal(err)
		}
		out[p.Name] = p.ResourceVersion
	}
	return out
}

// closedPort is a loopback port nothing listens on (any more).
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}
