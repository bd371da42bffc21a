package provisioner_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/mysqlfleet/mysqlfleet/clusters"
	"github.com/mysqlfleet/mysqlfleet/test/provisioner"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

// The cases share one fleet member with kube-controller-manager, whose persistent-volume controller binds claims
// to the volumes made here and releases the volumes when their claims go. Each case runs a provisioner of a
// provisioner name of its own, so that the member's own provisioner and the other cases' objects are none of its
// business.
func TestProvisioner(t *testing.T) {
	_, members, err := clusters.Fleet()
	if err != nil {
		t.Fatal(err)
	}
	m := testfleet.ForTest(t, testfleet.Options{Members: members[:1], Workloads: true}).Members[0]
	cs := m.Clientset()
	ctx := context.Background()

	// First, while no earlier case's objects still change: here nothing but the retry may make another pass.
	t.Run("a failed sync is retried though nothing else changes", func(t *testing.T) {
		g := newG(t)
		const prov = "retry.test.mysqlfleet.io"
		createClass(g, cs, "retry", prov, corev1.PersistentVolumeReclaimDelete)
		// The claim's creation and the controller's annotation of it make two passes; five refusals need more.
		rec := run(t, m, provisioner.Config{Provisioners: []string{prov}, BaseDir: "/var/lib/testfleet"}, 5)
		createNamespace(g, cs, "retry")
		createClaim(g, cs, "retry", "data", "retry")
		boundVolume(g, cs, "retry", "data")
		g.Expect(rec.refused.Load()).To(Equal(int32(5)))
	})

	t.Run("local volumes are made, grown and removed with their directories", func(t *testing.T) {
		g := newG(t)
		const prov = "local.test.mysqlfleet.io"
		base := t.TempDir()
		createClass(g, cs, "local-delete", prov, corev1.PersistentVolumeReclaimDelete)
		createClass(g, cs, "local-retain", prov, corev1.PersistentVolumeReclaimRetain)
		createClass(g, cs, "elsewhere", "elsewhere.test.mysqlfleet.io", corev1.PersistentVolumeReclaimDelete)
		rec := run(t, m, provisioner.Config{Provisioners: []string{prov}, Node: testfleet.FakeNodeName, BaseDir: base}, 0)
		createNamespace(g, cs, "local")

		// Claims that are not its business go first, so that the pass that serves a later claim has seen them.
		createClaim(g, cs, "local", "foreign", "elsewhere")
		createClaim(g, cs, "local", "other-node", "local-delete", selectedNode("another-node"))
		createClaim(g, cs, "local", "unscheduled", "local-delete")
		createClaim(g, cs, "local", "kept", "local-retain", selectedNode(testfleet.FakeNodeName))
		createClaim(g, cs, "local", "data", "local-delete", selectedNode(testfleet.FakeNodeName))
		data := boundVolume(g, cs, "local", "data")
		kept := boundVolume(g, cs, "local", "kept")
		for _, name := range []string{"foreign", "other-node", "unscheduled"} {
			pvc, err := cs.CoreV1().PersistentVolumeClaims("local").Get(ctx, name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimPending), name)
			_, err = cs.CoreV1().PersistentVolumes().Get(ctx, "pvc-"+string(pvc.UID), metav1.GetOptions{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no volume for %s: %v", name, err)
		}

		g.Expect(data.Spec.Local).NotTo(BeNil())
		dir := data.Spec.Local.Path
		g.Expect(dir).To(Equal(filepath.Join(base, data.Name)))
		g.Expect(data.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values).To(Equal([]string{testfleet.FakeNodeName}))
		g.Expect(data.Spec.PersistentVolumeReclaimPolicy).To(Equal(corev1.PersistentVolumeReclaimDelete))
		g.Expect(data.Annotations).To(HaveKeyWithValue(provisioner.ProvisionedByAnnotation, prov))
		fi, err := os.Stat(dir)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(fi.IsDir()).To(BeTrue())
		g.Expect(fi.Mode().Perm()).To(Equal(os.FileMode(0o777)), "usable by a Pod without fsGroup")
		g.Expect(kept.Spec.PersistentVolumeReclaimPolicy).To(Equal(corev1.PersistentVolumeReclaimRetain))

		// Growth: the volume first, then the claim's status, as a CSI resizer reports it.
		pvc, err := cs.CoreV1().PersistentVolumeClaims("local").Get(ctx, "data", metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		_, err = cs.CoreV1().PersistentVolumeClaims("local").Update(ctx, pvc, metav1.UpdateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Eventually(func(g Gomega) {
			pv, err := cs.CoreV1().PersistentVolumes().Get(ctx, data.Name, metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pv.Spec.Capacity.Storage().String()).To(Equal("2Gi"))
			pvc, err := cs.CoreV1().PersistentVolumeClaims("local").Get(ctx, "data", metav1.GetOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pvc.Status.Capacity.Storage().String()).To(Equal("2Gi"))
		}).Should(Succeed())

		// Release: the Retain volume first, so that the pass that deletes the other has seen it released.
		g.Expect(cs.CoreV1().PersistentVolumeClaims("local").Delete(ctx, "kept", metav1.DeleteOptions{})).To(Succeed())
		g.Eventually(func() corev1.PersistentVolumePhase { return volumePhase(cs, kept.Name) }).Should(Equal(corev1.VolumeReleased))
		g.Expect(cs.CoreV1().PersistentVolumeClaims("local").Delete(ctx, "data", metav1.DeleteOptions{})).To(Succeed())
		g.Eventually(func() corev1.PersistentVolumePhase { return volumePhase(cs, data.Name) }).Should(BeEmpty(), "deleted")
		g.Expect(dir).NotTo(BeAnExistingFile())
		g.Expect(volumePhase(cs, kept.Name)).To(Equal(corev1.VolumeReleased))
		g.Expect(kept.Spec.Local.Path).To(BeADirectory())

		// Many passes ran (every step above is several events); each write was made once.
		g.Expect(rec.writes.Load()).To(Equal(int32(5)), "two volumes made, one grown with its claim's status, one deleted")
	})

	t.Run("released volumes outside the base directory or on another node are left alone", func(t *testing.T) {
		g := newG(t)
		const prov = "stray.test.mysqlfleet.io"
		base, outside := t.TempDir(), t.TempDir()
		createClass(g, cs, "stray", prov, corev1.PersistentVolumeReclaimDelete)
		run(t, m, provisioner.Config{Provisioners: []string{prov}, Node: testfleet.FakeNodeName, BaseDir: base}, 0)
		// A volume that names this provisioner, with reclaim policy Delete, whose claim is gone.
		stray := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "stray", Annotations: map[string]string{provisioner.ProvisionedByAnnotation: prov}},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
				StorageClassName:              "stray",
				ClaimRef:                      &corev1.ObjectReference{Namespace: "stray", Name: "gone", UID: "00000000-0000-0000-0000-000000000001"},
				PersistentVolumeSource:        corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: outside}},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchExpressions: []corev1.NodeSelectorRequirement{{
						Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{testfleet.FakeNodeName},
					}},
				}}}},
			},
		}
		_, err := cs.CoreV1().PersistentVolumes().Create(ctx, stray, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { _ = cs.CoreV1().PersistentVolumes().Delete(ctx, stray.Name, metav1.DeleteOptions{}) })
		g.Eventually(func() corev1.PersistentVolumePhase { return volumePhase(cs, stray.Name) }).Should(Equal(corev1.VolumeReleased))
		// And a released volume of this provisioner's base directory on another node: that node's to delete.
		elsewhere := stray.DeepCopy()
		elsewhere.Name = "on-another-node"
		elsewhere.Spec.Local.Path = filepath.Join(base, elsewhere.Name)
		g.Expect(os.Mkdir(elsewhere.Spec.Local.Path, 0o700)).To(Succeed())
		elsewhere.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values = []string{"another-node"}
		_, err = cs.CoreV1().PersistentVolumes().Create(ctx, elsewhere, metav1.CreateOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		t.Cleanup(func() { _ = cs.CoreV1().PersistentVolumes().Delete(ctx, elsewhere.Name, metav1.DeleteOptions{}) })
		g.Eventually(func() corev1.PersistentVolumePhase { return volumePhase(cs, elsewhere.Name) }).Should(Equal(corev1.VolumeReleased))

		// The pass that serves a claim made after the release has seen the released volumes.
		createNamespace(g, cs, "stray")
		createClaim(g, cs, "stray", "data", "stray", selectedNode(testfleet.FakeNodeName))
		boundVolume(g, cs, "stray", "data")
		g.Expect(volumePhase(cs, stray.Name)).To(Equal(corev1.VolumeReleased))
		g.Expect(outside).To(BeADirectory())
		g.Expect(volumePhase(cs, elsewhere.Name)).To(Equal(corev1.VolumeReleased))
		g.Expect(elsewhere.Spec.Local.Path).To(BeADirectory())
	})

	t.Run("hostPath volumes are bookkeeping: nothing is made on disk", func(t *testing.T) {
		g := newG(t)
		const prov = "bookkeeping.test.mysqlfleet.io"
		base := filepath.Join(t.TempDir(), "volumes")
		createClass(g, cs, "bookkeeping", prov, corev1.PersistentVolumeReclaimDelete)
		rec := run(t, m, provisioner.Config{Provisioners: []string{prov}, BaseDir: base}, 0)
		createNamespace(g, cs, "bookkeeping")
		createClaim(g, cs, "bookkeeping", "data", "bookkeeping")
		pv := boundVolume(g, cs, "bookkeeping", "data")
		g.Expect(pv.Spec.HostPath).NotTo(BeNil())
		g.Expect(pv.Spec.HostPath.Path).To(Equal(filepath.Join(base, pv.Name)))
		g.Expect(pv.Spec.NodeAffinity).To(BeNil())
		g.Expect(base).NotTo(BeAnExistingFile())

		g.Expect(cs.CoreV1().PersistentVolumeClaims("bookkeeping").Delete(ctx, "data", metav1.DeleteOptions{})).To(Succeed())
		g.Eventually(func() corev1.PersistentVolumePhase { return volumePhase(cs, pv.Name) }).Should(BeEmpty(), "deleted")
		g.Expect(rec.writes.Load()).To(Equal(int32(2)), "made once, deleted once")
	})
}

func newG(t *testing.T) *WithT {
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(time.Minute)
	g.SetDefaultEventuallyPollingInterval(200 * time.Millisecond)
	return g
}

// recorder is the provisioner's transport: it counts the writes that succeed and refuses the first few volume
// creates.
type recorder struct {
	next    http.RoundTripper
	refuse  atomic.Int32
	refused atomic.Int32
	writes  atomic.Int32
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/persistentvolumes") && r.refuse.Add(-1) >= 0 {
		r.refused.Add(1)
		return nil, errors.New("refused by the test")
	}
	resp, err := r.next.RoundTrip(req)
	if err == nil && req.Method != http.MethodGet && resp.StatusCode < 300 {
		r.writes.Add(1)
	}
	return resp, err
}

// run runs a provisioner of cfg in member m until the test ends, its first refuse volume creates failing.
func run(t *testing.T, m *testfleet.Cluster, cfg provisioner.Config, refuse int32) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.refuse.Store(refuse)
	rc := rest.CopyConfig(m.Config)
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		rec.next = rt
		return rec
	})
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	p, err := provisioner.New(cs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return rec
}

func createClass(g *WithT, cs kubernetes.Interface, name, prov string, reclaim corev1.PersistentVolumeReclaimPolicy) {
	sc := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: name},
		Provisioner:          prov,
		ReclaimPolicy:        &reclaim,
		AllowVolumeExpansion: ptr.To(true),
		VolumeBindingMode:    ptr.To(storagev1.VolumeBindingImmediate),
	}
	_, err := cs.StorageV1().StorageClasses().Create(context.Background(), sc, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
}

func createNamespace(g *WithT, cs kubernetes.Interface, name string) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	_, err := cs.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
}

// createClaim creates a claim of 1Gi.
func createClaim(g *WithT, cs kubernetes.Interface, ns, name, class string, opts ...func(*corev1.PersistentVolumeClaim)) {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			StorageClassName: &class,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceStorage: resource.MustParse("1Gi"),
			}},
		},
	}
	for _, o := range opts {
		o(pvc)
	}
	_, err := cs.CoreV1().PersistentVolumeClaims(ns).Create(context.Background(), pvc, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
}

// selectedNode marks a claim as the scheduler does for a class that binds on first consumer.
func selectedNode(node string) func(*corev1.PersistentVolumeClaim) {
	return func(pvc *corev1.PersistentVolumeClaim) {
		pvc.Annotations = map[string]string{provisioner.SelectedNodeAnnotation: node}
	}
}

// boundVolume waits until the claim is bound and returns its volume.
func boundVolume(g *WithT, cs kubernetes.Interface, ns, name string) *corev1.PersistentVolume {
	ctx := context.Background()
	var pv *corev1.PersistentVolume
	g.Eventually(func(g Gomega) {
		pvc, err := cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
		pv, err = cs.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
	}).Should(Succeed(), "claim %s/%s bound", ns, name)
	return pv
}

// volumePhase is the phase of a volume, empty once it is gone.
func volumePhase(cs kubernetes.Interface, name string) corev1.PersistentVolumePhase {
	pv, err := cs.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		return "unknown: " + corev1.PersistentVolumePhase(err.Error())
	}
	return pv.Status.Phase
}
