package testfleet

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/mysqlfleet/mysqlfleet/test/provisioner"
)

// FakeNodeName is the kwok node every member schedules its Pods on.
const FakeNodeName = "kwok-node-0"

// volumeDir is where the members' volumes would be on a node; no Pod runs, so nothing is made there.
const volumeDir = "/var/lib/testfleet"

// startWorkloads makes a bare control plane run workloads: kube-controller-manager (StatefulSets make Pods and
// PVCs, CronJobs make Jobs, PVCs bind, garbage is collected), kube-scheduler, kwok with one fake node (Pods
// become Running and Ready, Jobs complete), a provisioner (test/provisioner) that serves the definition's
// StorageClasses as a CSI driver would, and the jobs runner, which runs mysqlfleet's backup and restore Jobs for
// real (jobs.go).
func (c *Cluster) startWorkloads(ctx context.Context) error {
	c.workloads = true
	if err := c.startControllers(); err != nil {
		return err
	}
	kc := c.KubeconfigPath
	stages, err := kwokStages(c.bin, c.Dir)
	if err != nil {
		return err
	}
	if err := c.run("kwok",
		"--kubeconfig="+kc, "--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
		"--config="+stages, "--server-address=",
	); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	if err := c.createFakeNode(ctx, cs); err != nil {
		return err
	}
	if err := c.createStorageClasses(ctx, cs); err != nil {
		return err
	}
	prov, err := provisioner.New(cs, provisioner.Config{Provisioners: []string{provisioner.ForCloud(c.Cloud)}, BaseDir: volumeDir})
	if err != nil {
		return err
	}
	loopCtx, cancel := context.WithCancel(context.Background())
	c.mu.Lock()
	c.cancelLoop = cancel
	c.mu.Unlock()
	c.loops.Add(1)
	go func() {
		defer c.loops.Done()
		// A fleet of hundreds of volumes would log each one; they are debug detail here.
		prov.Run(klog.NewContext(loopCtx, klog.Background().V(2)))
	}()
	jobs := &jobsRunner{cs: cs, dir: filepath.Join(c.Dir, "jobs"), binary: runnerBinary(c.Dir), started: map[string]bool{}}
	if err := os.MkdirAll(jobs.dir, 0o700); err != nil {
		return err
	}
	c.mu.Lock()
	c.jobs = jobs
	c.mu.Unlock()
	c.loops.Add(1)
	go func() {
		defer c.loops.Done()
		jobs.run(loopCtx)
	}()
	return nil
}

// controlPlaneProcesses run beside the API server and go down and come back with it; kwok stands for the
// kubelets, which outlive a control-plane outage.
var controlPlaneProcesses = []string{"kube-controller-manager", "kube-scheduler"}

// startControllers starts kube-controller-manager and kube-scheduler.
func (c *Cluster) startControllers() error {
	kc := c.KubeconfigPath
	if err := c.run("kube-controller-manager",
		"--kubeconfig="+kc, "--authentication-kubeconfig="+kc, "--authorization-kubeconfig="+kc,
		"--leader-elect=false", "--controllers=*", "--secure-port=0", "--use-service-account-credentials=false",
		"--concurrent-statefulset-syncs=10", "--node-monitor-grace-period=40s",
	); err != nil {
		return err
	}
	return c.run("kube-scheduler",
		"--kubeconfig="+kc, "--authentication-kubeconfig="+kc, "--authorization-kubeconfig="+kc,
		"--leader-elect=false", "--secure-port=0",
		// A Pod found unschedulable (its claim not bound yet) waits for an event to be retried, or 5 minutes by
		// default; an event lost while the API server restarts would outlast any test's wait. Deprecated, and
		// still the only way short of a configuration file.
		"--pod-max-in-unschedulable-pods-duration=15s",
	)
}

// stopControllers kills kube-controller-manager and kube-scheduler, as a control-plane outage does.
func (c *Cluster) stopControllers() {
	c.mu.Lock()
	var keep, kill []*exec.Cmd
	for _, p := range c.procs {
		if slices.Contains(controlPlaneProcesses, filepath.Base(p.Path)) {
			kill = append(kill, p)
		} else {
			keep = append(keep, p)
		}
	}
	c.procs = keep
	c.mu.Unlock()
	for _, p := range kill {
		_ = p.Process.Kill()
	}
}

func (c *Cluster) createFakeNode(ctx context.Context, cs kubernetes.Interface) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("500"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        FakeNodeName,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels: map[string]string{
				"kubernetes.io/hostname": FakeNodeName, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
				"type": "kwok", "topology.kubernetes.io/region": c.Region,
			},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	_, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("testfleet: fake node in %s: %w", c.Name, err)
	}
	// kwok marks the node Ready within a second or two; Pods scheduled before that would wait anyway.
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, FakeNodeName, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

func (c *Cluster) createStorageClasses(ctx context.Context, cs kubernetes.Interface) error {
	for _, d := range c.StorageClasses {
		sc := &storagev1.StorageClass{
			ObjectMeta:           metav1.ObjectMeta{Name: d.Name},
			Provisioner:          provisioner.ForCloud(c.Cloud),
			ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimDelete),
			AllowVolumeExpansion: ptr.To(true),
			VolumeBindingMode:    ptr.To(storagev1.VolumeBindingImmediate),
		}
		if d.Default {
			sc.Annotations = map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}
		}
		if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("testfleet: StorageClass %s in %s: %w", d.Name, c.Name, err)
		}
	}
	return nil
}
