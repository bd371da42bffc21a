package apply

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// Ownership in members is by UID: an object belongs to the MySQLCluster whose UID its mysqlfleet.io/cluster-uid
// label carries. An object with a name the MySQLCluster needs but another UID, or none, is a conflict: it is not
// written over until the adopt annotation (v1alpha1.AdoptAnnotation) names its owner's UID or its own.

// ConflictError is an object in a member that this MySQLCluster needs the name of and does not own.
type ConflictError struct{ Ref v1alpha1.ObjectRef }

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s %s exists and %s", e.Ref.Kind, e.Ref.Name, ownerPhrase(e.Ref))
}

func ownerPhrase(ref v1alpha1.ObjectRef) string {
	if ref.OwnerUID == "" {
		return fmt.Sprintf("was not created by mysqlfleet (uid %s)", ref.UID)
	}
	return fmt.Sprintf("belongs to MySQLCluster uid %s", ref.OwnerUID)
}

// Claim decides whether this MySQLCluster may write to live, an object with a name it needs. It returns the
// object's former owner when adopt lets it take the object over, and a *ConflictError when the
// object is someone else's.
func Claim(live client.Object, kind string, uid types.UID, adopt map[string]bool) (*v1alpha1.ObjectRef, error) {
	owner := live.GetLabels()[v1alpha1.ClusterUIDLabel]
	if owner == string(uid) {
		return nil, nil
	}
	ref := v1alpha1.ObjectRef{Kind: kind, Name: live.GetName(), UID: string(live.GetUID()), OwnerUID: owner}
	if (owner != "" && adopt[owner]) || adopt[ref.UID] {
		return &ref, nil
	}
	return nil, &ConflictError{Ref: ref}
}

// Conflicts collects every conflict in an error tree (errors.Join nests them).
func Conflicts(err error) []v1alpha1.ObjectRef {
	var out []v1alpha1.ObjectRef
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if ce, ok := err.(*ConflictError); ok {
			out = append(out, ce.Ref)
			return
		}
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range joined.Unwrap() {
				walk(e)
			}
			return
		}
		walk(errors.Unwrap(err))
	}
	walk(err)
	return out
}

// NonConflicts returns the errors of a tree that are not conflicts.
func NonConflicts(err error) []error {
	var out []error
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range joined.Unwrap() {
				walk(e)
			}
			return
		}
		if len(Conflicts(err)) == 0 {
			out = append(out, err)
		}
	}
	walk(err)
	return out
}
