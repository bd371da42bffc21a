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

// SplitConflicts parts an error tree (errors.Join nests them, fmt.Errorf wraps them) into the conflicts it
// holds and its other errors, each of those as found, with its wrapping.
func SplitConflicts(err error) (conflicts []v1alpha1.ObjectRef, others []error) {
	var walk func(error)
	walk = func(err error) {
		for e := err; e != nil; e = errors.Unwrap(e) {
			if ce, ok := e.(*ConflictError); ok {
				conflicts = append(conflicts, ce.Ref)
				return
			}
			if joined, ok := e.(interface{ Unwrap() []error }); ok {
				for _, j := range joined.Unwrap() {
					walk(j)
				}
				return
			}
		}
		if err != nil {
			others = append(others, err)
		}
	}
	walk(err)
	return conflicts, others
}
