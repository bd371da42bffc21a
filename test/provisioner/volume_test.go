package provisioner

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestVolumeFor(t *testing.T) {
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "db", Name: "data-0", UID: "u1"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("5Gi")}},
		},
	}
	class := func(reclaim *corev1.PersistentVolumeReclaimPolicy) *storagev1.StorageClass {
		return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "gp3"}, Provisioner: "ebs.csi.aws.com", ReclaimPolicy: reclaim}
	}
	for _, tc := range []struct {
		name        string
		cfg         Config
		class       *storagev1.StorageClass
		wantReclaim corev1.PersistentVolumeReclaimPolicy
		wantSource  corev1.PersistentVolumeSource
		wantNode    string
	}{{
		name:        "without a node: hostPath bookkeeping, reclaim Delete when the class names none",
		cfg:         Config{BaseDir: "/var/lib/testfleet"},
		class:       class(nil),
		wantReclaim: corev1.PersistentVolumeReclaimDelete,
		wantSource:  corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/testfleet/pvc-u1"}},
	}, {
		name:        "with a node: a local volume pinned to it, reclaim from the class",
		cfg:         Config{Node: "kind-control-plane", BaseDir: "/var/local-path"},
		class:       class(ptr.To(corev1.PersistentVolumeReclaimRetain)),
		wantReclaim: corev1.PersistentVolumeReclaimRetain,
		wantSource:  corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/var/local-path/pvc-u1"}},
		wantNode:    "kind-control-plane",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			pv := volumeFor(tc.cfg, tc.class, claim)
			g.Expect(pv.Name).To(Equal("pvc-u1"))
			g.Expect(pv.Annotations).To(HaveKeyWithValue(ProvisionedByAnnotation, "ebs.csi.aws.com"))
			g.Expect(pv.Spec.StorageClassName).To(Equal("gp3"))
			g.Expect(pv.Spec.Capacity.Storage().String()).To(Equal("5Gi"))
			g.Expect(pv.Spec.AccessModes).To(Equal(claim.Spec.AccessModes))
			g.Expect(pv.Spec.ClaimRef).To(Equal(&corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "db", Name: "data-0", UID: "u1",
			}))
			g.Expect(pv.Spec.PersistentVolumeReclaimPolicy).To(Equal(tc.wantReclaim))
			g.Expect(pv.Spec.PersistentVolumeSource).To(Equal(tc.wantSource))
			if tc.wantNode == "" {
				g.Expect(pv.Spec.NodeAffinity).To(BeNil())
				return
			}
			g.Expect(pv.Spec.NodeAffinity.Required.NodeSelectorTerms).To(Equal([]corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{tc.wantNode},
				}},
			}}))
		})
	}
}
