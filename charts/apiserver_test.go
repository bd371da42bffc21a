package charts_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/clusters"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

// TestManifestsAgainstAPIServer sends every object that every value set renders, hooks included, to a real
// Kubernetes 1.36 API server as a server-side dry run with strict field validation: the server runs defaulting,
// validation and admission but stores nothing. The release namespace enforces the restricted Pod Security
// Standard, and warns about it for workloads, so the Deployment's Pod template and the test Pod must meet it;
// any warning fails (deprecated APIs, unknown fields, Pod Security).
func TestManifestsAgainstAPIServer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	fleet := testfleet.ForTest(t, testfleet.Options{Members: []clusters.Definition{}})

	warnings := &warningRecorder{}
	cfg := rest.CopyConfig(fleet.Hub.Config)
	cfg.WarningHandlerWithContext = warnings
	hub, err := client.New(cfg, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(hub.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNS, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
		"pod-security.kubernetes.io/warn":            "restricted",
		"pod-security.kubernetes.io/warn-version":    "latest",
	}}})).To(Succeed())

	for name, vals := range valueSets() {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			r, err := render(t, vals)
			g.Expect(err).NotTo(HaveOccurred())
			for _, o := range slices.Concat(r.objects, r.hooks) {
				what := o.GetKind() + " " + o.GetName()
				if o.GetAPIVersion() == "monitoring.coreos.com/v1" {
					// The Prometheus Operator's CRD is not part of Kubernetes and not installed here; TestValueSets
					// checks what the ServiceMonitor points at.
					_, err := hub.RESTMapper().RESTMapping(o.GroupVersionKind().GroupKind(), "v1")
					g.Expect(meta.IsNoMatchError(err)).To(BeTrue(), "%s: %v", what, err)
					t.Logf("%s: not checked, the hub does not serve monitoring.coreos.com/v1", what)
					continue
				}
				warnings.take()
				g.Expect(hub.Create(ctx, o.DeepCopy(), client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict))).
					To(Succeed(), what)
				g.Expect(warnings.take()).To(BeEmpty(), "warnings for %s", what)
			}

			// Pod Security enforcement applies to Pods: send the Deployment's Pod as its ReplicaSet would create it.
			var deps []*appsv1.Deployment
			for _, o := range r.objects {
				if o.GetKind() == "Deployment" {
					deps = append(deps, typed[appsv1.Deployment](t, o))
				}
			}
			g.Expect(deps).To(HaveLen(1))
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: deps[0].Name + "-pod", Namespace: releaseNS, Labels: deps[0].Spec.Template.Labels},
				Spec:       deps[0].Spec.Template.Spec,
			}
			g.Expect(hub.Create(ctx, pod, client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict))).To(Succeed())
			g.Expect(warnings.take()).To(BeEmpty(), "warnings for the manager's Pod")
		})
	}

	// The check can fail: a Pod that runs as root is refused by the namespace's Pod Security enforcement.
	bad := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "root", Namespace: releaseNS},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/c:1"}}},
	}
	g.Expect(hub.Create(ctx, bad, client.DryRunAll)).To(MatchError(ContainSubstring(`violates PodSecurity "restricted:latest"`)))
}

// warningRecorder keeps the warnings (HTTP Warning headers) that the API server returns.
type warningRecorder struct {
	mu       sync.Mutex
	messages []string
}

func (w *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, code int, _ string, message string) {
	if code != 299 || message == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.messages = append(w.messages, message)
}

// take returns the warnings recorded since the last call and forgets them.
func (w *warningRecorder) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.messages
	w.messages = nil
	return m
}
