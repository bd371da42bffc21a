// Command local-path-provisioner provisions the cloud-named StorageClasses of a kind cluster of the fleet
// (gp3, managed-csi, pd-ssd, ...) as local volumes on the cluster's single node: for every pending claim of a
// class whose provisioner it serves, it makes a directory under --base-dir and a `local` PersistentVolume bound to
// the claim, pinned to its node; it grows a volume when its claim grows (a directory has no size to grow, so this
// is bookkeeping, as a CSI resizer reports it); and it deletes the directory and the volume when a released volume's
// policy is Delete. It is the kind tier's stand-in for rancher's local-path-provisioner, which the Go module proxy
// does not serve; `local` volumes rather than hostPath because kubelet applies a Pod's fsGroup to them, which the
// database Pods (uid 999) need.
//
// It runs as a Deployment in each member (hack/kind deploys it), with the node's --base-dir mounted at the same
// path.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

const (
	provisionedByAnnotation = "pv.kubernetes.io/provisioned-by"
	selectedNodeAnnotation  = "volume.kubernetes.io/selected-node"
)

type provisioner struct {
	cs      kubernetes.Interface
	names   map[string]bool
	node    string
	baseDir string
	pvcs    corelisters.PersistentVolumeClaimLister
	pvs     corelisters.PersistentVolumeLister
	classes storagelisters.StorageClassLister
	kick    chan struct{}
}

func main() {
	var names, node, baseDir string
	flag.StringVar(&names, "provisioner", "", "comma-separated provisioner names of the StorageClasses to serve")
	flag.StringVar(&node, "node-name", os.Getenv("NODE_NAME"), "the node the volumes are made on (default $NODE_NAME)")
	flag.StringVar(&baseDir, "base-dir", "/var/local-path", "directory for the volumes, the same path on the node and here")
	klog.InitFlags(nil)
	flag.Parse()
	if names == "" || node == "" {
		klog.Error("--provisioner and --node-name are required")
		os.Exit(2)
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		klog.ErrorS(err, "No in-cluster configuration")
		os.Exit(1)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		klog.ErrorS(err, "No client")
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	p := &provisioner{cs: cs, names: map[string]bool{}, node: node, baseDir: baseDir, kick: make(chan struct{}, 1)}
	for _, n := range strings.Split(names, ",") {
		p.names[strings.TrimSpace(n)] = true
	}
	factory := informers.NewSharedInformerFactory(cs, 10*time.Minute)
	poke := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.poke() },
		UpdateFunc: func(any, any) { p.poke() },
		DeleteFunc: func(any) { p.poke() },
	}
	for _, inf := range []cache.SharedIndexInformer{
		factory.Core().V1().PersistentVolumeClaims().Informer(),
		factory.Core().V1().PersistentVolumes().Informer(),
		factory.Storage().V1().StorageClasses().Informer(),
	} {
		if _, err := inf.AddEventHandler(poke); err != nil {
			klog.ErrorS(err, "Cannot watch")
			os.Exit(1)
		}
	}
	p.pvcs = factory.Core().V1().PersistentVolumeClaims().Lister()
	p.pvs = factory.Core().V1().PersistentVolumes().Lister()
	p.classes = factory.Storage().V1().StorageClasses().Lister()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	factory.WaitForCacheSync(ctx.Done())
	klog.InfoS("Serving", "provisioners", names, "node", node, "baseDir", baseDir)
	p.poke()
	retry := time.NewTicker(5 * time.Second)
	defer retry.Stop()
	failed := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-retry.C:
			if !failed {
				continue
			}
		}
		err := p.sync(ctx)
		failed = err != nil
		if failed && ctx.Err() == nil {
			klog.ErrorS(err, "Sync failed; retrying")
		}
	}
}

func (p *provisioner) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// ours tells whether a claim's class is one this provisioner serves.
func (p *provisioner) ours(className *string) (bool, error) {
	if className == nil || *className == "" {
		return false, nil
	}
	sc, err := p.classes.Get(*className)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return p.names[sc.Provisioner], nil
}

func (p *provisioner) sync(ctx context.Context) error {
	claims, err := p.pvcs.List(labels.Everything())
	if err != nil {
		return err
	}
	var errs []error
	for _, pvc := range claims {
		ok, err := p.ours(pvc.Spec.StorageClassName)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok || pvc.DeletionTimestamp != nil {
			continue
		}
		if n := pvc.Annotations[selectedNodeAnnotation]; n != "" && n != p.node {
			continue // another node's (this provisioner serves a single-node cluster)
		}
		if err := p.syncClaim(ctx, pvc); err != nil {
			errs = append(errs, fmt.Errorf("claim %s/%s: %w", pvc.Namespace, pvc.Name, err))
		}
	}
	volumes, err := p.pvs.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, pv := range volumes {
		if !p.names[pv.Annotations[provisionedByAnnotation]] || pv.Status.Phase != corev1.VolumeReleased ||
			pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete {
			continue
		}
		if err := p.delete(ctx, pv); err != nil {
			errs = append(errs, fmt.Errorf("volume %s: %w", pv.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (p *provisioner) syncClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	want := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	name := "pvc-" + string(pvc.UID)
	pv, err := p.pvs.Get(name)
	switch {
	case apierrors.IsNotFound(err):
		if pvc.Spec.VolumeName != "" {
			return nil // bound to a volume someone else made
		}
		return p.create(ctx, pvc, name)
	case err != nil:
		return err
	}
	// Expansion: record the new size on the volume, then on the claim, as a CSI resizer does.
	if have := pv.Spec.Capacity[corev1.ResourceStorage]; have.Cmp(want) < 0 {
		pv = pv.DeepCopy()
		pv.Spec.Capacity[corev1.ResourceStorage] = want
		if _, err := p.cs.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return err
		}
		klog.InfoS("Expanded volume", "pv", pv.Name, "size", want.String())
	}
	if pvc.Status.Phase == corev1.ClaimBound {
		if have := pvc.Status.Capacity[corev1.ResourceStorage]; have.Cmp(want) < 0 {
			pvc = pvc.DeepCopy()
			pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: want}
			pvc.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: want}
			pvc.Status.AllocatedResourceStatuses = nil
			if _, err := p.cs.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *provisioner) create(ctx context.Context, pvc *corev1.PersistentVolumeClaim, name string) error {
	sc, err := p.classes.Get(*pvc.Spec.StorageClassName)
	if err != nil {
		return err
	}
	dir := filepath.Join(p.baseDir, name)
	// World-writable, as local-path-provisioner makes them: a Pod without fsGroup can use the volume too.
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		return err
	}
	reclaim := corev1.PersistentVolumeReclaimDelete
	if sc.ReclaimPolicy != nil {
		reclaim = *sc.ReclaimPolicy
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{provisionedByAnnotation: sc.Provisioner}},
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
			PersistentVolumeSource: corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: dir}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{
					Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{p.node},
				}},
			}}}},
		},
	}
	if _, err := p.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	klog.InfoS("Provisioned volume", "pv", name, "claim", klog.KObj(pvc), "class", sc.Name)
	return nil
}

func (p *provisioner) delete(ctx context.Context, pv *corev1.PersistentVolume) error {
	if pv.Spec.Local != nil {
		path := filepath.Clean(pv.Spec.Local.Path)
		if filepath.Dir(path) != filepath.Clean(p.baseDir) {
			return fmt.Errorf("refusing to remove %s: not under %s", path, p.baseDir)
		}
		if err := os.RemoveAll(path); err != nil {
			return err
		}
	}
	if err := p.cs.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	klog.InfoS("Deleted volume", "pv", pv.Name)
	return nil
}
