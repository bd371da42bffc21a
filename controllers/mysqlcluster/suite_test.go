package mysqlcluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/clusters"
	"github.com/mysqlfleet/mysqlfleet/controllers/mysqlcluster"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

// The suite runs one fleet for every test: a hub with the CRD, the three members of clusters/ with workloads
// (controllers, scheduler, kwok, storage), and a spare bare member registered by some tests only. The manager
// runs in-process, assembled by controllers/mysqlcluster exactly as cmd/manager does.
var (
	fleet   *testfleet.Fleet
	hub     client.Client
	members map[string]client.Client
	stopMgr func()
)

const (
	mgrNamespace = "mysqlfleet-system"
	spareMember  = "aws-us-east-1"
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrl.SetLogger(zap.New(zap.WriteTo(logSink()), zap.UseDevMode(true)))
	ctx := context.Background()
	_, defs, err := clusters.Fleet()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	spare := clusters.Definition{Name: spareMember, Role: clusters.RoleMember, Cloud: "aws", Region: "us-east-1",
		StorageClasses: []clusters.StorageClass{{Name: "gp3", Default: true}}}
	fleet, err = testfleet.Start(ctx, testfleet.Options{
		Members:              append(defs, spare),
		Workloads:            true,
		HubCRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = fleet.Stop() }()
	scheme := mysqlcluster.Scheme()
	hub = must(client.New(fleet.Hub.Config, client.Options{Scheme: scheme}))
	members = map[string]client.Client{}
	for _, mem := range fleet.Members {
		members[mem.Name] = must(client.New(mem.Config, client.Options{Scheme: scheme}))
	}
	if err := hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mgrNamespace}}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, d := range defs {
		if err := register(ctx, d.Name); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	startManager()
	defer stopManager()
	return m.Run()
}

// startManager runs the hub manager in-process, without leader election (one replica); adjust sets other
// options for a test that restarts it.
func startManager(adjust ...func(*mysqlcluster.Options)) {
	stopMgr = runManager(managerOptions(adjust...))
}

// managerOptions are the suite manager's options, adjusted.
func managerOptions(adjust ...func(*mysqlcluster.Options)) mysqlcluster.Options {
	opts := mysqlcluster.Options{
		Namespace:              mgrNamespace,
		MetricsBindAddress:     "0",
		HealthProbeBindAddress: "0",
		MemberSyncTimeout:      30 * time.Second,
		MemberHealthInterval:   time.Second,
		MemberTimeout:          5 * time.Second,
		DeletionTimeout:        15 * time.Second,
		// Often, so that TestOrphansAreReportedAndLeftAlone sees the series soon; it reads caches only.
		OrphanScanInterval: 2 * time.Second,
		// One more than the default, so that TestWorkers sees the option reach the controller.
		Workers: mysqlcluster.DefaultWorkers + 1,
	}
	opts.SkipControllerNameValidation = true // a restarted manager reuses the controller names
	for _, a := range adjust {
		a(&opts)
	}
	return opts
}

// runManager runs a manager in-process until stop is called; stop returns once it stopped.
func runManager(opts mysqlcluster.Options) (stop func()) {
	mgr := must(mysqlcluster.New(fleet.Hub.Config, opts))
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return func() {
		cancel()
		<-stopped
	}
}

func stopManager() {
	if stopMgr != nil {
		stopMgr()
		stopMgr = nil
	}
}

// register stores a fleet member's kubeconfig on the hub as a registration Secret, as `mysqlfleet join` does.
func register(ctx context.Context, name string) error {
	m := fleet.Member(name)
	labels := map[string]string{v1alpha1.MemberSecretLabel: "true", v1alpha1.CloudLabel: m.Cloud, v1alpha1.RegionLabel: m.Region}
	for k, v := range m.Labels {
		labels[k] = v
	}
	return registerKubeconfig(ctx, name, labels, m.Kubeconfig)
}

func registerKubeconfig(ctx context.Context, name string, labels map[string]string, kubeconfig []byte) error {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: mgrNamespace, Labels: labels},
		Data:       map[string][]byte{v1alpha1.KubeconfigKey: kubeconfig},
	}
	return hub.Create(ctx, s)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// logSink keeps the manager's log in a file beside the test binary's output, shown when a test fails.
func logSink() *os.File {
	f, err := os.CreateTemp("", "mysqlfleet-manager-*.log")
	if err != nil {
		return os.Stderr
	}
	managerLog = f.Name()
	return f
}

var managerLog string

// dumpOnFailure prints the manager's log and the MySQLCluster when a test fails.
func dumpOnFailure(t *testing.T, key client.ObjectKey) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		var c v1alpha1.MySQLCluster
		if err := hub.Get(context.Background(), key, &c); err == nil {
			t.Logf("MySQLCluster %s status: %+v", key, c.Status)
		}
		for _, m := range c.Spec.Placement.Members {
			if mc, ok := members[m]; ok {
				t.Logf("member %s, namespace %s:\n%s", m, key.Namespace, describeNamespace(mc, key.Namespace))
			}
		}
		if data, err := os.ReadFile(managerLog); err == nil {
			if len(data) > 20000 {
				data = data[len(data)-20000:]
			}
			t.Logf("manager log (tail):\n%s", data)
		}
	})
}

// describeNamespace says what a member runs in a namespace, for a failed test: each Pod's phase, node and
// conditions that are not True, each claim's phase and node, and the namespace's latest events (a Pod that stays
// unready is explained there: unschedulable, a volume not bound, a kubelet that never reported).
func describeNamespace(mc client.Client, ns string) string {
	ctx := context.Background()
	var b strings.Builder
	var pods corev1.PodList
	if err := mc.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		fmt.Fprintf(&b, "  pods: %v\n", err)
	}
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "  pod %s: %s on %q", p.Name, p.Status.Phase, p.Spec.NodeName)
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				fmt.Fprintf(&b, "; %s=%s %s %s", c.Type, c.Status, c.Reason, c.Message)
			}
		}
		b.WriteString("\n")
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := mc.List(ctx, &pvcs, client.InNamespace(ns)); err != nil {
		fmt.Fprintf(&b, "  claims: %v\n", err)
	}
	for _, p := range pvcs.Items {
		fmt.Fprintf(&b, "  claim %s: %s, node %q\n", p.Name, p.Status.Phase, p.Annotations["volume.kubernetes.io/selected-node"])
	}
	var events corev1.EventList
	if err := mc.List(ctx, &events, client.InNamespace(ns)); err != nil {
		fmt.Fprintf(&b, "  events: %v\n", err)
	}
	at := func(e corev1.Event) time.Time { // the scheduler writes events.k8s.io events, which have only EventTime
		if e.LastTimestamp.IsZero() {
			return e.EventTime.Time
		}
		return e.LastTimestamp.Time
	}
	sort.Slice(events.Items, func(i, j int) bool { return at(events.Items[i]).Before(at(events.Items[j])) })
	if n := len(events.Items); n > 25 {
		events.Items = events.Items[n-25:]
	}
	for _, e := range events.Items {
		fmt.Fprintf(&b, "  event %s %s/%s %s: %s\n", at(e).UTC().Format("15:04:05.000"),
			e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
	}
	return b.String()
}

// newCluster builds a MySQLCluster with test defaults; options adjust it.
func newCluster(ns, name string, opts ...func(*v1alpha1.MySQLCluster)) *v1alpha1.MySQLCluster {
	c := &v1alpha1.MySQLCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.MySQLClusterSpec{
			Version:   "8.4",
			Replicas:  1,
			Placement: v1alpha1.Placement{Members: []string{"aws-eu-west-1", "azure-westeurope", "gcp-us-central1"}},
			Storage:   v1alpha1.Storage{Size: resource.MustParse("1Gi")},
		},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

func create(t *testing.T, c *v1alpha1.MySQLCluster) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.Namespace}}
	if err := hub.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := hub.Create(ctx, c); err != nil {
		t.Fatal(err)
	}
	dumpOnFailure(t, client.ObjectKeyFromObject(c))
}

func get(g Gomega, key client.ObjectKey) *v1alpha1.MySQLCluster {
	var c v1alpha1.MySQLCluster
	g.Expect(hub.Get(context.Background(), key, &c)).To(Succeed())
	return &c
}

// update retries a change of the hub object on conflicts.
func update(g Gomega, key client.ObjectKey, change func(*v1alpha1.MySQLCluster)) {
	g.Eventually(func() error {
		c := get(g, key)
		change(c)
		return hub.Update(context.Background(), c)
	}, 10*time.Second, 100*time.Millisecond).Should(Succeed())
}

func condition(c *v1alpha1.MySQLCluster, t string) metav1.ConditionStatus {
	if cond := meta.FindStatusCondition(c.Status.Conditions, t); cond != nil && cond.ObservedGeneration == c.Generation {
		return cond.Status
	}
	return metav1.ConditionUnknown
}

// eventuallyReady waits until the MySQLCluster is Ready for its current generation.
// eventuallyConverged waits until the hub says that every placed member applied this generation and runs all its
// Pods ready. No member controller runs in this suite's members (their Pods are kwok's, with no server behind
// them), so no member is ever Ready here (Replicating stays Unknown): replication_test.go shows Ready with real
// servers.
func eventuallyConverged(g Gomega, key client.ObjectKey) *v1alpha1.MySQLCluster {
	var c *v1alpha1.MySQLCluster
	g.Eventually(func() string {
		c = get(g, key)
		if c.Status.ObservedGeneration != c.Generation {
			return "generation not observed"
		}
		if len(c.Status.Members) == 0 {
			return "no members"
		}
		for _, ms := range c.Status.Members {
			for _, t := range []string{v1alpha1.MemberConditionApplied, v1alpha1.MemberConditionPodsReady} {
				if findMemberCondition(&ms, t).Status != metav1.ConditionTrue {
					return ms.Name + " not " + t
				}
			}
		}
		return ""
	}, 2*time.Minute, 250*time.Millisecond).Should(BeEmpty())
	return c
}

// membersWith counts, as "n/placed", the members whose condition t is True.
func membersWith(c *v1alpha1.MySQLCluster, t string) string {
	n := 0
	for _, ms := range c.Status.Members {
		if findMemberCondition(&ms, t).Status == metav1.ConditionTrue {
			n++
		}
	}
	return fmt.Sprintf("%d/%d", n, len(c.Status.Members))
}

func statefulSet(g Gomega, member string, key client.ObjectKey) *appsv1.StatefulSet {
	var sts appsv1.StatefulSet
	g.Expect(members[member].Get(context.Background(), key, &sts)).To(Succeed())
	return &sts
}

func memberStatus(c *v1alpha1.MySQLCluster, name string) *v1alpha1.MemberStatus {
	for i := range c.Status.Members {
		if c.Status.Members[i].Name == name {
			return &c.Status.Members[i]
		}
	}
	return nil
}
