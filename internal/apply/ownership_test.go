package apply

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

func pvcOf(uid, owner string) *corev1.PersistentVolumeClaim {
	p := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-db-0", UID: types.UID("pvc-" + uid)}}
	if owner != "" {
		p.Labels = map[string]string{v1alpha1.ClusterUIDLabel: owner}
	}
	return p
}

func TestClaimDecidesByUIDOnly(t *testing.T) {
	tests := []struct {
		name     string
		owner    string
		adopt    map[string]bool
		conflict bool
		adopted  bool
	}{
		{name: "own", owner: "me"},
		{name: "predecessor", owner: "old", conflict: true},
		{name: "hand made", owner: "", conflict: true},
		{name: "predecessor adopted by its UID", owner: "old", adopt: map[string]bool{"old": true}, adopted: true},
		{name: "hand made adopted by its own UID", owner: "", adopt: map[string]bool{"pvc-1": true}, adopted: true},
		{name: "an empty owner is never adopted by an empty UID", owner: "", adopt: map[string]bool{"": true}, conflict: true},
		{name: "another UID adopts nothing", owner: "old", adopt: map[string]bool{"other": true}, conflict: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			from, err := Claim(pvcOf("1", tt.owner), "PersistentVolumeClaim", "me", tt.adopt)
			if tt.conflict {
				var ce *ConflictError
				g.Expect(errors.As(err, &ce)).To(BeTrue())
				g.Expect(ce.Ref).To(Equal(v1alpha1.ObjectRef{Kind: "PersistentVolumeClaim", Name: "data-db-0", UID: "pvc-1", OwnerUID: tt.owner}))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(from != nil).To(Equal(tt.adopted))
		})
	}
}

func TestConflictsInFindsEveryConflictOfAJoinedTree(t *testing.T) {
	g := NewWithT(t)
	a := &ConflictError{Ref: v1alpha1.ObjectRef{Kind: "Service", Name: "db"}}
	b := &ConflictError{Ref: v1alpha1.ObjectRef{Kind: "PersistentVolumeClaim", Name: "data-db-0"}}
	other := errors.New("boom")
	err := errors.Join(fmt.Errorf("failed to apply Service db: %w", a), errors.Join(other, b))
	conflicts, others := SplitConflicts(err)
	g.Expect(conflicts).To(ConsistOf(a.Ref, b.Ref))
	g.Expect(others).To(ConsistOf(other))
	conflicts, others = SplitConflicts(fmt.Errorf("pass: %w", other))
	g.Expect(conflicts).To(BeEmpty())
	g.Expect(others).To(ConsistOf(MatchError("pass: boom")), "an error keeps its wrapping")
}
