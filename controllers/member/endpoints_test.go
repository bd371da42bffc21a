package member

import (
	"database/sql"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/clustering"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// sliceWatch records, in the API server's order, what a Service's EndpointSlice (the one this controller
// writes) names each time it changes: a Pod name, or "" for no endpoint.
type sliceWatch struct {
	mu    sync.Mutex
	named []string
	ended error
}

func (e *env) watchSlice(name string) *sliceWatch {
	e.t.Helper()
	w, ctx := e.watch(&discoveryv1.EndpointSliceList{}, client.MatchingFields{"metadata.name": name})
	sw := &sliceWatch{}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			sl, ok := ev.Object.(*discoveryv1.EndpointSlice)
			if !ok {
				sw.end(fmt.Errorf("watch event %s: %v", ev.Type, ev.Object))
				return
			}
			named := ""
			if ev.Type != watch.Deleted && len(sl.Endpoints) > 0 && sl.Endpoints[0].TargetRef != nil {
				named = sl.Endpoints[0].TargetRef.Name
			}
			sw.mu.Lock()
			if len(sw.named) == 0 || sw.named[len(sw.named)-1] != named {
				sw.named = append(sw.named, named)
			}
			sw.mu.Unlock()
		}
		if ctx.Err() == nil {
			sw.end(fmt.Errorf("the watch ended"))
		}
	}()
	return sw
}

func (sw *sliceWatch) end(err error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.ended = err
}

func (sw *sliceWatch) state() ([]string, error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	return slices.Clone(sw.named), sw.ended
}

// withPrimaryEndpoints gives the set's Pods addresses of their own, 10.20.<net>.10 and up (an EndpointSlice takes
// no loopback address, where the test's servers listen; the controller reaches each server by its Pod's name,
// through the env's resolver), and applies the set's Services as the hub renders them once the controller
// reported PrimaryEndpoints: <name> and <name>-primary without a selector, <name>-replicas with one.
func (s *set) withPrimaryEndpoints(g Gomega, net int) (podIP func(i int) string) {
	e := s.e
	podIP = func(i int) string { return fmt.Sprintf("10.20.%d.%d", net, 10+i) }
	n := instances(s.sts)
	for i := range n {
		pod := &corev1.Pod{}
		g.Expect(e.c.Get(e.ctx, types.NamespacedName{Namespace: testNS, Name: s.pod(i)}, pod)).To(Succeed())
		pod.Status.PodIP = podIP(i)
		g.Expect(e.c.Status().Update(e.ctx, pod)).To(Succeed())
	}
	objs := renderSet(e.t, s.sts.Name, "uid-"+s.sts.Name, n, render.WithPrimaryEndpoints())
	for _, svc := range []*corev1ac.ServiceApplyConfiguration{objs.Service, objs.PrimaryService, objs.ReplicasService} {
		g.Expect(e.c.Apply(e.ctx, svc, client.FieldOwner(v1alpha1.FieldManager), client.ForceOwnership)).To(Succeed())
	}
	return podIP
}

// endpointsOf is what the controller's slice for a Service says: Pod, address and ports.
func (e *env) endpointsOf(g Gomega, name string) (pod, addr string, ports []string) {
	sl := &discoveryv1.EndpointSlice{}
	g.Expect(e.c.Get(e.ctx, types.NamespacedName{Namespace: testNS, Name: name}, sl)).To(Succeed())
	g.Expect(sl.Labels).To(HaveKeyWithValue(discoveryv1.LabelServiceName, name))
	g.Expect(sl.Labels).To(HaveKeyWithValue(discoveryv1.LabelManagedBy, EndpointsManager))
	for _, p := range sl.Ports {
		ports = append(ports, fmt.Sprintf("%s:%d", ptr.Deref(p.Name, ""), ptr.Deref(p.Port, 0)))
	}
	if len(sl.Endpoints) == 0 {
		return "", "", ports
	}
	g.Expect(sl.Endpoints).To(HaveLen(1))
	ep := sl.Endpoints[0]
	g.Expect(ep.Conditions.Ready).To(Equal(ptr.To(true)))
	return ep.TargetRef.Name, ep.Addresses[0], ports
}

// With the primary's Services rendered without a selector, the controller writes their EndpointSlices: one
// endpoint, the primary, moved in a single change by a switchover, by the failover after a kill -9 and by the
// failover of a frozen primary.
// What Kubernetes' endpoint controllers left from the Services' selector is deleted; an idle set's slices are not
// written; a Service given a selector again loses the controller's slice.
func TestPrimaryEndpointsChangeOncePerPrimary(t *testing.T) {
	g := NewWithT(t)
	e := startEnv(t)
	s := e.startSet("ep", 3)
	sts := s.sts
	// What the endpoint controllers made while <name>-primary had a selector: there before the Service loses
	// it, as in a cluster upgraded to these Services (made after, they could miss the controller's one look).
	leftSlice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "ep-primary-x7k2p", Namespace: testNS, Labels: map[string]string{
			discoveryv1.LabelServiceName: "ep-primary", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.9.9.9"}}},
	}
	leftEndpoints := &corev1.Endpoints{ //nolint:staticcheck // what the endpoints controller leaves behind
		ObjectMeta: metav1.ObjectMeta{Name: "ep-primary", Namespace: testNS,
			Labels: map[string]string{endpointsManagedBy: kubeEndpointsManager}},
	}
	otherSlice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "ep-primary-mine", Namespace: testNS, Labels: map[string]string{
			discoveryv1.LabelServiceName: "ep-primary", discoveryv1.LabelManagedBy: "someone-else"}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for _, o := range []client.Object{leftSlice, leftEndpoints, otherSlice} {
		g.Expect(e.c.Create(e.ctx, o)).To(Succeed())
	}
	podIP := s.withPrimaryEndpoints(g, 0)

	// Formed: both Services name ep-0, by its Pod IP, on the Service's port.
	s.waitFormed(g, 0, 1, 2)
	for _, name := range []string{"ep", "ep-primary"} {
		g.Eventually(func(g Gomega) {
			pod, addr, ports := e.endpointsOf(g, name)
			g.Expect(pod).To(Equal("ep-0"))
			g.Expect(addr).To(Equal(podIP(0)))
			g.Expect(ports).To(Equal([]string{"mysql:3306"}))
		}, convergeWithin, 100*time.Millisecond).Should(Succeed(), name)
	}
	_, rep := e.report("ep")
	g.Expect(rep.PrimaryEndpoints).To(BeTrue())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(e.c.Get(e.ctx, client.ObjectKeyFromObject(leftSlice), &discoveryv1.EndpointSlice{}))
	}, convergeWithin, 100*time.Millisecond).Should(BeTrue(), "the endpoint controller's slice was left")
	g.Eventually(func() bool {
		return apierrors.IsNotFound(e.c.Get(e.ctx, client.ObjectKeyFromObject(leftEndpoints), &corev1.Endpoints{})) //nolint:staticcheck
	}, convergeWithin, 100*time.Millisecond).Should(BeTrue(), "the endpoints controller's Endpoints was left")
	g.Expect(e.c.Get(e.ctx, client.ObjectKeyFromObject(otherSlice), &discoveryv1.EndpointSlice{})).To(Succeed(),
		"a slice of another manager was deleted")
	g.Expect(e.c.Get(e.ctx, types.NamespacedName{Namespace: testNS, Name: "ep-replicas"},
		&discoveryv1.EndpointSlice{})).To(WithTransform(apierrors.IsNotFound, BeTrue()), "a slice for the replicas")

	// Idle: the slices are not written again.
	rv := func(name string) string {
		sl := &discoveryv1.EndpointSlice{}
		g.Expect(e.c.Get(e.ctx, types.NamespacedName{Namespace: testNS, Name: name}, sl)).To(Succeed())
		return sl.ResourceVersion
	}
	before := rv("ep-primary")
	waitPasses(t, e.r, client.ObjectKeyFromObject(sts), 5)
	g.Expect(rv("ep-primary")).To(Equal(before), "an idle set's slice was written")

	sw := e.watchSlice("ep-primary")
	g.Eventually(func() []string { named, _ := sw.state(); return named }, convergeWithin, 50*time.Millisecond).
		Should(Equal([]string{"ep-0"}))

	// A switchover to ep-2: one change.
	patch := client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+v1alpha1.PrimaryAnnotation+`":"2"}}}`))
	g.Expect(e.c.Patch(e.ctx, sts.DeepCopy(), patch)).To(Succeed())
	s.waitFormed(g, 2, 0, 1)
	g.Eventually(func() []string { named, _ := sw.state(); return named }, convergeWithin, 50*time.Millisecond).
		Should(Equal([]string{"ep-0", "ep-2"}))
	// The request done, it goes, so that ep-2 back after its failover is not made primary again.
	g.Expect(e.c.Patch(e.ctx, sts.DeepCopy(), client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+v1alpha1.PrimaryAnnotation+`":null}}}`)))).To(Succeed())

	// ep-2's server killed: the failover moves the endpoint in one change.
	s.server(2).Kill()
	g.Eventually(s.lastTransition, convergeWithin, 100*time.Millisecond).Should(HavePrefix("Failover ep-2 -> "))
	next := "ep-0"
	if s.lastTransition() == "Failover ep-2 -> ep-1" {
		next = "ep-1"
	}
	g.Eventually(func() []string { named, _ := sw.state(); return named }, convergeWithin, 50*time.Millisecond).
		Should(Equal([]string{"ep-0", "ep-2", next}))

	// ep-2 back as a replica, then the new primary frozen: it keeps role=primary until another is promoted
	// (the failover's first pass stops the replicas' receivers, so it cannot acknowledge a commit meanwhile),
	// and the endpoint moves once.
	frozen := map[string]int{"ep-0": 0, "ep-1": 1}[next]
	s.server(2).Restart()
	s.waitFormed(g, frozen, 1-frozen, 2)
	s.server(frozen).Freeze()
	g.Eventually(s.lastTransition, convergeWithin, 100*time.Millisecond).Should(HavePrefix("Failover " + next + " -> "))
	s.server(frozen).Thaw()
	g.Eventually(func() []string { named, _ := sw.state(); return named }, convergeWithin, 50*time.Millisecond).
		Should(HaveLen(4))
	named, ended := sw.state()
	g.Expect(ended).NotTo(HaveOccurred())
	g.Expect(named[3]).To(Equal(strings.TrimPrefix(s.lastTransition(), "Failover "+next+" -> ")),
		"the slices named %v", named)

	// The Service ep given a selector again: the controller's slice for it goes, ep-primary's stays.
	svc := &corev1.Service{}
	g.Expect(e.c.Get(e.ctx, types.NamespacedName{Namespace: testNS, Name: "ep"}, svc)).To(Succeed())
	svc.Spec.Selector = map[string]string{v1alpha1.RoleLabel: v1alpha1.RolePrimary}
	g.Expect(e.c.Update(e.ctx, svc)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(e.c.Get(e.ctx, types.NamespacedName{Namespace: testNS, Name: "ep"},
			&discoveryv1.EndpointSlice{}))
	}, convergeWithin, 100*time.Millisecond).Should(BeTrue())
	g.Expect(e.c.Get(e.ctx, types.NamespacedName{Namespace: testNS, Name: "ep-primary"},
		&discoveryv1.EndpointSlice{})).To(Succeed())
}

// An EndpointSlice of another manager that has the name the controller would use is neither written over nor
// deleted; the other Service of the set gets its slice.
func TestSliceOfAnotherManagerIsLeftAlone(t *testing.T) {
	g := NewWithT(t)
	e := startEnv(t)
	s := e.startSet("mine", 1)
	theirs := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "mine-primary", Namespace: testNS, Labels: map[string]string{
			discoveryv1.LabelServiceName: "mine-primary", discoveryv1.LabelManagedBy: "someone-else"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.9.9.9"}}},
	}
	g.Expect(e.c.Create(e.ctx, theirs)).To(Succeed())
	s.withPrimaryEndpoints(g, 1)
	g.Eventually(func(g Gomega) {
		pod, _, _ := e.endpointsOf(g, "mine")
		g.Expect(pod).To(Equal("mine-0"))
	}, convergeWithin, 100*time.Millisecond).Should(Succeed())
	waitPasses(t, e.r, client.ObjectKeyFromObject(s.sts), 3)
	got := &discoveryv1.EndpointSlice{}
	g.Expect(e.c.Get(e.ctx, client.ObjectKeyFromObject(theirs), got)).To(Succeed())
	g.Expect(got.ResourceVersion).To(Equal(theirs.ResourceVersion), "the other manager's slice was written")
}

// While no Pod carries role=primary, the slice keeps naming the last primary only when the pass proved that
// its server cannot take a write (read-only, nothing listening on its port, its Pod gone or replaced), and names
// nobody otherwise: a server that does not answer in time, or answers writable without the role, may take writes.
// The errors are the driver's own, from a real refused connection and a real timeout.
func TestSliceKeepsTheLastPrimaryOnlyWhenItCannotWrite(t *testing.T) {
	refused := dbError(t, fmt.Sprintf("127.0.0.1:%d", closedPort(t)), time.Second)
	// A listener that never answers: the login times out.
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = silent.Close() })
	timedOut := dbError(t, silent.Addr().String(), 300*time.Millisecond)

	sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: testNS}}
	pod := func(i int, uid, role string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podName(sts, i), UID: types.UID(uid),
			Labels: map[string]string{}}, Status: corev1.PodStatus{PodIP: fmt.Sprintf("10.0.0.%d", i+1)}}
		if role != "" {
			p.Labels[v1alpha1.RoleLabel] = role
		}
		return p
	}
	deleting := func(p *corev1.Pod) *corev1.Pod {
		p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		return p
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db-primary"}}
	last := &sliceEndpoint{Pod: "db-0", UID: "u0", IP: "10.0.0.1"}
	readOnly := clustering.Observation{Status: &mysql.Status{ServerInfo: mysql.ServerInfo{ReadOnly: true}}}
	writable := clustering.Observation{Status: &mysql.Status{}}
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		obs  []clustering.Observation
		want string
	}{
		{"the Pod labelled primary", []*corev1.Pod{pod(0, "u0", ""), pod(1, "u1", "primary")},
			[]clustering.Observation{{Err: timedOut}, writable}, "db-1"},
		{"the last primary, fenced", []*corev1.Pod{pod(0, "u0", ""), pod(1, "u1", "")},
			[]clustering.Observation{readOnly, writable}, "db-0"},
		{"the last primary, nothing listening", []*corev1.Pod{pod(0, "u0", ""), pod(1, "u1", "")},
			[]clustering.Observation{{Err: refused}, writable}, "db-0"},
		{"the last primary's Pod gone", []*corev1.Pod{nil, pod(1, "u1", "")},
			[]clustering.Observation{{Err: timedOut}, writable}, "db-0"},
		{"the last primary's Pod replaced", []*corev1.Pod{pod(0, "u0-new", ""), pod(1, "u1", "")},
			[]clustering.Observation{{Err: timedOut}, writable}, "db-0"},
		{"the last primary's Pod being deleted", []*corev1.Pod{deleting(pod(0, "u0", "primary")), pod(1, "u1", "")},
			[]clustering.Observation{writable, readOnly}, "db-0"},
		{"the last primary's Pod being deleted, not answering", []*corev1.Pod{deleting(pod(0, "u0", "")),
			pod(1, "u1", "")}, []clustering.Observation{{Err: timedOut}, readOnly}, "db-0"},
		{"the last primary, not answering in time", []*corev1.Pod{pod(0, "u0", ""), pod(1, "u1", "")},
			[]clustering.Observation{{Err: timedOut}, writable}, ""},
		{"the last primary, writable without the role", []*corev1.Pod{pod(0, "u0", ""), pod(1, "u1", "")},
			[]clustering.Observation{writable, readOnly}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scope{sts: sts, pods: tc.pods, obs: tc.obs}
			got := desiredEndpoint(s, svc, last, labelledPrimary(tc.pods, v1alpha1.ReplicationReport{}, true))
			if got.Pod != tc.want {
				t.Fatalf("the slice names %q, want %q (refused: %v; timed out: %v)", got.Pod, tc.want, refused, timedOut)
			}
		})
	}
}

// dbError is the error of a login to addr with the driver the controller uses.
func dbError(t *testing.T, addr string, timeout time.Duration) error {
	t.Helper()
	db, err := sql.Open("mysql", fmt.Sprintf("u:p@tcp(%s)/?timeout=%s&readTimeout=%s", addr, timeout, timeout))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	err = db.Ping()
	if err == nil {
		t.Fatalf("a login to %s succeeded", addr)
	}
	return err
}
