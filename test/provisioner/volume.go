package provisioner

import (
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// volumeFor is the volume that cfg makes for a claim of class sc: named after the claim's UID, as CSI
// provisioners name theirs, so that a claim recreated under the same name gets a volume of its own.
func volumeFor(cfg Config, sc *storagev1.StorageClass, pvc *corev1.PersistentVolumeClaim) *corev1.PersistentVolume {
	name := "pvc-" + string(pvc.UID)
	reclaim := corev1.PersistentVolumeReclaimDelete
	if sc.ReclaimPolicy != nil {
		reclaim = *sc.ReclaimPolicy
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{ProvisionedByAnnotation: sc.Provisioner}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]},
			AccessModes:                   pvc.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              sc.Name,
			VolumeMode:                    pvc.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID,
			},
		},
	}
	path := filepath.Join(cfg.BaseDir, name)
	if !cfg.local() {
		pv.Spec.HostPath = &corev1.HostPathVolumeSource{Path: path}
		return pv
	}
	pv.Spec.Local = &corev1.LocalVolumeSource{Path: path}
	pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{
			Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{cfg.Node},
		}},
	}}}}
	return pv
}

// pinnedTo tells whether a volume lives on node: its node affinity names node alone.
func pinnedTo(pv *corev1.PersistentVolume, node string) bool {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return false
	}
	for _, t := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		for _, e := range t.MatchExpressions {
			if e.Key == corev1.LabelHostname && e.Operator == corev1.NodeSelectorOpIn && len(e.Values) == 1 && e.Values[0] == node {
				return true
			}
		}
	}
	return false
}
