package hubclient

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// The claim is about the wrapper's bound, not about an API server: the writes it wraps are held by an interceptor
// so that the test sees how many are in flight at once. Status writes wait for a slot; other writes do not.
func TestStatusBoundedHoldsStatusWritesBeyondTheBound(t *testing.T) {
	g := NewWithT(t)
	var inFlight, most atomic.Int32
	release := make(chan struct{})
	hold := func() {
		n := inFlight.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
		inFlight.Add(-1)
	}
	inner := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			hold()
			return nil
		},
		SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			hold()
			return nil
		},
	}).Build()
	b := StatusBounded(inner, 2)

	var wg sync.WaitGroup
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: string(rune('a' + i))}}
			if i%2 == 0 {
				g.Expect(b.Status().Update(context.Background(), cm)).To(Succeed())
			} else {
				g.Expect(b.Status().Patch(context.Background(), cm, client.Merge)).To(Succeed())
			}
		}()
	}
	g.Eventually(inFlight.Load).Should(Equal(int32(2)))
	g.Consistently(inFlight.Load, 200*time.Millisecond).Should(Equal(int32(2)), "the others wait for a slot")

	// A status write waiting for a slot gives up with its context; a write of the object itself does not wait.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	late := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "late"}}
	err := b.Status().Patch(ctx, late, client.Merge)
	g.Expect(errors.Is(err, context.DeadlineExceeded)).To(BeTrue())
	g.Expect(b.Create(context.Background(), late)).To(Succeed(), "not a status write")

	close(release)
	wg.Wait()
	g.Expect(most.Load()).To(Equal(int32(2)))
}
