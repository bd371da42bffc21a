package main_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/clusters"
	"github.com/mysqlfleet/mysqlfleet/controllers/mysqlcluster"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

const (
	mgrNamespace = "mysqlfleet-system"
	// leaseName is the default of --leader-election-id.
	leaseName  = "mysqlfleet-manager"
	memberName = "aws-eu-west-1"

	// Short lease timings so that a takeover happens within seconds. The renew deadline must stay below the
	// lease duration and well above the retry period, as client-go's leader election requires.
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = 500 * time.Millisecond

	// Generous bounds: a slow machine must not fail the test. Nothing here asserts how fast a takeover is.
	timeout = 60 * time.Second
	polling = 100 * time.Millisecond
)

// Log lines the test looks for. client-go's leader election logs through klog (text on stderr); the manager logs
// through controller-runtime's zap logger (JSON on stderr). Both go to one file per process.
const (
	// logCandidate is logged by every replica when it starts campaigning for the Lease.
	logCandidate = "Attempting to acquire leader lease"
	// logAcquired is logged by the replica that wins the Lease; matched case-insensitively because older
	// client-go releases spelled it in lower case.
	logAcquired = "successfully acquired lease"
	// logEngaged is the fleet provider's line when a member's cluster is running on this replica.
	logEngaged = `"msg":"Member engaged"`
	// logApplied is the reconciler's V(4) line for every object it writes into a member.
	logApplied = `"msg":"Applied"`
	// logWorkers is controller-runtime's line when a controller starts processing its queue.
	logWorkers = `"msg":"Starting workers"`
)

// TestLeaderElection runs two replicas of the real manager binary against one hub and proves that exactly one of
// them reconciles, that the other takes over when the leader is killed outright, and that a replica stopped with
// SIGTERM gives the Lease back at once.
func TestLeaderElection(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	bin := buildManager(t)

	_, defs, err := clusters.Fleet()
	g.Expect(err).NotTo(HaveOccurred())
	i := slices.IndexFunc(defs, func(d clusters.Definition) bool { return d.Name == memberName })
	g.Expect(i).To(BeNumerically(">=", 0), "clusters/ defines no member %s", memberName)
	fleet := testfleet.ForTest(t, testfleet.Options{
		Members:              []clusters.Definition{defs[i]},
		HubCRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases")},
	})
	scheme := mysqlcluster.Scheme()
	hub, err := client.New(fleet.Hub.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	mem := fleet.Member(memberName)
	member, err := client.New(mem.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())
	memberHost := hostOf(t, mem.Config.Host)

	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: mgrNamespace}})).To(Succeed())
	g.Expect(register(ctx, hub, mem)).To(Succeed())

	a := startManager(t, bin, fleet.Hub.KubeconfigPath, "a")
	b := startManager(t, bin, fleet.Hub.KubeconfigPath, "b")
	dumpOnFailure(t, a, b)

	// The leader reconciles a new MySQLCluster into the member.
	c := &v1alpha1.MySQLCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: "leader-election", Name: "db"},
		Spec: v1alpha1.MySQLClusterSpec{
			Version:   "8.4",
			Replicas:  1,
			Placement: v1alpha1.Placement{Members: []string{memberName}},
			Storage:   v1alpha1.Storage{Size: resource.MustParse("1Gi")},
		},
	}
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: c.Namespace}})).To(Succeed())
	g.Expect(hub.Create(ctx, c)).To(Succeed())
	stsKey := client.ObjectKey{Namespace: c.Namespace, Name: c.StatefulSetName()}
	var sts appsv1.StatefulSet
	g.Eventually(func() error { return member.Get(ctx, stsKey, &sts) }).
		WithTimeout(timeout).WithPolling(polling).Should(Succeed(), "StatefulSet %s in member %s", stsKey, memberName)

	// Exactly one replica holds the Lease. controller-runtime names a replica "<hostname>_<uuid>", which no flag
	// sets, so the Lease cannot say which process it is: the processes' own logs do.
	var leader, standby *managerProcess
	g.Eventually(func(g Gomega) {
		g.Expect(a.acquired() != b.acquired()).To(BeTrue(), "exactly one replica acquired the Lease: a=%t b=%t", a.acquired(), b.acquired())
	}).WithTimeout(10 * time.Second).WithPolling(polling).Should(Succeed())
	leader, standby = a, b
	if b.acquired() {
		leader, standby = b, a
	}
	t.Logf("Replica %s (pid %d) leads; replica %s (pid %d) stands by", leader.name, leader.pid(), standby.name, standby.pid())
	firstHolder := holder(g, hub)
	g.Expect(firstHolder).NotTo(BeEmpty())

	// Only the leader works. The standby campaigns but engages no member, starts no controller and applies
	// nothing; its own client metrics show it never spoke to the member and never wrote to the hub.
	g.Expect(standby.log()).To(ContainSubstring(logCandidate), "the standby is a candidate")
	g.Expect(leader.log()).To(And(ContainSubstring(logEngaged), ContainSubstring(logWorkers), ContainSubstring(logApplied)))
	g.Expect(standby.log()).NotTo(Or(ContainSubstring(logEngaged), ContainSubstring(logWorkers), ContainSubstring(logApplied)))
	leaderReqs, standbyReqs := leader.requests(g), standby.requests(g)
	g.Expect(leaderReqs.to(memberHost)).To(BeNumerically(">", 0), "the leader's metrics count its requests to the member")
	g.Expect(standbyReqs.to(memberHost)).To(BeZero(), "the standby sent requests to the member: %v", standbyReqs)
	g.Expect(standbyReqs.successfulWrites()).To(BeZero(), "the standby wrote to the hub: %v", standbyReqs)
	g.Expect(managers(&sts)).To(ConsistOf(v1alpha1.CreateFieldManager), "the leader created the StatefulSet")

	// kill -9 the leader: it cannot release the Lease, so the standby takes over once the Lease expires.
	killedAt := time.Now()
	leader.signal(t, syscall.SIGKILL)
	g.Eventually(leader.done).WithTimeout(timeout).Should(BeClosed())
	// A change made while nobody leads must still reach the member.
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Replicas = 2
	g.Expect(hub.Patch(ctx, c, patch)).To(Succeed())

	g.Eventually(standby.acquired).WithTimeout(timeout).WithPolling(polling).Should(BeTrue(), "the standby acquired the Lease")
	var lease coordinationv1.Lease
	g.Eventually(func(g Gomega) {
		g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: mgrNamespace, Name: leaseName}, &lease)).To(Succeed())
		g.Expect(ptr.Deref(lease.Spec.HolderIdentity, "")).NotTo(Or(BeEmpty(), Equal(firstHolder)))
		g.Expect(lease.Spec.AcquireTime).NotTo(BeNil())
	}).WithTimeout(timeout).WithPolling(polling).Should(Succeed())
	// Both processes run on this machine, so the Lease's acquireTime (the new leader's clock) and killedAt (ours)
	// share a clock. Reported, not asserted.
	t.Logf("Takeover: the Lease changed hands %s after the leader was killed (lease duration %s, retry period %s); %d transitions",
		lease.Spec.AcquireTime.Sub(killedAt).Round(time.Millisecond), leaseDuration, retryPeriod, ptr.Deref(lease.Spec.LeaseTransitions, 0))

	g.Eventually(func(g Gomega) {
		g.Expect(member.Get(ctx, stsKey, &sts)).To(Succeed())
		g.Expect(sts.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
	}).WithTimeout(timeout).WithPolling(polling).Should(Succeed(), "the new leader applies the change to the member")
	t.Logf("Takeover: the change reached the member %s after the leader was killed", time.Since(killedAt).Round(time.Millisecond))
	g.Expect(standby.log()).To(ContainSubstring(logEngaged))
	g.Expect(managers(&sts)).To(ConsistOf(v1alpha1.FieldManager), "the create's entry moved into the apply's")

	// SIGTERM: with LeaderElectionReleaseOnCancel the manager stops its controllers, then client-go's release()
	// rewrites the Lease with an empty holder and a one-second duration, so a successor need not wait for expiry.
	standby.signal(t, syscall.SIGTERM)
	g.Eventually(standby.done).WithTimeout(timeout).Should(BeClosed(), "the manager stops on SIGTERM")
	g.Expect(standby.exitErr).NotTo(HaveOccurred(), "the manager exits cleanly on SIGTERM")
	g.Expect(hub.Get(ctx, client.ObjectKey{Namespace: mgrNamespace, Name: leaseName}, &lease)).To(Succeed())
	g.Expect(ptr.Deref(lease.Spec.HolderIdentity, "")).To(BeEmpty(), "the Lease is released")
	g.Expect(lease.Spec.LeaseDurationSeconds).To(HaveValue(BeEquivalentTo(1)))
}

// buildManager builds this package's binary once for the test.
func buildManager(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "manager")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// register stores the member's kubeconfig on the hub as a registration Secret.
func register(ctx context.Context, hub client.Client, m *testfleet.Cluster) error {
	labels := map[string]string{v1alpha1.MemberSecretLabel: "true", v1alpha1.CloudLabel: m.Cloud, v1alpha1.RegionLabel: m.Region}
	for k, v := range m.Labels {
		labels[k] = v
	}
	return hub.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: mgrNamespace, Labels: labels},
		Data:       map[string][]byte{v1alpha1.KubeconfigKey: m.Kubeconfig},
	})
}

// managerProcess is one replica of the manager binary.
type managerProcess struct {
	name       string
	cmd        *exec.Cmd
	logPath    string
	metricsURL string
	// done is closed when the process has exited; exitErr is then its exit status.
	done    chan struct{}
	exitErr error
}

// startManager starts a replica whose output goes to a log file, with the leader election flags of this test
// and any others given. The kernel kills it if the test binary dies (Pdeathsig), and the test kills it when it
// ends.
func startManager(t *testing.T, bin, kubeconfig, name string, flags ...string) *managerProcess {
	t.Helper()
	// The metrics port was free a moment before the process binds it; other processes on the machine may take it
	// meanwhile. Then the manager exits at once, saying so, and another port is tried.
	for attempt := 1; ; attempt++ {
		p := startManagerOnce(t, bin, kubeconfig, name, flags...)
		err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
			select {
			case <-p.done:
				return false, fmt.Errorf("replica %s exited: %v", name, p.exitErr)
			default:
			}
			resp, err := http.Get(p.metricsURL)
			if err != nil {
				return false, nil
			}
			_ = resp.Body.Close()
			return resp.StatusCode == http.StatusOK, nil
		})
		if err == nil {
			return p
		}
		if attempt == 3 || !strings.Contains(p.log(), "address already in use") {
			t.Fatalf("replica %s did not start: %v\n%s", name, err, p.log())
		}
	}
}

func startManagerOnce(t *testing.T, bin, kubeconfig, name string, flags ...string) *managerProcess {
	t.Helper()
	p := &managerProcess{name: name, logPath: filepath.Join(t.TempDir(), "manager-"+name+".log"), done: make(chan struct{})}
	out, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	metrics := freeAddress(t)
	p.metricsURL = "http://" + metrics + "/metrics"
	p.cmd = exec.Command(bin,
		"--kubeconfig="+kubeconfig,
		"--namespace="+mgrNamespace,
		"--leader-elect=true",
		"--leader-elect-lease-duration="+leaseDuration.String(),
		"--leader-elect-renew-deadline="+renewDeadline.String(),
		"--leader-elect-retry-period="+retryPeriod.String(),
		"--metrics-bind-address="+metrics,
		"--health-probe-bind-address=0",
		// V(4) shows every apply, so the logs tell which replica wrote.
		"--zap-log-level=4",
	)
	p.cmd.Args = append(p.cmd.Args, flags...)
	p.cmd.Stdout, p.cmd.Stderr = out, out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		_ = out.Close()
		t.Fatalf("starting manager %s: %v", name, err)
	}
	go func() {
		p.exitErr = p.cmd.Wait()
		_ = out.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

func (p *managerProcess) pid() int { return p.cmd.Process.Pid }

func (p *managerProcess) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	t.Logf("kill -%d replica %s (pid %d)", int(sig), p.name, p.pid())
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signalling manager %s: %v", p.name, err)
	}
}

func (p *managerProcess) log() string {
	data, _ := os.ReadFile(p.logPath)
	return string(data)
}

func (p *managerProcess) acquired() bool {
	return strings.Contains(strings.ToLower(p.log()), logAcquired)
}

// requests scrapes the replica's rest_client_requests_total, controller-runtime's count of the requests its
// clients (hub, members, leader election) made, by status code, method and host.
func (p *managerProcess) requests(g Gomega) requestCounts {
	resp, err := http.Get(p.metricsURL)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
	counts, err := parseRequests(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	return counts
}

// requestKey labels one series of rest_client_requests_total.
type requestKey struct{ code, method, host string }

type requestCounts map[requestKey]float64

// parseRequests reads the counter rest_client_requests_total from a Prometheus text exposition.
func parseRequests(r io.Reader) (requestCounts, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	counts := requestCounts{}
	for _, m := range families["rest_client_requests_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		counts[requestKey{labels["code"], labels["method"], labels["host"]}] += m.GetCounter().GetValue()
	}
	return counts, nil
}

// to counts the requests sent to host.
func (c requestCounts) to(host string) float64 {
	var n float64
	for k, v := range c {
		if k.host == host {
			n += v
		}
	}
	return n
}

// successfulWrites counts the requests that changed something: any method but GET that succeeded. A standby's
// failed attempt to create the Lease that another replica created first (409) is not a write.
func (c requestCounts) successfulWrites() float64 {
	var n float64
	for k, v := range c {
		if k.method != http.MethodGet && strings.HasPrefix(k.code, "2") {
			n += v
		}
	}
	return n
}

// holder reads the Lease's holder.
func holder(g Gomega, hub client.Client) string {
	var lease coordinationv1.Lease
	g.Expect(hub.Get(context.Background(), client.ObjectKey{Namespace: mgrNamespace, Name: leaseName}, &lease)).To(Succeed())
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

// managers lists the field managers of an object.
func managers(o client.Object) []string {
	var names []string
	for _, f := range o.GetManagedFields() {
		if !slices.Contains(names, f.Manager) {
			names = append(names, f.Manager)
		}
	}
	return names
}

// hostOf returns the host:port of an API server address, as client metrics label it.
func hostOf(t *testing.T, address string) string {
	t.Helper()
	if !strings.Contains(address, "://") {
		address = "https://" + address
	}
	u, err := url.Parse(address)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// freeAddress returns a loopback address with a port that was free a moment ago.
func freeAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// dumpOnFailure prints the replicas' logs (their tails) when the test fails.
func dumpOnFailure(t *testing.T, procs ...*managerProcess) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, p := range procs {
			data := []byte(p.log())
			if dir := os.Getenv("MYSQLFLEET_TEST_LOGS"); dir != "" {
				// Whole logs, for a reader who needs more than the tail.
				_ = os.WriteFile(filepath.Join(dir, t.Name()+"-"+p.name+".log"), data, 0o600)
			}
			if len(data) > 30000 {
				data = data[len(data)-30000:]
			}
			status := "running"
			select {
			case <-p.done:
				status = fmt.Sprintf("exited: %v", p.exitErr)
			default:
			}
			t.Logf("replica %s (pid %d, %s) log (tail):\n%s", p.name, p.pid(), status, bytes.TrimSpace(data))
		}
	})
}
