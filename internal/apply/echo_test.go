package apply

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
)

func sts(rv string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders", ResourceVersion: rv}}
}

// ordersKey is the StatefulSet of sts in member aws.
var ordersKey = objectKey{"aws", "StatefulSet", "shop", "orders"}

// passed filters an event and tells whether it was passed on at once.
func passed(e *echoes, member, rv string) *bool {
	p := new(bool)
	e.filter(member, sts(rv), func() { *p = true })
	return p
}

func TestEchoAfterTheAnswerIsDroppedOnce(t *testing.T) {
	g := NewWithT(t)
	var e echoes
	e.begin(ordersKey)
	e.end(ordersKey, "42")
	g.Expect(*passed(&e, "aws", "43")).To(BeTrue(), "a later write by someone else is a change")
	g.Expect(*passed(&e, "gcp", "42")).To(BeTrue(), "the same version in another member is another write")
	g.Expect(*passed(&e, "aws", "42")).To(BeFalse(), "the echo of our own apply")
	g.Expect(*passed(&e, "aws", "42")).To(BeTrue(), "an echo is dropped once")
	g.Expect(e.inflight).To(BeEmpty())
}

func TestEchoBeforeTheAnswerIsHeld(t *testing.T) {
	g := NewWithT(t)
	var e echoes
	e.begin(ordersKey)
	ours, theirs := passed(&e, "aws", "42"), passed(&e, "aws", "41")
	g.Expect(*ours).To(BeFalse(), "held while the apply is under way")
	g.Expect(*theirs).To(BeFalse(), "held while the apply is under way")
	e.end(ordersKey, "42")
	g.Expect(*ours).To(BeFalse(), "our own version is dropped")
	g.Expect(*theirs).To(BeTrue(), "another version is passed on when the apply ends")
	g.Expect(e.written).To(BeEmpty(), "an echo already seen is not remembered")
	g.Expect(*passed(&e, "aws", "42")).To(BeTrue())
}

func TestEchoOfAFailedApplyIsPassedOn(t *testing.T) {
	g := NewWithT(t)
	var e echoes
	e.begin(ordersKey)
	held := passed(&e, "aws", "7")
	e.end(ordersKey, "")
	g.Expect(*held).To(BeTrue())
	g.Expect(e.written).To(BeEmpty())
}

func TestVerifiedHoldsForTheSameVersionAndDigestOnly(t *testing.T) {
	g := NewWithT(t)
	var v verified
	want := appsv1ac.StatefulSet("orders", "shop").WithSpec(appsv1ac.StatefulSetSpec().WithReplicas(3))
	d := digestOf(want)
	g.Expect(d).NotTo(BeZero())
	g.Expect(digestOf(appsv1ac.StatefulSet("orders", "shop").WithSpec(appsv1ac.StatefulSetSpec().WithReplicas(3)))).To(Equal(d))
	g.Expect(v.holds(ordersKey, "42", d)).To(BeFalse())
	v.set(ordersKey, "42", d)
	g.Expect(v.holds(ordersKey, "42", d)).To(BeTrue())
	g.Expect(v.holds(ordersKey, "43", d)).To(BeFalse(), "another write since")
	g.Expect(v.holds(ordersKey, "42", digestOf(want.WithSpec(appsv1ac.StatefulSetSpec().WithReplicas(5))))).To(BeFalse(), "the spec changed")
	cm := ordersKey
	cm.kind = "ConfigMap"
	g.Expect(v.holds(cm, "42", d)).To(BeFalse(), "another kind of the same name")
	v.forget(ordersKey)
	g.Expect(v.holds(ordersKey, "42", d)).To(BeFalse())
	v.set(ordersKey, "42", d)
	gcp := ordersKey
	gcp.member = "gcp"
	v.set(gcp, "42", d)
	v.forgetMember("aws")
	g.Expect(v.holds(ordersKey, "42", d)).To(BeFalse(), "aws left the registry")
	g.Expect(v.holds(gcp, "42", d)).To(BeTrue(), "other members are kept")
	v.set(ordersKey, "", d)
	g.Expect(v.holds(ordersKey, "", d)).To(BeFalse(), "no version, nothing known")
}

func TestKeyOfNamesTheKind(t *testing.T) {
	NewWithT(t).Expect(keyOf("aws", sts("1"))).To(Equal(ordersKey))
}
