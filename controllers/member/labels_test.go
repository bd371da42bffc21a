package member

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// primaryWatch follows every change of a set's Pods' role labels, in the API server's order (one watch), and
// notes each moment at which more than one Pod carries role=primary: a Service selecting role=primary would
// then send writes to two servers.
type primaryWatch struct {
	mu      sync.Mutex
	roles   map[string]string
	holders []string // the Pods that held role=primary, in turn
	double  []string // the moments with two primaries, as the roles then
	ended   error
}

// watch starts a watch of list in the test namespace that ends with the test; ctx ends with it too.
func (e *env) watch(list client.ObjectList, opts ...client.ListOption) (w watch.Interface, ctx context.Context) {
	e.t.Helper()
	wc, err := client.NewWithWatch(e.cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	e.t.Cleanup(cancel)
	w, err = wc.Watch(ctx, list, append([]client.ListOption{client.InNamespace(testNS)}, opts...)...)
	if err != nil {
		e.t.Fatal(err)
	}
	return w, ctx
}

func (e *env) watchPrimaries(s *set) *primaryWatch {
	e.t.Helper()
	w, ctx := e.watch(&corev1.PodList{},
		client.MatchingLabels{v1alpha1.InstanceLabel: s.sts.Labels[v1alpha1.InstanceLabel]})
	pw := &primaryWatch{roles: map[string]string{}}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				pw.end(fmt.Errorf("watch event %s: %v", ev.Type, ev.Object))
				return
			}
			pw.see(ev.Type, pod)
		}
		if ctx.Err() == nil {
			pw.end(fmt.Errorf("the watch ended"))
		}
	}()
	return pw
}

func (pw *primaryWatch) see(t watch.EventType, pod *corev1.Pod) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if t == watch.Deleted {
		delete(pw.roles, pod.Name)
	} else {
		pw.roles[pod.Name] = pod.Labels[v1alpha1.RoleLabel]
	}
	var primaries []string
	for _, name := range slices.Sorted(maps.Keys(pw.roles)) {
		if pw.roles[name] == v1alpha1.RolePrimary {
			primaries = append(primaries, name)
		}
	}
	if len(primaries) > 1 {
		pw.double = append(pw.double, fmt.Sprintf("%v", pw.roles))
	}
	if len(primaries) == 1 && (len(pw.holders) == 0 || pw.holders[len(pw.holders)-1] != primaries[0]) {
		pw.holders = append(pw.holders, primaries[0])
	}
}

func (pw *primaryWatch) end(err error) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pw.ended = err
}

func (pw *primaryWatch) state() (holders, double []string, ended error) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return slices.Clone(pw.holders), slices.Clone(pw.double), pw.ended
}

// The primary moves up (0 to 2), down by switchover (2 to 1) and down by failover (1 killed, to 0), and at no
// moment do two Pods carry role=primary: the Pod that loses the role loses its label before the new primary
// gets it, whatever their ordinals.
func TestRoleLabelNeverOnTwoPods(t *testing.T) {
	g := NewWithT(t)
	e := startEnv(t)
	s := e.startSet("labels", 3)
	s.waitFormed(g, 0, 1, 2)
	g.Eventually(func() map[string]string { return e.roles(s.sts) }, convergeWithin, 100*time.Millisecond).
		Should(HaveKeyWithValue("labels-0", v1alpha1.RolePrimary))
	pw := e.watchPrimaries(s)

	request := func(ordinal string) {
		patch := client.RawPatch(types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"`+v1alpha1.PrimaryAnnotation+`":"`+ordinal+`"}}}`))
		g.Expect(e.c.Patch(e.ctx, s.sts.DeepCopy(), patch)).To(Succeed())
	}
	labelled := func(pod string) {
		g.Eventually(func() map[string]string { return e.roles(s.sts) }, convergeWithin, 100*time.Millisecond).
			Should(HaveKeyWithValue(pod, v1alpha1.RolePrimary))
	}
	request("2")
	g.Eventually(s.lastTransition, convergeWithin, 100*time.Millisecond).Should(Equal("Switchover labels-0 -> labels-2"))
	labelled("labels-2")
	s.waitFormed(g, 2, 0, 1)
	request("1")
	g.Eventually(s.lastTransition, convergeWithin, 100*time.Millisecond).Should(Equal("Switchover labels-2 -> labels-1"))
	labelled("labels-1")
	s.waitFormed(g, 1, 0, 2)
	s.server(1).Kill()
	g.Eventually(s.lastTransition, convergeWithin, 100*time.Millisecond).Should(Equal("Failover labels-1 -> labels-0"))
	labelled("labels-0")

	holders, double, ended := pw.state()
	g.Expect(ended).NotTo(HaveOccurred())
	g.Expect(holders).To(Equal([]string{"labels-0", "labels-2", "labels-1", "labels-0"}))
	g.Expect(double).To(BeEmpty(), "moments at which two Pods carried role=primary")
}
