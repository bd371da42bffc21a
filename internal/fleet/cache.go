package fleet

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// lastAppliedAnnotation is where kubectl's client-side apply keeps a second copy of an object.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// MemberCacheOptions shape a member's cache: only objects mysqlfleet manages, only in the namespaces the member
// allows (all when none are named), and trimmed of what the manager never reads.
func MemberCacheOptions(namespaces []string) cache.Options {
	o := cache.Options{
		// Only objects mysqlfleet manages are cached, so memory does not grow with what else runs in members.
		DefaultLabelSelector: labels.SelectorFromSet(labels.Set{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}),
		DefaultTransform:     trimForCache,
	}
	// A member that allows only some namespaces (mysqlfleet join --namespaces) is watched there only: its
	// credential may not list the namespaced kinds cluster-wide.
	if len(namespaces) > 0 {
		o.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			o.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return o
}

// trimForCache drops, before a member object enters the cache, what the manager never reads from the cache: the
// fields of other field managers' managedFields entries (who wrote and when stay) and kubectl's
// last-applied-configuration annotation, a second copy of the object. mysqlfleet's own apply entry stays whole:
// with the others' times it is how the applier checks a version it has not verified yet (written by someone else
// since, or first seen after a restart or by a replica that took the member over) without a request.
func trimForCache(in any) (any, error) {
	obj, err := meta.Accessor(in)
	if err != nil {
		return in, nil // not an object (a tombstone): nothing to trim
	}
	// The other entries keep who wrote and when, not which fields: the applier's check of an object it has not
	// verified yet asks whether anyone wrote it after mysqlfleet's create or last apply.
	if fields := obj.GetManagedFields(); fields != nil {
		trimmed := false
		for i := range fields {
			f := &fields[i]
			if f.FieldsV1 != nil && (f.Manager != v1alpha1.FieldManager || f.Operation != metav1.ManagedFieldsOperationApply || f.Subresource != "") {
				f.FieldsV1, trimmed = nil, true
			}
		}
		if trimmed {
			obj.SetManagedFields(fields)
		}
	}
	if a := obj.GetAnnotations(); a != nil {
		if _, ok := a[lastAppliedAnnotation]; ok {
			delete(a, lastAppliedAnnotation)
			obj.SetAnnotations(a)
		}
	}
	return in, nil
}
