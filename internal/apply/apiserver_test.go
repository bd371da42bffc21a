package apply

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

// The applier against a real API server: it creates, then writes nothing for an unchanged object; it does not
// write over an object of another owner (made by hand, or carrying another MySQLCluster's UID), in dry run or
// not; and it takes such an object over only when the adopt set names its owner's UID or its own.
func TestApplierOwnsByUID(t *testing.T) {
	g := NewWithT(t)
	c, a := newApplier(t, g, nil)
	ctx := context.Background()
	desired := func(name string) *corev1ac.ConfigMapApplyConfiguration {
		return corev1ac.ConfigMap(name, "shop").
			WithLabels(map[string]string{v1alpha1.ClusterUIDLabel: "me"}).
			WithData(map[string]string{"k": "v"})
	}
	live := func(name string) *corev1.ConfigMap {
		var cm corev1.ConfigMap
		g.ExpectWithOffset(1, c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: name}, &cm)).To(Succeed())
		return &cm
	}

	res, err := a.Apply(ctx, desired("mine"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(Result{Kind: "ConfigMap", Name: "mine", Action: ActionCreate}))
	written := live("mine").ResourceVersion
	res, err = a.Apply(ctx, desired("mine"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Action).To(Equal(ActionUnchanged))
	g.Expect(live("mine").ResourceVersion).To(Equal(written), "an unchanged object is not written")

	byHand := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "by-hand"}, Data: map[string]string{"k": "theirs"}}
	predecessor := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "predecessor",
		Labels: map[string]string{v1alpha1.ClusterUIDLabel: "old"}}, Data: map[string]string{"k": "old"}}
	g.Expect(c.Create(ctx, byHand)).To(Succeed())
	g.Expect(c.Create(ctx, predecessor)).To(Succeed())

	for _, tt := range []struct {
		obj   *corev1.ConfigMap
		owner string
	}{{byHand, ""}, {predecessor, "old"}} {
		for _, dry := range []bool{true, false} {
			a.DryRun = dry
			res, err := a.Apply(ctx, desired(tt.obj.Name))
			var ce *ConflictError
			g.Expect(errors.As(err, &ce)).To(BeTrue(), "%s dry=%v", tt.obj.Name, dry)
			g.Expect(ce.Ref).To(Equal(v1alpha1.ObjectRef{Kind: "ConfigMap", Name: tt.obj.Name, UID: string(tt.obj.UID), OwnerUID: tt.owner}))
			g.Expect(res.Action).To(Equal(ActionConflict))
			g.Expect(live(tt.obj.Name).ResourceVersion).To(Equal(tt.obj.ResourceVersion), "nothing is written over it")
		}
	}

	a.DryRun = false
	a.Adopt = map[string]bool{string(byHand.UID): true, "old": true}
	for _, tt := range []struct {
		obj   *corev1.ConfigMap
		owner string
	}{{byHand, ""}, {predecessor, "old"}} {
		res, err := a.Apply(ctx, desired(tt.obj.Name))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Action).To(Equal(ActionAdopt))
		g.Expect(res.Adopted).To(Equal(&v1alpha1.ObjectRef{Kind: "ConfigMap", Name: tt.obj.Name, UID: string(tt.obj.UID), OwnerUID: tt.owner}))
		got := live(tt.obj.Name)
		g.Expect(got.UID).To(Equal(tt.obj.UID), "the same object, taken over")
		g.Expect(got.Labels).To(HaveKeyWithValue(v1alpha1.ClusterUIDLabel, "me"))
		g.Expect(got.Data).To(HaveKeyWithValue("k", "v"))
	}
}

// The writer's creates and applies are answered in protobuf, not JSON, and the version each wrote is still
// known from the answer: the next pass finds it verified.
func TestWriterAppliesWithProtobufAnswers(t *testing.T) {
	g := NewWithT(t)
	var mu sync.Mutex
	answers := map[string]string{} // content type of the last answer to each POST and PATCH
	c, a := newApplier(t, g, func(inner http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			resp, err := inner.RoundTrip(req)
			if err == nil && (req.Method == http.MethodPatch || req.Method == http.MethodPost) {
				mu.Lock()
				answers[req.Method+" "+req.URL.Path] = resp.Header.Get("Content-Type")
				mu.Unlock()
			}
			return resp, err
		})
	})
	ctx := context.Background()
	desired := func(v string) *corev1ac.ConfigMapApplyConfiguration {
		return corev1ac.ConfigMap("orders", "shop").
			WithLabels(map[string]string{v1alpha1.ClusterUIDLabel: "me"}).
			WithData(map[string]string{"k": v})
	}
	key := objectKey{"aws", "ConfigMap", "shop", "orders"}
	for _, step := range []struct{ value, action string }{{"v1", ActionCreate}, {"v2", ActionUpdate}} {
		res, err := a.Apply(ctx, desired(step.value))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Action).To(Equal(step.action))
		var live corev1.ConfigMap
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "orders"}, &live)).To(Succeed())
		g.Expect(live.Data).To(HaveKeyWithValue("k", step.value))
		g.Expect(a.Memory.verified.holds(key, live.ResourceVersion, digestOf(desired(step.value)))).To(BeTrue(),
			"the version written is known from the protobuf answer")
	}
	const protobuf = "application/vnd.kubernetes.protobuf"
	g.Expect(answers).To(Equal(map[string]string{
		"POST /api/v1/namespaces/shop/configmaps":         protobuf, // the create
		"PATCH /api/v1/namespaces/shop/configmaps/orders": protobuf, // the move of the create's fields, and the apply
	}))
}

// newApplier starts an API server with the namespace shop and returns a client of it and an Applier in member
// aws for the MySQLCluster uid "me", whose writer's transport wrap (when not nil) wraps.
func newApplier(t *testing.T, g Gomega, wrap func(http.RoundTripper) http.RoundTripper) (client.Client, Applier) {
	cfg := testfleet.APIServer(t)
	c, err := client.New(cfg, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	hc, err := rest.HTTPClientFor(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	if wrap != nil {
		hc.Transport = wrap(hc.Transport)
	}
	w, err := NewWriter(cfg, hc)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}})).To(Succeed())
	return c, Applier{Client: c, Reader: c, Writer: w, Member: "aws", UID: "me", Memory: &Memory{}}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
