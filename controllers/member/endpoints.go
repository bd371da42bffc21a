package member

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	discoveryv1ac "k8s.io/client-go/applyconfigurations/discovery/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// The primary's endpoints.
//
// <name> and <name>-primary carry the application's writes to the primary. Selecting the Pod labelled primary,
// they changed their endpoints twice at every change of primary: the old primary left them (its label taken
// away, or its Pod no longer ready), then the new one entered. kube-proxy lets at least its minSyncPeriod (1 s
// by default) pass between two syncs, so clients waited up to a second more for the second change, the one
// that matters to them (docs/benchmarks.md, failover on kind). So the hub renders these two Services without a
// selector once this controller's report says PrimaryEndpoints, and this controller writes their EndpointSlice
// itself: at most one endpoint, the Pod that carries role=primary, changed once when another Pod takes the role
// or the primary's address changes. It is written before the pass changes the Pods' labels: kube-proxy syncs
// every Service at once, so a change of <name>-replicas (a replica promoted leaves it) synced just before would
// hold this one back by the same second.
//
// While no Pod carries the role (a failover under way, a primary that cannot be read), the slice keeps naming
// the last primary when this pass proved that its server cannot take a write: it is read-only (fenced, as a
// switchover leaves it), nothing listens on its port (a killed server, a restarting container) or its Pod is
// gone, replaced or being deleted (the kubelet is shutting its server down; until then it takes writes as the
// primary it still is, and none returns without a replica's acknowledgement). A client then fails at once, as
// with no endpoint, and the next primary is one change away: emptied first, the slice would change twice, and
// kube-proxy would hold the second change back by its minSyncPeriod. Otherwise
// (a server that does not answer in time may be frozen or cut off, yet take writes from clients that reach it)
// the slice is emptied at once, as the role label is taken away. The endpoint is ready whatever the Pod's
// readiness says: which server takes writes is this controller's decision, not the probe's.
//
// A Service that still has a selector (a hub of an earlier release, or before it read the report) is left to
// Kubernetes, and a slice of this controller's for it is deleted. When the selector goes, the endpoint
// controllers stop maintaining what they made for it but do not delete it: this controller deletes their
// EndpointSlices and Endpoints for the Service, after writing its own.

const (
	// EndpointsManager is the value of discoveryv1.LabelManagedBy on the EndpointSlices this controller writes.
	EndpointsManager = "member-controller.mysqlfleet.io"
	// endpointsFieldManager owns the slices' fields in server-side apply.
	endpointsFieldManager = "mysqlfleet-member-controller"
	// kubeEndpointsManager is the managed-by value of the Endpoints that kube-controller-manager's endpoints
	// controller makes (endpoints.kubernetes.io/managed-by).
	kubeEndpointsManager = "endpoint-controller"
	endpointsManagedBy   = "endpoints.kubernetes.io/managed-by"
)

// selectorEraSliceManagers are the controllers whose EndpointSlices a Service with a selector had: the
// EndpointSlice controller's, and the mirroring controller's, which copies an Endpoints left behind.
var selectorEraSliceManagers = []string{"endpointslice-controller.k8s.io", "endpointslicemirroring-controller.k8s.io"}

// sliceEndpoint is what a primary slice says: the Pod it names and where (empty Pod: no endpoint).
type sliceEndpoint struct {
	Pod, UID, IP, Node string
	Ports              string
}

// primaryServiceNames are the Services of a set that send writes to its primary.
func primaryServiceNames(sts string) []string {
	c := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Name: sts}}
	return []string{c.ServiceName(), c.PrimaryServiceName()}
}

// reconcilePrimaryEndpoints writes the primary Services' EndpointSlices where they differ from what they should
// say, and removes what the endpoint controllers left behind; see above.
func (r *Reconciler) reconcilePrimaryEndpoints(ctx context.Context, s *scope, primary string) error {
	// Both Services at once: kube-proxy syncs at most once per minSyncPeriod (1 s), so the second of two slices
	// written one after the other (a few API round trips apart) missed the sync that the first started and
	// waited a second for the next. Written together, they reach kube-proxy milliseconds apart; it may still
	// begin a sync between them (it begins within milliseconds of a change), and the clients of the second then
	// wait for the next sync (docs/benchmarks.md, failover on kind).
	names := primaryServiceNames(s.sts.Name)
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { errs[i] = r.reconcileService(ctx, s, name, primary) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// reconcileService writes the EndpointSlice of the set's Service name, if it is this set's.
func (r *Reconciler) reconcileService(ctx context.Context, s *scope, name, primary string) error {
	svc := &corev1.Service{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: s.sts.Namespace, Name: name}, svc)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("failed to get Service %s/%s: %w", s.sts.Namespace, name, err)
	case svc.Labels[v1alpha1.ClusterUIDLabel] != s.sts.Labels[v1alpha1.ClusterUIDLabel]:
		return nil // not this set's
	}
	return r.reconcileSlice(ctx, s, svc, primary)
}

func (r *Reconciler) reconcileSlice(ctx context.Context, s *scope, svc *corev1.Service, primary string) error {
	key := client.ObjectKeyFromObject(svc)
	have, err := r.currentSlice(ctx, key)
	if err != nil {
		return err
	}
	if len(svc.Spec.Selector) > 0 {
		if have == nil {
			return nil
		}
		if err := r.lease.Check(); err != nil {
			return fmt.Errorf("not deleting EndpointSlice %s: %w", key, err)
		}
		err := r.Client.Delete(ctx, &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{
			Namespace: key.Namespace, Name: key.Name}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to delete EndpointSlice %s of a Service with a selector: %w", key, err)
		}
		r.setSlice(key, nil)
		return nil
	}
	want := desiredEndpoint(s, svc, have, primary)
	if have == nil || *have != want {
		// The slice steers the application's writes: a controller that may have lost its Lease must not move it.
		if err := r.lease.Check(); err != nil {
			return fmt.Errorf("not writing EndpointSlice %s: %w", key, err)
		}
		if err := r.Client.Apply(ctx, primarySlice(s, svc, want), client.FieldOwner(endpointsFieldManager),
			client.ForceOwnership); err != nil {
			r.forgetSlice(key)
			return fmt.Errorf("failed to write EndpointSlice %s: %w", key, err)
		}
		r.setSlice(key, &want)
	}
	return r.removeSelectorEra(ctx, svc)
}

// labelledPrimary is the Pod that carries role=primary once this pass's label changes (roleLabelChanges) are
// made, "" for none.
func labelledPrimary(pods []*corev1.Pod, rep v1alpha1.ReplicationReport, planFailed bool) string {
	roles := map[string]string{}
	for _, p := range pods {
		if p != nil {
			roles[p.Name] = p.Labels[v1alpha1.RoleLabel]
		}
	}
	for _, c := range roleLabelChanges(pods, rep, planFailed) {
		roles[c.Pod] = c.Value
	}
	for _, p := range pods {
		if p != nil && roles[p.Name] == v1alpha1.RolePrimary {
			return p.Name
		}
	}
	return ""
}

// desiredEndpoint is what svc's slice should name: primary (the Pod labelled primary, unless it is being
// deleted), else the slice's endpoint if this pass proved its server unable to take a write or its Pod is going
// away, else none.
func desiredEndpoint(s *scope, svc *corev1.Service, have *sliceEndpoint, primary string) sliceEndpoint {
	for _, p := range s.pods {
		if p != nil && p.Name == primary && p.DeletionTimestamp == nil && p.Status.PodIP != "" {
			return sliceEndpoint{Pod: p.Name, UID: string(p.UID), IP: p.Status.PodIP, Node: p.Spec.NodeName,
				Ports: slicePortsKey(svc, p)}
		}
	}
	if have == nil || have.Pod == "" {
		return sliceEndpoint{}
	}
	for i, p := range s.pods {
		if podName(s.sts, i) != have.Pod {
			continue
		}
		if p == nil || p.DeletionTimestamp != nil || string(p.UID) != have.UID || i >= len(s.obs) || cannotWrite(s.obs[i].Status != nil &&
			s.obs[i].Status.ReadOnly, s.obs[i].Err) {
			return *have
		}
	}
	return sliceEndpoint{}
}

// cannotWrite tells a server proven unable to take a write in this pass: read-only, or nothing listening on its
// port. A Pod that is gone, or another Pod of the same name, is the caller's to tell.
func cannotWrite(readOnly bool, err error) bool {
	return readOnly || errors.Is(err, syscall.ECONNREFUSED)
}

// primarySlice is the EndpointSlice of svc naming e (none when e.Pod is empty), owned by svc so that it goes
// with it, and labelled as the hub labels the set's objects, without the cluster UID: the hub counts and tears
// down by that label, and this slice is the Service's.
func primarySlice(s *scope, svc *corev1.Service, e sliceEndpoint) *discoveryv1ac.EndpointSliceApplyConfiguration {
	labels := map[string]string{
		discoveryv1.LabelServiceName: svc.Name,
		discoveryv1.LabelManagedBy:   EndpointsManager,
		v1alpha1.ManagedByLabel:      v1alpha1.ManagedByValue,
	}
	for _, k := range []string{v1alpha1.ClusterNameLabel, v1alpha1.ClusterNamespaceLabel} {
		if v := s.sts.Labels[k]; v != "" {
			labels[k] = v
		}
	}
	family := discoveryv1.AddressTypeIPv4
	if ip := net.ParseIP(e.IP); ip != nil && ip.To4() == nil {
		family = discoveryv1.AddressTypeIPv6
	}
	slice := discoveryv1ac.EndpointSlice(svc.Name, svc.Namespace).
		WithLabels(labels).
		WithOwnerReferences(metav1ac.OwnerReference().WithAPIVersion("v1").WithKind("Service").
			WithName(svc.Name).WithUID(svc.UID).WithController(true)).
		WithAddressType(family)
	if e.Pod == "" {
		return slice
	}
	var pod *corev1.Pod
	for _, p := range s.pods {
		if p != nil && p.Name == e.Pod {
			pod = p
		}
	}
	ep := discoveryv1ac.Endpoint().
		WithAddresses(e.IP).
		WithConditions(discoveryv1ac.EndpointConditions().WithReady(true).WithServing(true).WithTerminating(false)).
		WithTargetRef(corev1ac.ObjectReference().WithKind("Pod").WithNamespace(svc.Namespace).WithName(e.Pod).
			WithUID(types.UID(e.UID)))
	if e.Node != "" {
		ep.WithNodeName(e.Node)
	}
	slice.WithEndpoints(ep)
	for _, sp := range svc.Spec.Ports {
		port := discoveryv1ac.EndpointPort().WithName(sp.Name).WithProtocol(sp.Protocol).
			WithPort(targetPort(sp, pod))
		slice.WithPorts(port)
	}
	return slice
}

// targetPort is the port of pod that sp sends to: its targetPort, looked up by name among the Pod's containers
// (native sidecars included) when it is a name.
func targetPort(sp corev1.ServicePort, pod *corev1.Pod) int32 {
	switch {
	case sp.TargetPort.StrVal != "" && pod != nil:
		for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
			for _, cp := range c.Ports {
				if cp.Name == sp.TargetPort.StrVal && cp.Protocol == sp.Protocol {
					return cp.ContainerPort
				}
			}
		}
	case sp.TargetPort.IntVal != 0:
		return sp.TargetPort.IntVal
	}
	return sp.Port
}

// slicePortsKey sums up the ports a slice of svc gives pod, so that a change of ports is a change of the slice.
func slicePortsKey(svc *corev1.Service, pod *corev1.Pod) string {
	var parts []string
	for _, sp := range svc.Spec.Ports {
		parts = append(parts, portKey(sp.Name, sp.Protocol, targetPort(sp, pod)))
	}
	return strings.Join(parts, ",")
}

// portKey is one port of a slice in sliceEndpoint.Ports.
func portKey(name string, protocol corev1.Protocol, port int32) string {
	return fmt.Sprintf("%s/%s/%d", name, protocol, port)
}

// currentSlice is what svc's slice names as this controller last wrote or read it, nil when there is none; a
// controller that has not seen it since it took the lead reads it from the API server.
func (r *Reconciler) currentSlice(ctx context.Context, key types.NamespacedName) (*sliceEndpoint, error) {
	r.mu.Lock()
	e, known := r.slices[key]
	r.mu.Unlock()
	if known {
		return e, nil
	}
	slice := &discoveryv1.EndpointSlice{}
	if err := r.APIReader.Get(ctx, key, slice); apierrors.IsNotFound(err) {
		r.setSlice(key, nil)
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("failed to get EndpointSlice %s: %w", key, err)
	}
	if m := slice.Labels[discoveryv1.LabelManagedBy]; m != EndpointsManager {
		// Someone else's object of the name this controller would use: never written over or deleted by name.
		return nil, fmt.Errorf("EndpointSlice %s is managed by %q, not %s: leaving it, and Service %s without "+
			"the controller's endpoints", key, m, EndpointsManager, key)
	}
	e = &sliceEndpoint{}
	if len(slice.Endpoints) == 1 && slice.Endpoints[0].TargetRef != nil && len(slice.Endpoints[0].Addresses) == 1 {
		ep := slice.Endpoints[0]
		e.Pod, e.UID, e.IP = ep.TargetRef.Name, string(ep.TargetRef.UID), ep.Addresses[0]
		if ep.NodeName != nil {
			e.Node = *ep.NodeName
		}
		var parts []string
		for _, p := range slice.Ports {
			if p.Name != nil && p.Protocol != nil && p.Port != nil {
				parts = append(parts, portKey(*p.Name, *p.Protocol, *p.Port))
			}
		}
		e.Ports = strings.Join(parts, ",")
	}
	r.setSlice(key, e)
	return e, nil
}

func (r *Reconciler) setSlice(key types.NamespacedName, e *sliceEndpoint) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.slices == nil {
		r.slices = map[types.NamespacedName]*sliceEndpoint{}
	}
	r.slices[key] = e
}

// forgetSlice makes the next pass read the slice again.
func (r *Reconciler) forgetSlice(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.slices, key)
	delete(r.selectorEraGone, key)
}

// removeSelectorEra deletes the EndpointSlices and the Endpoints that Kubernetes' endpoint controllers made for
// svc while it had a selector, once per Service and leader: they would otherwise keep naming the primary of the
// moment the selector went, beside this controller's slice.
func (r *Reconciler) removeSelectorEra(ctx context.Context, svc *corev1.Service) error {
	key := client.ObjectKeyFromObject(svc)
	r.mu.Lock()
	done := r.selectorEraGone[key] == svc.UID
	r.mu.Unlock()
	if done {
		return nil
	}
	// The Endpoints first: the mirroring controller would copy it into a slice again.
	ep := &corev1.Endpoints{} //nolint:staticcheck // the endpoints controller still writes them; they are what is cleaned up
	if err := r.APIReader.Get(ctx, key, ep); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to get Endpoints %s: %w", key, err)
	} else if err == nil && ep.Labels[endpointsManagedBy] == kubeEndpointsManager {
		if err := r.deleteExact(ctx, ep); err != nil {
			return fmt.Errorf("failed to delete Endpoints %s left from its selector: %w", key, err)
		}
	}
	var list discoveryv1.EndpointSliceList
	if err := r.APIReader.List(ctx, &list, client.InNamespace(svc.Namespace),
		client.MatchingLabels{discoveryv1.LabelServiceName: svc.Name}); err != nil {
		return fmt.Errorf("failed to list the EndpointSlices of Service %s: %w", key, err)
	}
	for i := range list.Items {
		sl := &list.Items[i]
		if !slices.Contains(selectorEraSliceManagers, sl.Labels[discoveryv1.LabelManagedBy]) {
			continue
		}
		if err := r.deleteExact(ctx, sl); err != nil {
			return fmt.Errorf("failed to delete EndpointSlice %s/%s left from Service %s's selector: %w",
				sl.Namespace, sl.Name, key, err)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.selectorEraGone == nil {
		r.selectorEraGone = map[types.NamespacedName]types.UID{}
	}
	r.selectorEraGone[key] = svc.UID
	return nil
}

// deleteExact deletes obj as it was read (its UID and resourceVersion), so that nothing written since is lost.
func (r *Reconciler) deleteExact(ctx context.Context, obj client.Object) error {
	if err := r.lease.Check(); err != nil {
		return err
	}
	uid, rv := obj.GetUID(), obj.GetResourceVersion()
	err := r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err // a conflict: changed since it was read; the next pass reads it again
}

// serviceRequests maps a Service to the set it belongs to (the StatefulSet named by its instance label).
func serviceRequests(_ context.Context, obj client.Object) []reconcile.Request {
	set := obj.GetLabels()[v1alpha1.InstanceLabel]
	if set == "" || !slices.Contains(primaryServiceNames(set), obj.GetName()) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: set}}}
}
