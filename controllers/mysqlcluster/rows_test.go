package mysqlcluster

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
)

// An owner's rows take their members' places among the rows as read, new ones at the end; nothing else moves,
// and the rows as read are not changed.
func TestMergeRows(t *testing.T) {
	row := func(name string, phase v1alpha1.Phase) v1alpha1.MemberStatus {
		return v1alpha1.MemberStatus{Name: name, Phase: phase}
	}
	g := NewWithT(t)
	read := []v1alpha1.MemberStatus{row("a", v1alpha1.PhaseProgressing), row("b", v1alpha1.PhaseProgressing)}
	g.Expect(mergeRows(read, []v1alpha1.MemberStatus{row("c", v1alpha1.PhaseReady), row("a", v1alpha1.PhaseReady)})).To(Equal(
		[]v1alpha1.MemberStatus{row("a", v1alpha1.PhaseReady), row("b", v1alpha1.PhaseProgressing), row("c", v1alpha1.PhaseReady)}))
	g.Expect(read[0].Phase).To(Equal(v1alpha1.PhaseProgressing), "the rows as read are the pass's before")
	g.Expect(mergeRows(nil, nil)).To(BeEmpty())
	g.Expect(rowsDiffer(&v1alpha1.MySQLClusterStatus{Members: read}, []v1alpha1.MemberStatus{row("b", v1alpha1.PhaseProgressing)})).
		To(BeFalse())
	g.Expect(rowsDiffer(&v1alpha1.MySQLClusterStatus{Members: read}, []v1alpha1.MemberStatus{row("c", "")})).To(BeTrue())
}
