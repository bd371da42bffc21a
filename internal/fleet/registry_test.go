package fleet

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/kubeconfig"
)

const testNamespace = "mysqlfleet-system"

// memberServer stands in for a member's API server: every request is answered, or, while partitioned, held
// with no answer, as behind a network partition.
type memberServer struct {
	*httptest.Server
	partitioned atomic.Bool
	heal        chan struct{}
	healOnce    sync.Once
}

func newMemberServer(t *testing.T) *memberServer {
	s := &memberServer{heal: make(chan struct{})}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.partitioned.Load() {
			select {
			case <-s.heal:
			case <-r.Context().Done():
				// No answer, not even an empty one: a handler that returns writes 200 OK, and its request's
				// context can end while the client still reads (1 in ~500 runs under the race detector a
				// partitioned /readyz came back 200 and the member was found answering).
				panic(http.ErrAbortHandler)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
	}))
	t.Cleanup(func() {
		s.Heal()
		s.Close()
	})
	return s
}

// Partition holds every request from now on until Heal.
func (s *memberServer) Partition() { s.partitioned.Store(true) }

// Heal answers every held request and the ones after.
func (s *memberServer) Heal() {
	s.partitioned.Store(false)
	s.healOnce.Do(func() { close(s.heal) })
}

// kubeconfig is a kubeconfig the gate accepts, for the server; mutate makes it one the gate refuses.
func (s *memberServer) kubeconfig(g Gomega, mutate ...func(*clientcmdapi.Config)) []byte {
	cfg := clientcmdapi.NewConfig()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: s.URL, CertificateAuthorityData: ca}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: "token"}
	cfg.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "ctx"
	for _, m := range mutate {
		m(cfg)
	}
	data, err := clientcmd.Write(*cfg)
	g.Expect(err).NotTo(HaveOccurred())
	return data
}

// fakeCluster is what the registry builds for a member, without informers: only what the registry calls is
// implemented. cfg is the rest.Config the registry built it from.
type fakeCluster struct {
	cluster.Cluster
	cfg   *rest.Config
	cache cache.Cache
	// stop makes Start return the error sent, as a cluster whose cache failed does.
	stop chan error
}

func (c *fakeCluster) GetCache() cache.Cache { return c.cache }

func (c *fakeCluster) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-c.stop:
		return err
	}
}

type engagerFunc func(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error

func (f engagerFunc) Engage(ctx context.Context, name multicluster.ClusterName, cl cluster.Cluster) error {
	return f(ctx, name, cl)
}

// registry is a Provider wired to a fake hub, fake clusters and a fake engager, and started.
type registry struct {
	*Provider
	hub      client.Client
	clusters chan *fakeCluster
}

func newRegistry(t *testing.T, opts Options) *registry {
	opts.Namespace = testNamespace
	opts.WatchedObjects = []client.Object{&corev1.ConfigMap{}}
	if opts.HealthInterval == 0 {
		opts.HealthInterval = time.Hour // only what a test does probes
	}
	r := &registry{Provider: New(opts), clusters: make(chan *fakeCluster, 10)}
	r.hub = fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).Build()
	r.Provider.hub = r.hub
	r.engager = engagerFunc(func(context.Context, multicluster.ClusterName, cluster.Cluster) error { return nil })
	r.newCluster = func(cfg *rest.Config, _ ...cluster.Option) (cluster.Cluster, error) {
		fc := &fakeCluster{cfg: cfg, cache: &informertest.FakeInformers{}, stop: make(chan error, 1)}
		r.clusters <- fc
		return fc, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.Start(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return r
}

// register writes a registration Secret on the hub and has the registry process it.
func (r *registry) register(g Gomega, name string, kubeconfig []byte, labels map[string]string) {
	ctx := context.Background()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name}}
	_, err := ctrl.CreateOrUpdate(ctx, r.hub, s, func() error {
		s.Labels = map[string]string{v1alpha1.MemberSecretLabel: "true"}
		for k, v := range labels {
			s.Labels[k] = v
		}
		s.Data = map[string][]byte{v1alpha1.KubeconfigKey: kubeconfig}
		return nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	r.reconcile(g, name)
}

func (r *registry) reconcile(g Gomega, name string) {
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: testNamespace, Name: name}})
	g.Expect(err).NotTo(HaveOccurred())
}

func (r *registry) state(name string) State {
	for _, s := range r.Members() {
		if s.Name == name {
			return s
		}
	}
	return State{}
}

var awsLabels = map[string]string{v1alpha1.CloudLabel: "aws", v1alpha1.RegionLabel: "eu-west-1"}

// reachableGauge reads mysqlfleet_member_reachable for a member from controller-runtime's registry, the one
// the manager serves; ok is false when the member has no series.
func reachableGauge(g Gomega, member string) (value float64, ok bool) {
	families, err := metrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != "mysqlfleet_member_reachable" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "member" && l.GetValue() == member {
					return m.GetGauge().GetValue(), true
				}
			}
		}
	}
	return 0, false
}

// gaugeOf is the member's mysqlfleet_member_reachable, which a registered member must have.
func gaugeOf(g Gomega, member string) float64 {
	v, ok := reachableGauge(g, member)
	g.Expect(ok).To(BeTrue(), "a registered member has a series")
	return v
}

// The requests of a member's cluster, the ones that carry applies, reads and watches, reach the failure
// detector: when they wait with no answer the member is probed at once and found unreachable, long before the
// periodic health probe (an hour here) would run.
func TestClusterRequestsReachTheFailureDetector(t *testing.T) {
	g := NewWithT(t)
	srv := newMemberServer(t)
	r := newRegistry(t, Options{})
	r.register(g, "detected", srv.kubeconfig(g), awsLabels)
	fc := <-r.clusters
	g.Expect(r.state("detected")).To(And(HaveField("Engaged", true), HaveField("Err", BeNil())))
	alive := r.state("detected").Alive

	srv.Partition()
	hc, err := rest.HTTPClientFor(fc.cfg)
	g.Expect(err).NotTo(HaveOccurred())
	go func() {
		// An apply or a watch being opened: it waits, as behind a partition.
		if resp, err := hc.Get(srv.URL + "/api/v1/namespaces/db/configmaps"); err == nil {
			_ = resp.Body.Close()
		}
	}()
	g.Eventually(func() error { return r.state("detected").Err }, 3*(suspectAfter+suspectProbeTimeout), 100*time.Millisecond).
		Should(And(MatchError(ErrUnreachable), MatchError(ContainSubstring("/readyz"))))
	g.Expect(context.Cause(alive)).To(MatchError(ErrUnreachable), "work in flight there is stopped")

	srv.Heal()
	g.Eventually(func() error { return r.state("detected").Err }, 3*(recheckEvery+suspectProbeTimeout), 100*time.Millisecond).
		Should(Succeed(), "an unreachable member is probed until it answers")
}

// A member's cluster that stops on its own (its cache failed) must not stay engaged with a dead cache: the
// member is disengaged with the error, and its registration is processed again after the backoff.
func TestMemberWhoseClusterStopsIsRetried(t *testing.T) {
	g := NewWithT(t)
	srv := newMemberServer(t)
	r := newRegistry(t, Options{})
	r.register(g, "stopped", srv.kubeconfig(g), awsLabels)
	fc := <-r.clusters
	g.Expect(r.state("stopped").Engaged).To(BeTrue())

	fc.stop <- errors.New("cache failed")
	g.Eventually(func() State { return r.state("stopped") }, 5*time.Second, 50*time.Millisecond).Should(And(
		HaveField("Engaged", false), HaveField("Err", MatchError(ContainSubstring("cache failed")))))
	g.Expect(gaugeOf(g, "stopped")).To(BeZero())
	_, err := r.Get(context.Background(), "stopped")
	g.Expect(err).To(MatchError(multicluster.ErrClusterNotFound))

	var retry event.GenericEvent
	g.Eventually(r.retries, 2*initialBackoff).Should(Receive(&retry))
	g.Expect(retry.Object.GetName()).To(Equal("stopped"))
	r.reconcile(g, retry.Object.GetName())
	g.Expect(r.clusters).To(Receive(), "a new cluster is built")
	g.Expect(r.state("stopped")).To(And(HaveField("Engaged", true), HaveField("Err", BeNil())))
	g.Expect(gaugeOf(g, "stopped")).To(Equal(1.0))
}

// A cluster that stops soon after each start is retried with a growing backoff, not every initialBackoff.
func TestBackoffGrowsForAClusterThatKeepsStopping(t *testing.T) {
	g := NewWithT(t)
	m := &member{}
	g.Expect(m.fail(errors.New("1"))).To(Equal(initialBackoff))
	m.engagedAt = time.Now()
	g.Expect(m.fail(errors.New("2"))).To(Equal(2*initialBackoff), "stopped right after it was engaged")
	m.engagedAt = time.Now().Add(-maxBackoff)
	g.Expect(m.fail(errors.New("3"))).To(Equal(initialBackoff), "it ran for a while: start again")
}

// mysqlfleet_member_reachable follows the registry's verdict, 1 only while the member is engaged, answers and
// has valid facts, and disappears with the registration.
func TestReachableGaugeFollowsTheVerdict(t *testing.T) {
	g := NewWithT(t)
	srv := newMemberServer(t)
	r := newRegistry(t, Options{})
	const name = "gauged"
	gauge := func() float64 { return gaugeOf(g, name) }

	r.register(g, name, srv.kubeconfig(g, func(c *clientcmdapi.Config) { c.AuthInfos["u"].TokenFile = "/etc/hostname" }), awsLabels)
	g.Expect(gauge()).To(BeZero(), "refused")

	r.register(g, name, srv.kubeconfig(g), awsLabels)
	g.Expect(gauge()).To(Equal(1.0), "engaged and answering")

	srv.Partition()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	r.probe(ctx)
	cancel()
	g.Expect(gauge()).To(BeZero(), "unreachable")
	srv.Heal()
	r.probe(context.Background())
	g.Expect(gauge()).To(Equal(1.0), "answers again")

	r.register(g, name, srv.kubeconfig(g), map[string]string{v1alpha1.RegionLabel: "eu-west-1"})
	g.Expect(gauge()).To(BeZero(), "invalid facts")

	g.Expect(r.hub.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name}})).To(Succeed())
	r.reconcile(g, name)
	_, ok := reachableGauge(g, name)
	g.Expect(ok).To(BeFalse(), "a removed member has no series")
}

// Callers tell a registration that is wrong (refused kubeconfig, invalid facts) from a member that does not
// answer, by errors.Is on State.Err.
func TestRefusedIsNotUnreachable(t *testing.T) {
	g := NewWithT(t)
	srv := newMemberServer(t)
	r := newRegistry(t, Options{SyncTimeout: 200 * time.Millisecond})

	r.register(g, "refused", srv.kubeconfig(g, func(c *clientcmdapi.Config) {
		c.AuthInfos["u"].Exec = &clientcmdapi.ExecConfig{Command: "/bin/true", APIVersion: "client.authentication.k8s.io/v1"}
	}), awsLabels)
	err := r.state("refused").Err
	g.Expect(err).To(And(MatchError(ErrRefused), MatchError(kubeconfig.ErrRefused), MatchError(ContainSubstring("exec"))))
	g.Expect(errors.Is(err, ErrUnreachable)).To(BeFalse())

	r.register(g, "invalid", srv.kubeconfig(g), map[string]string{v1alpha1.CloudLabel: "mars"})
	<-r.clusters
	err = r.state("invalid").Err
	g.Expect(err).To(And(MatchError(ErrRefused), MatchError(ContainSubstring("mars"))))
	g.Expect(errors.Is(err, ErrUnreachable)).To(BeFalse())

	r.register(g, "silent", srv.kubeconfig(g), awsLabels)
	<-r.clusters
	srv.Partition()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	r.probe(ctx)
	cancel()
	err = r.state("silent").Err
	g.Expect(err).To(MatchError(ErrUnreachable))
	g.Expect(errors.Is(err, ErrRefused)).To(BeFalse())
}

// The token expiry of a registration is exported from its annotation, whether the registration engages or not,
// and goes when the annotation or the registration goes.
func TestTokenExpirationGauge(t *testing.T) {
	g := NewWithT(t)
	srv := newMemberServer(t)
	r := newRegistry(t, Options{})
	const name = "expiring"
	expiry := func() (float64, bool) {
		families, err := metrics.Registry.Gather()
		g.Expect(err).NotTo(HaveOccurred())
		for _, f := range families {
			if f.GetName() == "mysqlfleet_member_token_expiration_timestamp_seconds" {
				for _, m := range f.GetMetric() {
					if m.GetLabel()[0].GetValue() == name {
						return m.GetGauge().GetValue(), true
					}
				}
			}
		}
		return 0, false
	}
	annotate := func(value string) {
		s := &corev1.Secret{}
		g.Expect(r.hub.Get(context.Background(), client.ObjectKey{Namespace: testNamespace, Name: name}, s)).To(Succeed())
		s.Annotations = map[string]string{v1alpha1.TokenExpirationAnnotation: value}
		g.Expect(r.hub.Update(context.Background(), s)).To(Succeed())
		r.reconcile(g, name)
	}

	r.register(g, name, srv.kubeconfig(g), awsLabels)
	_, ok := expiry()
	g.Expect(ok).To(BeFalse(), "no annotation: a token that does not expire")
	annotate("2027-01-02T03:04:05Z")
	v, ok := expiry()
	g.Expect(ok).To(BeTrue())
	g.Expect(v).To(Equal(float64(time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC).Unix())))
	annotate("next tuesday")
	_, ok = expiry()
	g.Expect(ok).To(BeFalse(), "an invalid annotation says nothing")
	annotate("2027-01-02T03:04:05Z")
	g.Expect(r.hub.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name}})).To(Succeed())
	r.reconcile(g, name)
	_, ok = expiry()
	g.Expect(ok).To(BeFalse(), "a removed member has no series")
}
