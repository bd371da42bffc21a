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

// memberCacheOptions shape a member's cache: only objects mysqlfleet manages, only in the namespaces the member
// allows (all when none are named), and trimmed of what the manager never reads.
func memberCacheOptions(namespaces []string) cache.Options {
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

// trimForCache drops, before a member object enters the cache, what the manager never reads: the managedFields
// entries of every other field manager (the StatefulSet and PVC controllers, kubectl, people), and kubectl's
// last-applied-configuration annotation. mysqlfleet's own apply entry stays: the applier extracts the fields
// mysqlfleet owns from it to tell a no-op apply from a needed one. controller-runtime's
// cache.TransformStripManagedFields would drop that entry too, and every apply would then look like a change.
func trimForCache(in any) (any, error) {
	obj, err := meta.Accessor(in)
	if err != nil {
		return in, nil // not an object (a tombstone): nothing to trim
	}
	if fields := obj.GetManagedFields(); len(fields) > 0 {
		var kept []metav1.ManagedFieldsEntry
		for _, f := range fields {
			if ownApplyEntry(f) {
				kept = append(kept, f)
			}
		}
		if len(kept) != len(fields) {
			obj.SetManagedFields(kept)
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

// ownApplyEntry is the managedFields entry of mysqlfleet's server-side applies to the object itself (not to a
// subresource such as status).
func ownApplyEntry(f metav1.ManagedFieldsEntry) bool {
	return f.Manager == v1alpha1.FieldManager && f.Operation == metav1.ManagedFieldsOperationApply && f.Subresource == ""
}
