package failover

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// watchSet follows the set's report ConfigMap, Pods and primary Service's EndpointSlices until ctx ends, and the
// member controller's passes over it.
func watchSet(ctx context.Context, c client.WithWatch, s *set) *Timeline {
	tl := &Timeline{}
	recordPasses(s.ns, tl)
	go func() {
		<-ctx.Done()
		recordPasses(s.ns, nil)
	}()
	tl.WatchMember(ctx, c, s.ns, s.cluster, false)
	return tl
}
