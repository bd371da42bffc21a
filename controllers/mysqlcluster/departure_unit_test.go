package mysqlcluster

import (
	"errors"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/fleet"
	"github.com/mysqlfleet/mysqlfleet/internal/placement"
)

// TestDepartedMembers: a member has left the placement only if the placement was resolved with it registered and
// did not choose it, and it is engaged, answering and allows the namespace now. A member registered after the
// placement was resolved was not judged by it: such a member once had a placed member's objects deleted.
func TestDepartedMembers(t *testing.T) {
	member := func(name string, adjust ...func(*fleet.State)) fleet.State {
		st := fleet.State{Member: placement.Member{Name: name}, Engaged: true}
		for _, a := range adjust {
			a(&st)
		}
		return st
	}
	s := &scope{
		cluster:    &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "c"}},
		chosen:     map[string]bool{"placed": true, "waiting": true},
		registered: map[string]bool{"placed": true, "waiting": true, "left": true, "unreachable": true, "fenced": true},
	}
	now := []fleet.State{
		member("placed"),
		member("waiting"), // chosen, and this pass works elsewhere (a member change asked for another member)
		member("left"),
		member("unreachable", func(st *fleet.State) { st.Err = errors.New("no answer") }),
		member("fenced", func(st *fleet.State) { st.Namespaces = []string{"elsewhere"} }),
		member("registered-since"), // not known when the placement was resolved
	}
	var got []string
	for _, m := range departedMembers(s, now) {
		got = append(got, m.Name)
	}
	if want := []string{"left"}; !slices.Equal(got, want) {
		t.Errorf("departed members: %v, want %v", got, want)
	}
}
