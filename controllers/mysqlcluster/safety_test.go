package mysqlcluster_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// denyInCluster has cl's API server deny, with message, the requests that rule selects and the CEL expression
// match admits, until release is called or the test ends. It returns once probe's request is denied: a new
// ValidatingAdmissionPolicy takes a moment to be enforced.
func denyInCluster(t *testing.T, g Gomega, cl client.Client, name string, rule admissionregv1.RuleWithOperations,
	match, message string, probe func() error) (release func()) {
	t.Helper()
	ctx := context.Background()
	policy := &admissionregv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregv1.Fail),
			MatchConstraints: &admissionregv1.MatchResources{ResourceRules: []admissionregv1.NamedRuleWithOperations{
				{RuleWithOperations: rule}}},
			MatchConditions: []admissionregv1.MatchCondition{{Name: "selected", Expression: match}},
			Validations:     []admissionregv1.Validation{{Expression: "false", Message: message}},
		},
	}
	binding := &admissionregv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
			ValidationActions: []admissionregv1.ValidationAction{admissionregv1.Deny}},
	}
	g.Expect(cl.Create(ctx, policy)).To(Succeed())
	g.Expect(cl.Create(ctx, binding)).To(Succeed())
	release = func() {
		g.Expect(client.IgnoreNotFound(cl.Delete(context.Background(), binding))).To(Succeed())
		// Enforcement stops a moment after the binding goes, as it starts: wait until the probe passes.
		g.Eventually(probe, 30*time.Second, 250*time.Millisecond).Should(Succeed())
	}
	t.Cleanup(func() {
		_ = cl.Delete(context.Background(), binding)
		_ = cl.Delete(context.Background(), policy)
	})
	g.Eventually(probe, 30*time.Second, 250*time.Millisecond).Should(MatchError(ContainSubstring(message)))
	return release
}

func rule(op admissionregv1.OperationType, group, resource string) admissionregv1.RuleWithOperations {
	return admissionregv1.RuleWithOperations{
		Operations: []admissionregv1.OperationType{op},
		Rule:       admissionregv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}},
	}
}

// A paused MySQLCluster whose dry run stops at one wave still publishes its plan: the objects of the waves it
// reached, each with its action, and why it stopped (here a ConfigMap of the name it needs, made by hand, which
// it will not take over). The objects of waves never reached are left out; listed with an empty action, which
// the API's enum refuses, they made the whole status write fail, and the member's state was lost.
func TestPausedPlanSurvivesAFailedWave(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "paused-wave"
	mc := members[aws]
	c := newCluster(ns, "db", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Paused = true
		c.Spec.Placement.Members = []string{aws}
	})
	g.Expect(client.IgnoreAlreadyExists(mc.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
	handMade := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: c.ConfigMapName(),
		Labels: map[string]string{"owner": "someone-else"}}}
	g.Expect(mc.Create(ctx, handMade)).To(Succeed())
	create(t, c)
	key := client.ObjectKeyFromObject(c)

	var ms *v1alpha1.MemberStatus
	g.Eventually(func() []v1alpha1.ObjectRef {
		if ms = memberStatus(get(g, key), aws); ms == nil {
			return nil
		}
		return ms.Conflicts
	}, time.Minute, 250*time.Millisecond).ShouldNot(BeEmpty())
	g.Expect(ms.Plan).NotTo(BeEmpty(), "the waves reached are planned")
	for _, p := range ms.Plan {
		g.Expect(p.Action).NotTo(BeEmpty(), "%s %s", p.Kind, p.Name)
		g.Expect(p.Kind).NotTo(Equal("StatefulSet"), "the StatefulSet's wave comes after the ConfigMap's and was not reached")
	}
	g.Expect(ms.Plan).To(ContainElement(v1alpha1.PlannedObject{Kind: "ConfigMap", Name: c.ConfigMapName(), Action: "Conflict"}))

	g.Expect(mc.Delete(ctx, handMade)).To(Succeed())
	g.Eventually(func() []v1alpha1.PlannedObject {
		if ms := memberStatus(get(g, key), aws); ms != nil {
			return ms.Plan
		}
		return nil
	}, time.Minute, 250*time.Millisecond).Should(ContainElement(v1alpha1.PlannedObject{Kind: "StatefulSet", Name: "db", Action: "Create"}))
	g.Expect(get(g, key).Status.Phase).To(Equal(v1alpha1.PhasePaused))
	g.Expect(apierrors.IsNotFound(mc.Get(ctx, key, &appsv1.StatefulSet{}))).To(BeTrue(), "a paused MySQLCluster applies nothing")
	g.Expect(hub.Delete(ctx, c)).To(Succeed())
	eventuallyGone(g, key)
}

// Teardown works in every member at once: a member whose deletes hang (an admission webhook there holds them, while
// its API server answers everything else, so it is not unreachable) holds only itself, and the other members are
// cleaned up meanwhile. Member by member, the other member would wait until the hanging deletes gave up.
func TestTeardownDoesNotWaitForAHangingMember(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "teardown-hang"
	c := newCluster(ns, "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Placement.Members = []string{aws, gcp} })
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	eventuallyConverged(g, key)

	hook := startHoldingWebhook(t, aws)
	hook.install(t, g, aws, ns)
	hook.install(t, g, gcp, ns)

	g.Expect(hub.Delete(ctx, c)).To(Succeed())
	g.Eventually(func() bool { return apierrors.IsNotFound(members[gcp].Get(ctx, key, &appsv1.StatefulSet{})) },
		time.Minute, 250*time.Millisecond).Should(BeTrue(), "the member whose deletes pass is torn down")
	log := hook.log()
	firstGCP := slices.Index(log, "gcp-us-central1 delete")
	held := slices.Index(log, "aws-eu-west-1 held")
	ended := slices.Index(log, "aws-eu-west-1 ended")
	g.Expect(held).To(BeNumerically(">=", 0), "the hanging member's teardown was attempted: %v", log)
	g.Expect(firstGCP).To(BeNumerically(">=", 0), "%v", log)
	g.Expect(ended < 0 || firstGCP < ended).To(BeTrue(),
		"the other member's deletes came while the hanging member's first delete was still held: %v", log)
	g.Expect(get(g, key).Status.Phase).To(Equal(v1alpha1.PhaseDeleting))

	hook.release()
	eventuallyGone(g, key)
	g.Expect(apierrors.IsNotFound(members[aws].Get(ctx, key, &appsv1.StatefulSet{}))).To(BeTrue(),
		"once its deletes pass, the hanging member is torn down too")
}

// holdingWebhook is a validating admission webhook, served on loopback, that members call for deletes in a
// namespace. It holds those of the member named hold until released (or until the caller gives up) and lets every
// other pass, logging each in order of arrival.
type holdingWebhook struct {
	srv      *httptest.Server
	hold     string
	mu       sync.Mutex
	entries  []string
	probed   map[string]int
	released chan struct{}
	once     sync.Once
}

// probeName is the object whose deletes the webhook lets pass at once in every member: how a test sees that the
// webhook is called.
const probeName = "webhook-probe"

func startHoldingWebhook(t *testing.T, hold string) *holdingWebhook {
	h := &holdingWebhook{hold: hold, probed: map[string]int{}, released: make(chan struct{})}
	h.srv = httptest.NewTLSServer(http.HandlerFunc(h.serve))
	t.Cleanup(func() {
		h.release()
		h.srv.Close()
	})
	return h
}

func (h *holdingWebhook) serve(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	member := strings.TrimPrefix(r.URL.Path, "/")
	switch {
	case review.Request.Name == probeName:
		h.mu.Lock()
		h.probed[member]++
		h.mu.Unlock()
	case member == h.hold:
		h.note(member + " held")
		select {
		case <-h.released:
		case <-r.Context().Done():
		}
		h.note(member + " ended")
	default:
		h.note(member + " delete")
	}
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
	review.Request = nil
	_ = json.NewEncoder(w).Encode(&review)
}

func (h *holdingWebhook) note(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.entries = append(h.entries, s)
}

func (h *holdingWebhook) log() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.entries)
}

func (h *holdingWebhook) probes(member string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.probed[member]
}

func (h *holdingWebhook) release() { h.once.Do(func() { close(h.released) }) }

// install registers the webhook in member for deletes in namespace ns, and waits until the member calls it.
func (h *holdingWebhook) install(t *testing.T, g Gomega, member, ns string) {
	ctx := context.Background()
	mc := members[member]
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.srv.Certificate().Raw})
	vwc := &admissionregv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "hold-deletes-" + ns},
		Webhooks: []admissionregv1.ValidatingWebhook{{
			Name:         "hold-deletes.mysqlfleet.test",
			ClientConfig: admissionregv1.WebhookClientConfig{URL: ptr.To(h.srv.URL + "/" + member), CABundle: ca},
			Rules: []admissionregv1.RuleWithOperations{{
				Operations: []admissionregv1.OperationType{admissionregv1.Delete},
				Rule: admissionregv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"},
					Scope: ptr.To(admissionregv1.NamespacedScope)},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
			SideEffects:             ptr.To(admissionregv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To(int32(30)),
			FailurePolicy:           ptr.To(admissionregv1.Ignore),
		}},
	}
	g.Expect(mc.Create(ctx, vwc)).To(Succeed())
	t.Cleanup(func() { _ = mc.Delete(context.Background(), vwc) })
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: probeName}}
	g.Expect(client.IgnoreAlreadyExists(mc.Create(ctx, probe))).To(Succeed())
	g.Eventually(func() int {
		_ = mc.Delete(ctx, probe, client.DryRunAll)
		return h.probes(member)
	}, 30*time.Second, 250*time.Millisecond).Should(BeNumerically(">", 0), "member %s calls the webhook", member)
	g.Expect(mc.Delete(ctx, probe)).To(Succeed())
}

// Events about a transition follow the status write that records it: while the hub refuses the write, nothing is
// announced (an Event emitted before a write that fails would announce a state nobody can read, and again at every
// retry), and once the write succeeds the transition is announced once.
func TestEventsFollowTheStatusWrite(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const ns = "events-after-write"
	const policy = "deny-events-after-write-status"
	probe := newCluster(ns, "probe", func(c *v1alpha1.MySQLCluster) {
		c.Spec.Paused = true
		c.Spec.Placement.Members = []string{"nowhere-1"}
	})
	create(t, probe)
	release := denyInCluster(t, g, hub, policy, rule(admissionregv1.Update, v1alpha1.GroupVersion.Group, "mysqlclusters/status"),
		`request.namespace == "`+ns+`"`, "status writes are blocked in this namespace", func() error {
			var p v1alpha1.MySQLCluster
			if err := hub.Get(ctx, client.ObjectKeyFromObject(probe), &p); err != nil {
				return err
			}
			p.Status.Phase = v1alpha1.PhasePending
			return hub.Status().Update(ctx, &p, client.DryRunAll)
		})
	denied := func() float64 {
		var n float64
		for _, m := range apiServerMetrics(g, fleet.Hub)["apiserver_validating_admission_policy_check_total"].GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			if l["policy"] == policy && l["enforcement_action"] == "deny" {
				n += m.GetCounter().GetValue()
			}
		}
		return n
	}
	before := denied()

	c := newCluster(ns, "db", func(c *v1alpha1.MySQLCluster) { c.Spec.Placement.Members = []string{"nowhere-1"} })
	create(t, c)
	key := client.ObjectKeyFromObject(c)
	// The manager's status writes for it are refused, again and again (probe's too: both are retried).
	g.Eventually(denied, time.Minute, 250*time.Millisecond).Should(BeNumerically(">=", before+4))
	g.Expect(get(g, key).Status.Conditions).To(BeEmpty(), "no status write passed")
	g.Consistently(func() int32 { return announced(g, c, "UnknownMembers") }, 3*time.Second, 250*time.Millisecond).
		Should(BeZero(), "nothing is announced that status does not say")

	release()
	g.Eventually(func() metav1.ConditionStatus { return condition(get(g, key), v1alpha1.ConditionPlaced) },
		time.Minute, 250*time.Millisecond).Should(Equal(metav1.ConditionFalse))
	// The one write announces each condition it turned bad with that reason: Placed=False and Degraded=True here
	// (the two become one Event with a series of two, as events with the same reason about one object do).
	var bad int32
	for _, cond := range get(g, key).Status.Conditions {
		if cond.Reason == "UnknownMembers" {
			bad++
		}
	}
	g.Expect(bad).To(BeNumerically(">", 0))
	g.Eventually(func() int32 { return announced(g, c, "UnknownMembers") }, 30*time.Second, 250*time.Millisecond).
		Should(Equal(bad))
	g.Consistently(func() int32 { return announced(g, c, "UnknownMembers") }, 3*time.Second, 250*time.Millisecond).
		Should(Equal(bad), "announced once, by the write that succeeded")
	for _, obj := range []*v1alpha1.MySQLCluster{c, probe} {
		g.Expect(hub.Delete(ctx, obj)).To(Succeed())
		eventuallyGone(g, client.ObjectKeyFromObject(obj))
	}
}

// announced counts the Events with reason about obj (a repeated Event is one object with a series).
func announced(g Gomega, obj client.Object, reason string) int32 {
	var list eventsv1.EventList
	g.Expect(hub.List(context.Background(), &list, client.InNamespace(obj.GetNamespace()))).To(Succeed())
	var n int32
	for _, e := range list.Items {
		if e.Regarding.Name != obj.GetName() || e.Regarding.UID != obj.GetUID() || e.Reason != reason {
			continue
		}
		if e.Series != nil {
			n += e.Series.Count
		} else {
			n++
		}
	}
	return n
}
