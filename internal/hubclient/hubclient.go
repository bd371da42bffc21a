// Package hubclient bounds the writes a manager replica has in flight to the hub's API server.
//
// A burst of new MySQLClusters makes every pass end in a status write, and a sharded fleet writes each
// MySQLCluster's status several times (every replica its rows, the leader the rest). Without a bound, three
// replicas of 32 workers put up to a hundred writes of a large object in front of a hub that, on the benchmark's
// machine, spends 30 to 50 ms of CPU on each: every other request of the replicas then waits behind them, the
// renewals of their Leases included, and a leader that cannot renew within its renew deadline stops (seen at 20
// and 30 members, 2026-11-26 and 2026-11-27). The hub's throughput is what it is, so the bound costs no
// throughput; what it changes is how long a request that is not one of these writes waits. Reads (from the cache)
// and the Leases' own clients are not bounded.
package hubclient

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultMaxWrites is how many writes a replica has in flight to the hub by default.
const DefaultMaxWrites = 8

// Bounded wraps c so that at most n of its writes (including those of its status and other subresources) are in
// flight at once; the others wait for a slot, or for their context to end. n < 1 means DefaultMaxWrites.
func Bounded(c client.Client, n int) client.Client {
	if n < 1 {
		n = DefaultMaxWrites
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

func (b *bounded) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	return b.do(ctx, func() error { return b.Client.Create(ctx, obj, opts...) })
}

func (b *bounded) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	return b.do(ctx, func() error { return b.Client.Delete(ctx, obj, opts...) })
}

func (b *bounded) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	return b.do(ctx, func() error { return b.Client.Update(ctx, obj, opts...) })
}

func (b *bounded) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	return b.do(ctx, func() error { return b.Client.Patch(ctx, obj, patch, opts...) })
}

func (b *bounded) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	return b.do(ctx, func() error { return b.Client.Apply(ctx, obj, opts...) })
}

func (b *bounded) DeleteAllOf(ctx context.Context, obj client.Object, opts ...client.DeleteAllOfOption) error {
	return b.do(ctx, func() error { return b.Client.DeleteAllOf(ctx, obj, opts...) })
}

func (b *bounded) Status() client.SubResourceWriter { return b.SubResource("status") }

func (b *bounded) SubResource(name string) client.SubResourceClient {
	return &boundedSub{SubResourceClient: b.Client.SubResource(name), b: b}
}

type boundedSub struct {
	client.SubResourceClient
	b *bounded
}

func (s *boundedSub) Create(ctx context.Context, obj, sub client.Object, opts ...client.SubResourceCreateOption) error {
	return s.b.do(ctx, func() error { return s.SubResourceClient.Create(ctx, obj, sub, opts...) })
}

func (s *boundedSub) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return s.b.do(ctx, func() error { return s.SubResourceClient.Update(ctx, obj, opts...) })
}

func (s *boundedSub) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	return s.b.do(ctx, func() error { return s.SubResourceClient.Patch(ctx, obj, patch, opts...) })
}

func (s *boundedSub) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
	return s.b.do(ctx, func() error { return s.SubResourceClient.Apply(ctx, obj, opts...) })
}
