package member

import (
	"context"
	"database/sql"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/clustering"
	"github.com/mysqlfleet/mysqlfleet/internal/render"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

// misleadingTemplate makes the Pod template say MySQL and another Secret: a mysql image running mysqld, and
// MYSQL_ROOT_PASSWORD from a Secret that does not exist. A controller that read either back would speak MySQL to
// the MariaDB servers, or find no credentials.
func misleadingTemplate(o *render.Objects) {
	c := &o.StatefulSet.Spec.Template.Spec.Containers[0]
	c.Image = ptr.To("docker.io/library/mysql:8.4")
	c.Command = []string{"sh", "-c", "exec docker-entrypoint.sh mysqld"}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			e.ValueFrom.SecretKeyRef.Name = ptr.To("nowhere-credentials")
		}
	}
}

// withoutContract leaves out the contract's annotations, as a hub older than the contract wrote StatefulSets.
func withoutContract(o *render.Objects) {
	delete(o.StatefulSet.Annotations, v1alpha1.EngineAnnotation)
	delete(o.StatefulSet.Annotations, v1alpha1.CredentialsSecretAnnotation)
}

// The member controller learns a StatefulSet's engine and credentials Secret from the hub's contract alone. The
// set here runs MariaDB servers behind a Pod template that says otherwise (misleadingTemplate). Written without
// the contract, as an older hub did, it is reported Unobserved with the reason, and neither its servers nor its
// Pods' role labels are touched; once the contract is applied, as an upgraded hub applies it, the set forms.
func TestContractDecidesWhatTheMemberControllerRuns(t *testing.T) {
	servers := mysqltest.StartN(t, 2)
	addrs := make([]clustering.Address, len(servers))
	roots := make([]*sql.DB, len(servers))
	for i, s := range servers {
		initRoot(t, s)
		addrs[i] = adminOf(s)
		roots[i] = s.OpenRoot()
	}
	e := startEnv(t)
	sts := e.addSet("contract", "uid-contract", addrs, misleadingTemplate, withoutContract)
	script := e.initScript("contract")
	for _, s := range servers {
		runScript(t, s, script)
	}
	// A role label from before (the Pod's previous controller) must stay while nothing is known.
	label := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+v1alpha1.RoleLabel+`":"primary"}}}`))
	pod0 := &corev1.Pod{}
	pod0.Namespace, pod0.Name = testNS, "contract-0"
	if err := e.c.Patch(e.ctx, pod0, label); err != nil {
		t.Fatal(err)
	}

	t.Run("a StatefulSet without the contract is reported, not guessed at", func(t *testing.T) {
		g := NewWithT(t)
		g.Eventually(func() string {
			_, rep := e.report("contract")
			if rep == nil {
				return ""
			}
			return rep.Decision.Kind
		}, convergeWithin, 200*time.Millisecond).Should(Equal(kindUnobserved))
		_, rep := e.report("contract")
		for _, want := range []string{v1alpha1.EngineAnnotation, v1alpha1.CredentialsSecretAnnotation, "older"} {
			g.Expect(rep.LastError).To(ContainSubstring(want))
		}
		g.Expect(rep.Decision.Reason).To(Equal(rep.LastError))
		g.Consistently(func(g Gomega) {
			cm, rep := e.report("contract")
			g.Expect(rep.Decision.Kind).To(Equal(kindUnobserved))
			g.Expect(cm.Data[v1alpha1.ReplicationRecordKey]).NotTo(ContainSubstring(`"primary"`), "a primary recorded")
			g.Expect(e.roles(sts)).To(Equal(map[string]string{"contract-0": "primary", "contract-1": ""}))
			for i, db := range roots {
				g.Expect(readOnly(g, db)).To(BeTrue(), "server %d was made writable", i)
			}
		}, 3*time.Second, 300*time.Millisecond).Should(Succeed())
	})

	t.Run("the contract decides, whatever the Pod template says", func(t *testing.T) {
		g := NewWithT(t)
		objs := renderSet(t, "contract", "uid-contract", len(addrs))
		misleadingTemplate(objs)
		g.Expect(objs.StatefulSet.Annotations).To(HaveKeyWithValue(v1alpha1.EngineAnnotation, "MariaDB"))
		g.Expect(e.c.Apply(e.ctx, objs.StatefulSet, client.FieldOwner(v1alpha1.FieldManager),
			client.ForceOwnership)).To(Succeed())
		g.Eventually(func() error {
			_, rep := e.report("contract")
			return formed(rep, "contract-0", "contract-1")
		}, convergeWithin, 200*time.Millisecond).Should(Succeed())
		g.Eventually(func() map[string]string { return e.roles(sts) }, convergeWithin, 200*time.Millisecond).
			Should(Equal(map[string]string{"contract-0": "primary", "contract-1": "replica"}))
		g.Expect(readOnly(g, roots[0])).To(BeFalse(), "the primary is writable")
	})
}

// readOnly is a server's read_only.
func readOnly(g Gomega, db *sql.DB) bool {
	var ro bool
	g.Expect(db.QueryRowContext(context.Background(), "SELECT @@read_only").Scan(&ro)).To(Succeed())
	return ro
}
