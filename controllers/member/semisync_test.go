package member

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// A commit on the primary that waits out a short timeout, its only replica stopped, returns without an
// acknowledgement and leaves semi-sync asynchronous. The controller reports the count on the primary and
// re-arms it: semi-sync waits for acknowledgements again. The controller is held off the servers meanwhile (its
// credentials Secret is gone, so it cannot log in), or it would set the timeout back before the commit.
func TestAsyncCommitsAreReportedAndThePrimaryReArmed(t *testing.T) {
	g := NewWithT(t)
	e := startEnv(t)
	s := e.startSet("async", 2)
	s.waitFormed(g, 0, 1)
	s.root(0, "CREATE TABLE shop.orders (id INT PRIMARY KEY, server INT)")
	g.Expect(s.report().Instances[0].AsyncCommits).To(BeZero())

	key := types.NamespacedName{Namespace: testNS, Name: "async-credentials"}
	secret := &corev1.Secret{}
	g.Expect(e.c.Get(e.ctx, key, secret)).To(Succeed())
	g.Expect(e.c.Delete(e.ctx, secret)).To(Succeed())
	g.Eventually(func() string { return s.report().Decision.Kind }, convergeWithin, 100*time.Millisecond).
		Should(Equal(kindUnobserved))
	s.root(1, "STOP SLAVE")
	s.root(0, "SET GLOBAL rpl_semi_sync_master_timeout = 200", "INSERT INTO shop.orders VALUES (1, 0)",
		"SET GLOBAL rpl_semi_sync_master_timeout = 18446744073709551615")
	root, err := mysql.Open(mysql.MariaDBFlavor{}, s.server(0).RootDSN())
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = root.Close() }()
	semi := func() mysql.SemiSyncStatus {
		st, err := root.Status(context.Background())
		g.Expect(err).NotTo(HaveOccurred())
		return *st.SemiSync
	}
	g.Expect(semi()).To(And(HaveField("SourceActive", BeFalse()), HaveField("AsyncCommits", BeEquivalentTo(1))))

	secret.ResourceVersion, secret.UID = "", ""
	g.Expect(e.c.Create(e.ctx, secret)).To(Succeed())
	g.Eventually(func() int64 {
		if rep := s.report(); rep != nil && len(rep.Instances) > 0 {
			return rep.Instances[0].AsyncCommits
		}
		return -1
	}, convergeWithin, 100*time.Millisecond).Should(BeEquivalentTo(1))
	s.waitFormed(g, 0, 1)
	g.Expect(s.report().Instances[1].AsyncCommits).To(BeZero(), "only the primary's count is reported")
	g.Expect(semi()).To(And(HaveField("SourceActive", BeTrue()), HaveField("AsyncCommits", BeEquivalentTo(1))))
	g.Expect(s.report().Instances[0].Role).To(Equal(v1alpha1.ReplicationRolePrimary))
}
