package failover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/clusters"
	"github.com/mysqlfleet/mysqlfleet/controllers/member"
	"github.com/mysqlfleet/mysqlfleet/internal/clustering"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
	"github.com/mysqlfleet/mysqlfleet/test/dbpods"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

const (
	// controllerNS is the member controller's namespace, as `mysqlfleet join` installs it.
	controllerNS = "mysqlfleet-system"
	// setName is the MySQLCluster's name in every run; each run has a namespace of its own.
	setName = "db"
	// database and appUser are spec.database and spec.user: the application's account, which has no privilege
	// over read_only, so that a write reaching a read-only server is refused as it would be for an application.
	database = "bench"
	appUser  = "app"
)

// creds stand for the passwords the hub generates.
var creds = render.Credentials{
	RootPassword:        "bench-root-password",
	Password:            "bench-app-password",
	AdminPassword:       "bench-admin-password",
	ReplicationPassword: "bench-replication-password",
}

// productionTiming is cmd/member's flag defaults (--poll-interval, --busy-interval, --status-timeout,
// --pass-timeout, --max-lag, --replica-connect-retry): the benchmark measures the product as it ships.
var productionTiming = member.Timing{
	PollInterval:        5 * time.Second,
	BusyInterval:        time.Second,
	StatusTimeout:       3 * time.Second,
	PassTimeout:         2 * time.Minute,
	MaxLag:              10 * time.Second,
	ReplicaConnectRetry: 10 * time.Second,
}

// env is the member cluster and the member controller that every run shares, as one member controller serves
// every set of its member in production.
type env struct {
	ctx    context.Context
	c      client.WithWatch
	def    clusters.Definition
	timing member.Timing
	// kcmLog is the member's kube-controller-manager log, where the EndpointSlice controller says when it retries.
	kcmLog string
}

// startEnv starts one member with workloads (the fleet's hub is started too and left idle) and the member
// controller in it, as its own ServiceAccount with the RBAC `mysqlfleet join` grants, with cmd/member's defaults.
// Its log, and the member's kube-controller-manager log, go to logs.
func startEnv(b *testing.B, logs string) *env {
	b.Helper()
	log, err := os.Create(filepath.Join(logs, "member-controller.log"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = log.Close() })
	ctrl.SetLogger(zap.New(zap.WriteTo(log), zap.UseDevMode(true)))

	_, defs, err := clusters.Fleet()
	if err != nil {
		b.Fatal(err)
	}
	i := slices.IndexFunc(defs, func(d clusters.Definition) bool { return d.Cloud == string(v1alpha1.CloudAWS) })
	if i < 0 {
		b.Fatal("clusters/ defines no AWS member")
	}
	f := testfleet.ForTest(b, testfleet.Options{Members: defs[i : i+1], Workloads: true})
	m := f.Member(defs[i].Name)
	c, err := client.NewWithWatch(m.Config, client.Options{Scheme: member.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	timing := productionTiming
	timing.PollInterval, timing.StatusTimeout = *flagPollInterval, *flagStatusTimeout
	e := &env{ctx: ctx, c: c, def: defs[i], timing: timing,
		kcmLog: filepath.Join(m.Dir, "kube-controller-manager.log")}
	// Runs before the fleet stops and takes its directory away.
	b.Cleanup(func() {
		if data, err := os.ReadFile(e.kcmLog); err == nil {
			_ = os.WriteFile(filepath.Join(logs, "kube-controller-manager.log"), data, 0o644)
		}
	})

	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerNS}}); err != nil &&
		!apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	for _, o := range render.MemberControllerRBAC(controllerNS) {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			b.Fatal(err)
		}
	}
	cfg := rest.CopyConfig(m.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + controllerNS + ":" + render.MemberControllerName,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + controllerNS, "system:authenticated"},
	}
	// cmd/member's defaults throughout (unless -poll-interval or -status-timeout say otherwise): leader election on its Lease with the default durations, four sets at a
	// time. Only the metrics and probe listeners are off, and the Resolver maps Pods to the servers standing
	// behind them (in production it dials the Pod IP).
	mgr, err := member.New(cfg, member.Options{
		Namespace:               controllerNS,
		LeaderElection:          true,
		LeaseDuration:           15 * time.Second,
		RenewDeadline:           10 * time.Second,
		RetryPeriod:             2 * time.Second,
		MetricsBindAddress:      "0",
		HealthProbeBindAddress:  "0",
		Timing:                  timing,
		MaxConcurrentReconciles: 4,
		Resolver:                resolveAny,
	})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("the member controller stopped with an error: %v", err)
		}
	})
	return e
}

// setServers maps each run's namespace to the servers behind its Pods, for the one member controller that serves
// every run, and to the run's timeline while it is recorded.
var setServers = struct {
	sync.Mutex
	byNS      map[string]*dbpods.Servers
	timelines map[string]*Timeline
}{byNS: map[string]*dbpods.Servers{}, timelines: map[string]*Timeline{}}

func serversOf(ns string) (*dbpods.Servers, *Timeline) {
	setServers.Lock()
	defer setServers.Unlock()
	return setServers.byNS[ns], setServers.timelines[ns]
}

// recordPasses makes the Resolver note on tl when the member controller starts a pass over the set in ns (nil
// stops it).
func recordPasses(ns string, tl *Timeline) {
	setServers.Lock()
	defer setServers.Unlock()
	if tl == nil {
		delete(setServers.timelines, ns)
		return
	}
	setServers.timelines[ns] = tl
}

func setServersOf(ns string, s *dbpods.Servers) {
	setServers.Lock()
	defer setServers.Unlock()
	if s == nil {
		delete(setServers.byNS, ns)
		return
	}
	setServers.byNS[ns] = s
}

// resolveAny is the member controller's Resolver: the server behind a Pod of whichever run's set it belongs to. A
// pass resolves every Pod, ordinal 0 first, before it reads any server: the call for ordinal 0 marks when a pass
// starts, which tells how long a fault waited for the next poll.
func resolveAny(pod *corev1.Pod) (clustering.Address, error) {
	s, tl := serversOf(pod.Namespace)
	if tl != nil && pod.Name == setName+"-0" {
		tl.add("pass starts")
	}
	if s == nil {
		return clustering.Address{}, fmt.Errorf("no server runs for pod %s/%s", pod.Namespace, pod.Name)
	}
	return s.Resolve(pod)
}

// set is one run's MySQLCluster in the member: the objects render made for it and the servers behind its Pods.
type set struct {
	ns      string
	cluster *v1alpha1.MySQLCluster
	member  placement.Member
	servers *dbpods.Servers
}

// newSet renders a three-server MariaDB MySQLCluster for the member into namespace ns, starts a fresh server for
// each Pod with the rendered my.cnf and init script, and applies the objects as the hub does. The set is torn
// down when b ends.
func (e *env) newSet(b *testing.B, ns string) *set {
	b.Helper()
	s := &set{
		ns: ns,
		cluster: &v1alpha1.MySQLCluster{
			ObjectMeta: metav1.ObjectMeta{Name: setName, Namespace: ns, UID: uuid.NewUUID()},
			Spec: v1alpha1.MySQLClusterSpec{
				Engine: v1alpha1.EngineMariaDB, Version: "10.11", Replicas: 3,
				Storage:  v1alpha1.Storage{Size: resource.MustParse("1Gi")},
				Database: database, User: appUser,
			},
		},
		member:  placement.Member{Name: e.def.Name, Cloud: v1alpha1.Cloud(e.def.Cloud), Region: e.def.Region},
		servers: dbpods.New(b),
	}
	objs, err := render.Render(s.cluster, s.member, creds)
	if err != nil {
		b.Fatal(err)
	}
	cnf := objs.ConfigMap.Data[render.MyCnfKey]
	script := string(objs.Secret.Data[v1alpha1.InitScriptKey])
	for i := range int(s.cluster.Spec.Replicas) {
		srv := s.servers.Start(s.pod(i), cnf, script)
		if err := runAsRoot(srv.RootDSN(), entrypointScript()); err != nil {
			b.Fatalf("creating the database and the application's account on %s: %v", s.pod(i), err)
		}
	}
	setServersOf(ns, s.servers)
	// Registered after the servers, so it runs before they stop: the set leaves the member (and the member
	// controller forgets it) before its servers go away.
	b.Cleanup(func() { e.deleteSet(b, s) })
	for _, o := range objs.All() {
		if err := e.c.Apply(e.ctx, o, client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership); err != nil {
			b.Fatalf("applying %T: %v", o, err)
		}
	}
	return s
}

func (s *set) pod(i int) string { return fmt.Sprintf("%s-%d", setName, i) }

// entrypointScript is what the official image's entrypoint runs on a new data directory for MARIADB_DATABASE,
// MARIADB_USER and MARIADB_PASSWORD (spec.database, spec.user and its password), out of the binary log as the
// entrypoint does. dbpods runs only the rendered init script.
func entrypointScript() string {
	pw := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(creds.Password)
	return "SET SESSION sql_log_bin = 0;" +
		"CREATE DATABASE IF NOT EXISTS `" + database + "`;" +
		"CREATE USER '" + appUser + "'@'%' IDENTIFIED BY '" + pw + "';" +
		"GRANT ALL ON `" + database + "`.* TO '" + appUser + "'@'%';"
}

func runAsRoot(dsn, script string) error {
	db, err := sql.Open("mysql", dsn+"?multiStatements=true")
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	_, err = db.Exec(script)
	return err
}

// appDSN is the application's DSN for the server behind a Pod, over TCP.
func (s *set) appDSN(pod string) (string, error) {
	a, err := s.servers.MySQLAddr(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: pod}})
	if err != nil {
		return "", err
	}
	cfg := driver.NewConfig()
	cfg.User, cfg.Passwd, cfg.DBName = appUser, creds.Password, database
	cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(a.Host, strconv.Itoa(a.Port))
	// A connection attempt to a server that is gone fails at once on loopback; the bound only matters for a
	// server that hangs.
	cfg.Timeout = time.Second
	return cfg.FormatDSN(), nil
}

// deleteSet deletes the StatefulSet, then the namespace, and waits until the namespace is gone, so that the next
// run starts in a member that is as quiet as the first. The StatefulSet goes first so that the member controller
// forgets the set before its Pods are deleted: a primary Pod being deleted would otherwise start a failover.
func (e *env) deleteSet(b *testing.B, s *set) {
	ctx, cancel := context.WithTimeout(e.ctx, 3*time.Minute)
	defer cancel()
	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.cluster.StatefulSetName()}}
	if err := e.c.Delete(ctx, sts, client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil &&
		!apierrors.IsNotFound(err) {
		b.Logf("deleting StatefulSet %s/%s: %v", s.ns, sts.Name, err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}}
	if err := e.c.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
		b.Logf("deleting namespace %s: %v", s.ns, err)
		return
	}
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		err := e.c.Get(ctx, client.ObjectKeyFromObject(ns), ns)
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		b.Logf("namespace %s still there after 3 minutes", s.ns)
	}
	setServersOf(s.ns, nil)
}

// report reads the set's replication report and record; nil while there is none.
func (e *env) report(ctx context.Context, s *set) (*v1alpha1.ReplicationReport, clustering.Record, error) {
	cm := &corev1.ConfigMap{}
	err := e.c.Get(ctx, client.ObjectKey{Namespace: s.ns, Name: v1alpha1.ReplicationReportName(setName)}, cm)
	if apierrors.IsNotFound(err) {
		return nil, clustering.Record{}, nil
	}
	if err != nil {
		return nil, clustering.Record{}, err
	}
	rep, rec := parseReport(cm)
	return rep, rec, nil
}

// endpointPods are the Pods the ready endpoints of a Service's EndpointSlices name, sorted: where a client
// behind kube-proxy reaches.
func endpointPods(ctx context.Context, c client.Client, ns, svc string) ([]string, error) {
	var sl discoveryv1.EndpointSliceList
	if err := c.List(ctx, &sl, client.InNamespace(ns),
		client.MatchingLabels{discoveryv1.LabelServiceName: svc}); err != nil {
		return nil, err
	}
	return readyPods(sl.Items), nil
}

// waitFormed waits until the set has the primary want, every other server a replica in sync, a steady last
// pass, and <name>-primary reaching the primary alone. Then it creates the table the writer writes into,
// through the primary, as the application.
func (e *env) waitFormed(b *testing.B, s *set, want string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Minute)
	defer cancel()
	var last string
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		rep, _, err := e.report(ctx, s)
		if err != nil || rep == nil {
			last = fmt.Sprintf("no report (%v)", err)
			return false, nil
		}
		if err := formed(rep, want); err != nil {
			last = err.Error()
			return false, nil
		}
		pods, err := endpointPods(ctx, e.c, s.ns, s.cluster.PrimaryServiceName())
		if err != nil || !slices.Equal(pods, []string{want}) {
			last = fmt.Sprintf("%s reaches %v (%v)", s.cluster.PrimaryServiceName(), pods, err)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		b.Fatalf("the set in %s did not form with primary %s: %s", s.ns, want, last)
	}
	dsn, err := s.appDSN(want)
	if err != nil {
		b.Fatal(err)
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	if _, err := db.ExecContext(ctx, "CREATE TABLE writes (id BIGINT PRIMARY KEY)"); err != nil {
		b.Fatalf("creating the table on %s: %v", want, err)
	}
}

// formed says why the report does not show primary as the primary with every other instance a replica in sync
// after a steady pass, nil when it does.
func formed(rep *v1alpha1.ReplicationReport, primary string) error {
	if rep.Primary != primary {
		return fmt.Errorf("primary is %q, want %q", rep.Primary, primary)
	}
	if rep.Decision.Kind != string(clustering.Steady) {
		return fmt.Errorf("last decision %s", rep.Decision.Kind)
	}
	var errs []error
	for _, in := range rep.Instances {
		if in.Pod != primary && (in.Role != v1alpha1.ReplicationRoleReplica || !in.InSync) {
			errs = append(errs, fmt.Errorf("%s is %s, in sync %t %s", in.Pod, in.Role, in.InSync, in.Error))
		}
	}
	return errors.Join(errs...)
}

// logDir is where the member controller's log of a run goes (ignored by git, with the fleet benchmark's
// profiles).
func logDir(out, stamp string) (string, error) {
	dir := filepath.Join(out, "profiles", "failover-"+stamp)
	return dir, os.MkdirAll(dir, 0o755)
}

// endpointSliceRetries counts the EndpointSlice controller's retries of a Service because its informer cache had
// not yet seen its own last write ("EndpointSlice informer cache is out of date"): each waits out the controller's
// rate limiter, at least a second.
func (e *env) endpointSliceRetries(ns, svc string) int {
	data, err := os.ReadFile(e.kcmLog)
	if err != nil {
		return -1
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, ns+"/"+svc) && strings.Contains(line, "informer cache is out of date") {
			n++
		}
	}
	return n
}
