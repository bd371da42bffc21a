package apply

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/fleet"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

// An object the member cache lacks is created with one POST and no look first; the create's managedFields entry
// counts as mysqlfleet's, so a manager that starts afresh verifies the object from its cache with no request;
// the first apply after it removes a field mysqlfleet no longer wants, as if the object had been applied from
// the start; and a create that finds another owner's object writes nothing over it.
func TestCreateWithoutLookThenApplyPrunes(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := testfleet.APIServer(t)
	direct, err := client.New(cfg, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(direct.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})).To(Succeed())

	var mu sync.Mutex
	requests := map[string]int{} // method → count, of the Applier's reads and writes of objects (not discovery)
	count := func(inner http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			if strings.Contains(req.URL.Path, "/namespaces/") {
				mu.Lock()
				requests[req.Method]++
				mu.Unlock()
			}
			return inner.RoundTrip(req)
		})
	}
	taken := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := requests
		requests = map[string]int{}
		return out
	}
	hc, err := rest.HTTPClientFor(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	hc.Transport = count(hc.Transport)
	reader, err := client.New(cfg, client.Options{HTTPClient: hc})
	g.Expect(err).NotTo(HaveOccurred())
	w, err := NewWriter(cfg, hc)
	g.Expect(err).NotTo(HaveOccurred())
	// cachedClient starts a cache with the options and returns a client that reads from it.
	cachedClient := func(opts cache.Options) client.Client {
		c, err := cache.New(cfg, opts)
		g.Expect(err).NotTo(HaveOccurred())
		go func() { _ = c.Start(ctx) }()
		g.Expect(c.WaitForCacheSync(ctx)).To(BeTrue())
		cl, err := client.New(cfg, client.Options{Cache: &client.CacheOptions{Reader: c}})
		g.Expect(err).NotTo(HaveOccurred())
		return cl
	}
	// The member cache as the manager builds it: only what mysqlfleet labels, other managers' fields trimmed.
	cached := cachedClient(fleet.MemberCacheOptions(nil))
	a := Applier{Client: cached, Reader: reader, Writer: w, Member: "aws", UID: "me", Memory: &Memory{}}

	labels := map[string]string{v1alpha1.ClusterUIDLabel: "me", v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}
	desired := func(data map[string]string) *corev1ac.ConfigMapApplyConfiguration {
		return corev1ac.ConfigMap("orders", "shop").WithLabels(labels).WithData(data)
	}
	live := func() *corev1.ConfigMap {
		var cm corev1.ConfigMap
		g.ExpectWithOffset(1, direct.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "orders"}, &cm)).To(Succeed())
		return &cm
	}
	entries := func(cm *corev1.ConfigMap) []string {
		var out []string
		for _, f := range cm.ManagedFields {
			out = append(out, f.Manager+"/"+string(f.Operation))
		}
		return out
	}

	both := map[string]string{"a": "1", "b": "2"}
	res, err := a.Apply(ctx, desired(both))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(Result{Kind: "ConfigMap", Name: "orders", Action: ActionCreate}))
	g.Expect(taken()).To(Equal(map[string]int{http.MethodPost: 1}), "one create, no look first")
	created := live()
	g.Expect(created.Data).To(Equal(both))
	g.Expect(entries(created)).To(Equal([]string{v1alpha1.CreateFieldManager + "/Update"}))

	// A manager that starts afresh (no memory) verifies the created object from its cache alone.
	g.Eventually(func() error {
		return cached.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "orders"}, &corev1.ConfigMap{})
	}).WithTimeout(30 * time.Second).Should(Succeed())
	a.Memory = &Memory{}
	res, err = a.Apply(ctx, desired(both))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Action).To(Equal(ActionUnchanged))
	g.Expect(taken()).To(BeEmpty(), "a created object written by nobody since is verified with no request")

	// b is no longer wanted: the first apply takes the create's fields over and so removes b.
	res, err = a.Apply(ctx, desired(map[string]string{"a": "1"}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Action).To(Equal(ActionUpdate))
	applied := live()
	g.Expect(applied.Data).To(Equal(map[string]string{"a": "1"}), "a field mysqlfleet created and no longer wants is removed")
	g.Expect(taken()).To(Equal(map[string]int{http.MethodGet: 1, http.MethodPatch: 2}),
		"the object read whole, its create entry moved into the apply entry, the apply")
	g.Expect(entries(applied)).To(Equal([]string{v1alpha1.FieldManager + "/Apply"}))
	g.Expect(applied.UID).To(Equal(created.UID))

	// A manager whose cache has not caught up (here: one that caches nothing) creates, finds the name taken,
	// reads the object and finds it its own and as wanted: nothing more is written, though someone else has
	// annotated it since.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"team":"payments"}}}`))
	g.Expect(direct.Patch(ctx, applied, patch, client.FieldOwner("kubectl-annotate"))).To(Succeed())
	behind := a
	behind.Client = cachedClient(cache.Options{DefaultLabelSelector: k8slabels.SelectorFromSet(k8slabels.Set{"never": "true"})})
	behind.Memory = &Memory{}
	taken()
	res, err = behind.Apply(ctx, desired(map[string]string{"a": "1"}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Action).To(Equal(ActionUnchanged))
	g.Expect(taken()).To(Equal(map[string]int{http.MethodPost: 1, http.MethodGet: 1}), "the create, refused, then the look")

	// A create that finds the name taken by an object mysqlfleet did not make (absent from the cache) writes
	// nothing over it: the owner is read from the API server and the conflict reported.
	byHand := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "by-hand"}, Data: map[string]string{"k": "theirs"}}
	g.Expect(direct.Create(ctx, byHand)).To(Succeed())
	taken()
	res, err = a.Apply(ctx, corev1ac.ConfigMap("by-hand", "shop").WithLabels(labels).WithData(map[string]string{"k": "mine"}))
	var ce *ConflictError
	g.Expect(errors.As(err, &ce)).To(BeTrue(), "%v", err)
	g.Expect(res.Action).To(Equal(ActionConflict))
	g.Expect(taken()).To(Equal(map[string]int{http.MethodPost: 1, http.MethodGet: 1}), "the create, refused, then the look")
	var after corev1.ConfigMap
	g.Expect(direct.Get(ctx, client.ObjectKeyFromObject(byHand), &after)).To(Succeed())
	g.Expect(after.ResourceVersion).To(Equal(byHand.ResourceVersion), "nothing is written over it")
}
