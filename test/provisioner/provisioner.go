// Package provisioner stands in for a cloud's CSI driver (with its external-provisioner and external-resizer
// sidecars) in the clusters mysqlfleet is tested on. For every pending claim of a StorageClass whose provisioner
// it serves, it makes a PersistentVolume bound to the claim; when a bound claim grows, it records the new size on
// the volume and then on the claim, as a CSI resizer reports it; and it deletes released volumes whose reclaim
// policy is Delete. It writes only when something changed, so that an idle fleet makes no writes.
//
// It serves two kinds of cluster:
//   - test fleets (test/testfleet): real API servers whose nodes are kwok's fakes, where no Pod runs. The
//     volumes are hostPath bookkeeping; nothing is made on disk.
//   - kind members (hack/kind/provisioner, a DaemonSet: one provisioner on each node): the volumes are `local`
//     volumes in directories made under a base directory and pinned to the node. Each provisioner serves only
//     the claims the scheduler placed on its node (classes bind on first consumer) and deletes only its node's
//     volumes, as a node-local CSI driver does. `local` rather than hostPath
//     because kubelet applies a Pod's fsGroup to local volumes, which the database Pods (uid 999) need.
//
// It is ours rather than rancher's local-path-provisioner because the Go module proxy, the project's only source,
// does not serve that.
package provisioner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

const (
	// ProvisionedByAnnotation names, on a volume, the provisioner of the class it was made for; a volume without
	// one of ours is never deleted.
	ProvisionedByAnnotation = "pv.kubernetes.io/provisioned-by"
	// SelectedNodeAnnotation is set on a claim by the scheduler when its class binds on first consumer.
	SelectedNodeAnnotation = "volume.kubernetes.io/selected-node"
)

// Config says which classes a provisioner serves and where their volumes live.
type Config struct {
	// Provisioners are the provisioner names of the StorageClasses served (a cloud's CSI driver name such as
	// ebs.csi.aws.com); claims of other classes are left alone.
	Provisioners []string
	// Node, when set, is the node the volumes live on: each is a `local` volume in a directory made under BaseDir,
	// with node affinity to Node; a claim whose selected node is another is left to that node, and one not yet
	// placed on a node waits for the scheduler (its class must bind on first consumer). Empty: the
	// volumes are hostPath volumes under BaseDir that nothing makes on disk, for clusters of fake nodes.
	Node string
	// BaseDir is the absolute directory of the volumes; with Node set, the same path on the node and in this
	// process.
	BaseDir string
}

// local tells whether the volumes are directories on a real node.
func (c Config) local() bool { return c.Node != "" }

// Provisioner serves the classes of one cluster. Make it with New and start it with Run.
type Provisioner struct {
	cs      kubernetes.Interface
	cfg     Config
	names   sets.Set[string]
	factory informers.SharedInformerFactory
	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
	classes storagelisters.StorageClassLister
	// queue holds at most one item, syncKey: every change of a claim, volume or class asks for one pass over
	// everything (clusters under test hold few volumes), and a failed pass is retried with backoff even when
	// nothing else changes, as a directory that could not be made or removed changes nothing in the API.
	queue workqueue.TypedRateLimitingInterface[string]
}

const syncKey = "sync"

// New makes a provisioner of cfg for the cluster of cs.
func New(cs kubernetes.Interface, cfg Config) (*Provisioner, error) {
	if len(cfg.Provisioners) == 0 {
		return nil, errors.New("provisioner: no provisioner names to serve")
	}
	if !filepath.IsAbs(cfg.BaseDir) {
		return nil, fmt.Errorf("provisioner: base directory %q is not absolute", cfg.BaseDir)
	}
	cfg.BaseDir = filepath.Clean(cfg.BaseDir)
	p := &Provisioner{
		cs:      cs,
		cfg:     cfg,
		names:   sets.New(cfg.Provisioners...),
		factory: informers.NewSharedInformerFactory(cs, 0),
		queue: workqueue.NewTypedRateLimitingQueue(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 5*time.Second)),
	}
	enqueue := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { p.queue.Add(syncKey) },
		UpdateFunc: func(any, any) { p.queue.Add(syncKey) },
		DeleteFunc: func(any) { p.queue.Add(syncKey) },
	}
	claims := p.factory.Core().V1().PersistentVolumeClaims()
	volumes := p.factory.Core().V1().PersistentVolumes()
	classes := p.factory.Storage().V1().StorageClasses()
	for _, inf := range []cache.SharedIndexInformer{claims.Informer(), volumes.Informer(), classes.Informer()} {
		if _, err := inf.AddEventHandler(enqueue); err != nil {
			return nil, fmt.Errorf("provisioner: %w", err)
		}
	}
	p.claims, p.volumes, p.classes = claims.Lister(), volumes.Lister(), classes.Lister()
	return p, nil
}

// Run serves until ctx is done. It logs with the logger of ctx.
func (p *Provisioner) Run(ctx context.Context) {
	log := klog.FromContext(ctx)
	defer p.queue.ShutDown()
	p.factory.Start(ctx.Done())
	defer p.factory.Shutdown()
	p.factory.WaitForCacheSync(ctx.Done())
	go func() {
		<-ctx.Done()
		p.queue.ShutDown()
	}()
	p.queue.Add(syncKey)
	for {
		key, shutdown := p.queue.Get()
		if shutdown {
			return
		}
		if err := p.sync(ctx); err != nil {
			if ctx.Err() == nil {
				log.Error(err, "Sync failed; retrying")
			}
			p.queue.AddRateLimited(key)
		} else {
			p.queue.Forget(key)
		}
		p.queue.Done(key)
	}
}

// sync makes the volumes of pending claims, grows those of grown claims and deletes released ones, going on
// past a failure so that one bad claim holds up no other.
func (p *Provisioner) sync(ctx context.Context) error {
	claims, err := p.claims.List(labels.Everything())
	if err != nil {
		return err
	}
	var errs []error
	for _, pvc := range claims {
		if err := p.syncClaim(ctx, pvc); err != nil {
			errs = append(errs, fmt.Errorf("claim %s/%s: %w", pvc.Namespace, pvc.Name, err))
		}
	}
	volumes, err := p.volumes.List(labels.Everything())
	if err != nil {
		return err
	}
	for _, pv := range volumes {
		if !p.names.Has(pv.Annotations[ProvisionedByAnnotation]) || pv.DeletionTimestamp != nil ||
			pv.Status.Phase != corev1.VolumeReleased || pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete ||
			(p.cfg.local() && !pinnedTo(pv, p.cfg.Node)) {
			continue
		}
		if err := p.delete(ctx, pv); err != nil {
			errs = append(errs, fmt.Errorf("volume %s: %w", pv.Name, err))
		}
	}
	return errors.Join(errs...)
}

func (p *Provisioner) syncClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	if pvc.DeletionTimestamp != nil || pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName == "" {
		return nil
	}
	if p.cfg.local() && pvc.Annotations[SelectedNodeAnnotation] != p.cfg.Node {
		return nil
	}
	sc, err := p.classes.Get(*pvc.Spec.StorageClassName)
	if apierrors.IsNotFound(err) {
		return nil // served once the class appears, which is an event
	}
	if err != nil {
		return err
	}
	if !p.names.Has(sc.Provisioner) {
		return nil
	}
	want := volumeFor(p.cfg, sc, pvc)
	pv, err := p.volumes.Get(want.Name)
	switch {
	case apierrors.IsNotFound(err):
		if pvc.Spec.VolumeName != "" {
			// Bound already: to a volume someone else made, or to ours not yet in the cache. A CSI driver never
			// provisions a bound claim either.
			return nil
		}
		return p.create(ctx, pvc, want)
	case err != nil:
		return err
	}
	return p.expand(ctx, pvc, pv)
}

func (p *Provisioner) create(ctx context.Context, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) error {
	if p.cfg.local() {
		dir := pv.Spec.Local.Path
		// World-writable, as local-path-provisioner makes them (Chmod, since MkdirAll obeys the umask): a Pod
		// without fsGroup can use the volume too.
		if err := os.MkdirAll(dir, 0o777); err != nil {
			return err
		}
		if err := os.Chmod(dir, 0o777); err != nil {
			return err
		}
	}
	_, err := p.cs.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil // made by an earlier pass, not yet in the cache
	}
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Provisioned volume", "pv", klog.KObj(pv), "claim", klog.KObj(pvc), "class", pv.Spec.StorageClassName)
	return nil
}

// expand grows the volume of a claim that grew, then reports the new size on the claim once it is bound, as the
// CSI resizer does (a directory has no size to grow, so this is bookkeeping).
func (p *Provisioner) expand(ctx context.Context, pvc *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) error {
	want := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if have := pv.Spec.Capacity[corev1.ResourceStorage]; have.Cmp(want) < 0 {
		pv = pv.DeepCopy()
		pv.Spec.Capacity[corev1.ResourceStorage] = want
		_, err := p.cs.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return nil // the cache is behind; the newer volume is an event on its way
		}
		if err != nil {
			return err
		}
		klog.FromContext(ctx).Info("Expanded volume", "pv", klog.KObj(pv), "size", want.String())
	}
	if pvc.Status.Phase != corev1.ClaimBound {
		return nil
	}
	if have := pvc.Status.Capacity[corev1.ResourceStorage]; have.Cmp(want) >= 0 {
		return nil
	}
	pvc = pvc.DeepCopy()
	pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: want}
	pvc.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: want}
	pvc.Status.AllocatedResourceStatuses = nil
	_, err := p.cs.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) {
		return nil // as above
	}
	return err
}

// delete removes a released volume, and first its directory when it is a local one of this node.
func (p *Provisioner) delete(ctx context.Context, pv *corev1.PersistentVolume) error {
	if p.cfg.local() && pv.Spec.Local != nil {
		dir := filepath.Clean(pv.Spec.Local.Path)
		// Only a directory this provisioner makes: a volume of another origin (or a malformed path) must not
		// make it remove anything else of the node.
		if filepath.Dir(dir) != p.cfg.BaseDir {
			return fmt.Errorf("refusing to remove %s: not a directory of %s", dir, p.cfg.BaseDir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	// Preconditions: only the released volume seen here. A pass working from a cache that has not yet seen an
	// earlier pass's delete then deletes nothing a second time.
	err := p.cs.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &pv.UID, ResourceVersion: &pv.ResourceVersion},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or changed since: the change is an event on its way
	}
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Deleted volume", "pv", klog.KObj(pv))
	return nil
}
