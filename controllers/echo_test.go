package controllers

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

func TestEchoesDropOnlyTheManagersOwnWriteOnce(t *testing.T) {
	g := NewWithT(t)
	var e echoes
	e.record("aws", "shop", "orders", "42")
	obj := func(member, rv string) (string, *appsv1.StatefulSet) {
		return member, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "orders", ResourceVersion: rv}}
	}
	g.Expect(e.take(obj("aws", "43"))).To(BeFalse(), "a later write by someone else is a change")
	g.Expect(e.take(obj("gcp", "42"))).To(BeFalse(), "the same version in another member is another write")
	g.Expect(e.take(obj("aws", "42"))).To(BeTrue(), "the echo of our own apply")
	g.Expect(e.take(obj("aws", "42"))).To(BeFalse(), "an echo is dropped once")
	e.record("aws", "shop", "orders", "")
	g.Expect(e.written).To(BeEmpty(), "an unknown version is not remembered")
}

func TestResourceVersionOfApplyConfigurations(t *testing.T) {
	g := NewWithT(t)
	sts := appsv1ac.StatefulSet("orders", "shop")
	g.Expect(resourceVersionOf(sts)).To(BeEmpty())
	sts.WithResourceVersion("7")
	g.Expect(resourceVersionOf(sts)).To(Equal("7"))
	g.Expect(resourceVersionOf(corev1ac.Namespace("shop").WithResourceVersion("9"))).To(Equal("9"))
	g.Expect(resourceVersionOf(&appsv1ac.StatefulSetApplyConfiguration{})).To(BeEmpty())
	g.Expect(resourceVersionOf("not an apply configuration")).To(BeEmpty())
}
