package mysqlcluster

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// primaryEndpoints tells whether the member's primary Services (<name>, <name>-primary) are rendered without a
// selector, their EndpointSlices written by the member controller (controllers/member/endpoints.go): once that
// controller reported that it does so (ReplicationReport.PrimaryEndpoints), and from then on for as long as
// this MySQLCluster's <name>-primary has no selector. The second rule keeps a report that is briefly missing
// (a new StatefulSet has none yet) from bringing a selector back; a controller of an earlier release, which never
// reports it, keeps Services that select the Pod labelled primary.
func primaryEndpoints(ctx context.Context, mc client.Client, c *v1alpha1.MySQLCluster, set memberSet) (bool, error) {
	var svc corev1.Service
	err := mc.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.PrimaryServiceName()}, &svc)
	switch {
	case err == nil && svc.Labels[v1alpha1.ClusterUIDLabel] == string(c.UID) && len(svc.Spec.Selector) == 0:
		return true, nil
	case err != nil && !apierrors.IsNotFound(err):
		return false, fmt.Errorf("failed to read Service %s/%s: %w", c.Namespace, c.PrimaryServiceName(), err)
	}
	return set.sts != nil && set.sts.Labels[v1alpha1.ClusterUIDLabel] == string(c.UID) && set.rep != nil &&
		set.rep.PrimaryEndpoints, nil
}
