// Package hubclient bounds the status writes a manager has in flight to the hub's API server.
//
// A burst of new MySQLClusters makes every pass end in a status write. Unbounded, a full set of workers puts as many
// writes of a large status in front of the hub, each of which costs it CPU: every other request of the manager then
// waits behind them, the renewals of its Lease included, and a leader that cannot renew within its renew deadline
// stops. The hub's throughput is what it is, so the bound costs no throughput; what it changes is how long the other
// requests wait. Only status writes are bounded: the finalizers and the credentials Secret are what a new
// MySQLCluster's first writes into members wait for, and must not queue behind reports. Reads come from the cache,
// and leader election's Lease has a client of its own.
package hubclient

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultMaxStatusWrites is how many status writes a replica has in flight to the hub by default.
const DefaultMaxStatusWrites = 8

// StatusBounded wraps c so that at most n writes of its status subresource are in flight at once; the others
// wait for a slot, or for their context to end. n < 1 means DefaultMaxStatusWrites.
func StatusBounded(c client.Client, n int) client.Client {
	if n < 1 {
		n = DefaultMaxStatusWrites
	}
	return &bounded{Client: c, slots: make(chan struct{}, n)}
}

type bounded struct {
	client.Client
	slots chan struct{}
}

// do runs one write in a slot.
func (b *bounded) do(ctx context.Context, write func() error) error {
	select {
	case b.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-b.slots }()
	return write()
}

func (b *bounded) Status() client.SubResourceWriter { return b.SubResource("status") }

func (b *bounded) SubResource(name string) client.SubResourceClient {
	sub := b.Client.SubResource(name)
	if name != "status" {
		return sub
	}
	return &boundedStatus{SubResourceClient: sub, b: b}
}

type boundedStatus struct {
	client.SubResourceClient
	b *bounded
}

func (s *boundedStatus) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	return s.b.do(ctx, func() error { return s.SubResourceClient.Create(ctx, obj, sub, opts...) })
}

func (s *boundedStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return s.b.do(ctx, func() error { return s.SubResourceClient.Update(ctx, obj, opts...) })
}

func (s *boundedStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return s.b.do(ctx, func() error { return s.SubResourceClient.Patch(ctx, obj, patch, opts...) })
}

func (s *boundedStatus) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	return s.b.do(ctx, func() error { return s.SubResourceClient.Apply(ctx, obj, opts...) })
}
