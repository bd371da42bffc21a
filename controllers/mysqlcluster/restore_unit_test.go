package mysqlcluster

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
)

// A restore that the restore Job could only fail (it loads logical backups) is refused on the hub, with the
// reason; what the source's status does not show is left to the Job.
func TestLogicalBackupToRestore(t *testing.T) {
	rec := func(name string, m v1alpha1.BackupMethod) v1alpha1.BackupRecord {
		return v1alpha1.BackupRecord{Name: name, Time: metav1.Now(), Method: m}
	}
	src := &v1alpha1.MySQLCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders"},
		Status: v1alpha1.MySQLClusterStatus{Members: []v1alpha1.MemberStatus{
			{Name: "mixed", Backups: &v1alpha1.MemberBackups{
				LastSuccessful: ptr.To(rec("p2", v1alpha1.BackupPhysical)),
				Retained:       []v1alpha1.BackupRecord{rec("p2", v1alpha1.BackupPhysical), rec("l1", "")}}},
			{Name: "physical", Backups: &v1alpha1.MemberBackups{
				LastSuccessful: ptr.To(rec("p9", v1alpha1.BackupPhysical)),
				Retained:       []v1alpha1.BackupRecord{rec("p9", v1alpha1.BackupPhysical)}}},
			{Name: "none"},
		}}}
	for name, tt := range map[string]struct {
		member, backup string
		refused        bool
	}{
		"a named logical backup":                   {member: "mixed", backup: "l1"},
		"a logical one among physical ones":        {member: "mixed"},
		"a named physical backup":                  {member: "mixed", backup: "p2", refused: true},
		"only physical ones":                       {member: "physical", refused: true},
		"a name the status does not show":          {member: "physical", backup: "older"},
		"a member that reports nothing":            {member: "none"},
		"a physical backup of another member name": {member: "none", backup: "p9"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			err := logicalBackupToRestore(src, tt.member, tt.backup)
			if !tt.refused {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(errors.Is(err, render.ErrInvalid)).To(BeTrue(), "a spec error: %v", err)
			g.Expect(err).To(MatchError(ContainSubstring("physical")))
		})
	}
}
