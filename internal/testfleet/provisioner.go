package testfleet

import (
	"context"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// provisionerFor names the StorageClass provisioner after the cloud's CSI driver, so that a member looks like
// one of that cloud; the fleet's own provisioner serves them all.
func provisionerFor(cloud string) string {
	switch cloud {
	case "aws":
		return "ebs.csi.aws.com"
	case "azure":
		return "disk.csi.azure.com"
	case "gcp":
		return "pd.csi.storage.gke.io"
	}
	return "testfleet.mysqlfleet.io"
}

const provisionedByAnnotation = "pv.kubernetes.io/provisioned-by"

// provisioner does for a member what a CSI driver and its sidecars do: it creates a PersistentVolume of the
// requested size for every pending claim of its classes (kube-controller-manager then binds them), grows a bound
// volume when its claim grows, and deletes released volumes. It only writes when something changed, so an idle
// fleet stays silent.
type provisioner struct {
	cs      kubernetes.Interface
	classes map[string]bool
	pvcs    corelisters.PersistentVolumeClaimLister
	pvs     corelisters.PersistentVolumeLister
	kick    chan struct{}
	factory informers.SharedInformerFactory
}

func newProvisioner(cs kubernetes.Interface, classes []string) *provisioner {
	p := &provisioner{cs: cs, classes: map[string]bool{}, kick: make(chan struct{}, 1)}
	for _, c := range classes {
		p.classes[c] = true
	}
	p.factory = informers.NewSharedInformerFactory(cs, 0)
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.poke() },
		UpdateFunc: func(any, any) { p.poke() },
		DeleteFunc: func(any) { p.poke() },
	}
	pvcInformer := p.factory.Core().V1().PersistentVolumeClaims()
	pvInformer := p.factory.Core().V1().PersistentVolumes()
	_, _ = pvcInformer.Informer().AddEventHandler(handler)
	_, _ = pvInformer.Informer().AddEventHandler(handler)
	p.pvcs, p.pvs = pvcInformer.Lister(), pvInformer.Lister()
	return p
}

func (p *provisioner) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *provisioner) run(ctx context.Context) {
	p.factory.Start(ctx.Done())
	defer p.factory.Shutdown()
	p.factory.WaitForCacheSync(ctx.Done())
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
			if err := p.sync(ctx); err != nil && ctx.Err() == nil {
				klog.V(2).InfoS("Provisioner sync failed; retrying on the next change", "err", err)
			}
		}
	}
}

func (p *provisioner) sync(ctx context.Context) error {
	claims, err := p.pvcs.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, pvc := range claims {
		if pvc.Spec.StorageClassName == nil || !p.classes[*pvc.Spec.StorageClassName] || pvc.DeletionTimestamp != nil {
			continue
		}
		if err := p.syncClaim(ctx, pvc); err != nil {
			p.poke() // try again
			return err
		}
	}
	volumes, err := p.pvs.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, pv := range volumes {
		if pv.Annotations[provisionedByAnnotation] == "" || pv.Status.Phase != corev1.VolumeReleased ||
			pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
			continue
		}
		if err := p.cs.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

func (p *provisioner) syncClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	want := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	name := "pvc-" + string(pvc.UID)
	pv, err := p.pvs.Get(name)
	switch {
	case apierrors.IsNotFound(err):
		if pvc.Spec.VolumeName != "" && pvc.Spec.VolumeName != name {
			return nil // bound to a volume someone else made
		}
		return p.create(ctx, pvc, name)
	case err != nil:
		return err
	}
	// Expansion: grow the volume, then report the new size on the claim, as the CSI resizer does.
	if have := pv.Spec.Capacity[corev1.ResourceStorage]; have.Cmp(want) < 0 {
		pv = pv.DeepCopy()
		pv.Spec.Capacity[corev1.ResourceStorage] = want
		if _, err := p.cs.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return err
		}
	}
	if pvc.Status.Phase == corev1.ClaimBound {
		if have := pvc.Status.Capacity[corev1.ResourceStorage]; have.Cmp(want) < 0 {
			pvc = pvc.DeepCopy()
			pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: want}
			pvc.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: want}
			if _, err := p.cs.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *provisioner) create(ctx context.Context, pvc *corev1.PersistentVolumeClaim, name string) error {
	size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{provisionedByAnnotation: "testfleet"}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes:                   pvc.Spec.AccessModes,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              *pvc.Spec.StorageClassName,
			VolumeMode:                    pvc.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID,
			},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: filepath.Join("/var/lib/testfleet", name)},
			},
		},
	}
	if _, err := p.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating volume for %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	return nil
}
