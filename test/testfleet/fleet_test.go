package testfleet_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/mysqlfleet/mysqlfleet/clusters"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

func twoMembers(t *testing.T) []clusters.Definition {
	_, members, err := clusters.Fleet()
	if err != nil {
		t.Fatal(err)
	}
	return members[:2]
}

// The hub and each member are independent clusters: an object made in one is in no other, and nothing of the
// fleet is left once it stops.
func TestFleetClustersAreIndependentAndStopCleanly(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f, err := testfleet.Start(ctx, testfleet.Options{Members: twoMembers(t)})
	g.Expect(err).NotTo(HaveOccurred())
	stopped := false
	defer func() {
		if !stopped {
			_ = f.Stop()
		}
	}()

	a, b := f.Members[0], f.Members[1]
	g.Expect(a.Config.Host).NotTo(Equal(b.Config.Host))
	g.Expect(a.Config.Host).NotTo(Equal(f.Hub.Config.Host))
	g.Expect(string(a.Kubeconfig)).NotTo(ContainSubstring(f.Dir), "member kubeconfigs embed their certificates")

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "only-in-" + a.Name}}
	_, err = a.Clientset().CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = a.Clientset().CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	for _, other := range []*testfleet.Cluster{f.Hub, b} {
		_, err := other.Clientset().CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "namespace must not exist in %s, got %v", other.Name, err)
	}

	// Renice changes the priority of the hub's kube-apiserver and etcd, and of nothing else.
	own, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	g.Expect(err).NotTo(HaveOccurred())
	ownNice := 20 - own // the raw system call returns 20 - nice
	g.Expect(f.Hub.Renice(ownNice + 5)).To(Succeed())
	hubProcs, memberProcs := fleetProcesses(filepath.Join(f.Dir, f.Hub.Name)), fleetProcesses(filepath.Join(f.Dir, a.Name))
	g.Expect(hubProcs).To(HaveLen(2))
	g.Expect(memberProcs).To(HaveLen(2))
	hubThreads := threadNices(hubProcs)
	g.Expect(len(hubThreads)).To(BeNumerically(">", 2), "Go programs run several threads")
	g.Expect(hubThreads).To(HaveEach(ownNice+5), "every thread")
	g.Expect(threadNices(memberProcs)).To(HaveEach(ownNice))

	dir := f.Dir
	g.Expect(fleetProcesses(dir)).NotTo(BeEmpty())
	g.Expect(f.Stop()).To(Succeed())
	stopped = true
	g.Expect(fleetProcesses(dir)).To(BeEmpty())
	_, err = os.Stat(dir)
	g.Expect(os.IsNotExist(err)).To(BeTrue(), "fleet directory %s must be removed", dir)
}

// A member with workloads runs what mysqlfleet puts there: StatefulSet Pods become Ready on the fake node and
// their claims bind in the member's storage class; a claim that grows is expanded; a CronJob's Job completes.
func TestMemberRunsWorkloads(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := testfleet.ForTest(t, testfleet.Options{Members: twoMembers(t)[:1], Workloads: true})
	m := f.Members[0]
	cs := m.Clientset()
	class := m.StorageClasses[0].Name
	labels := map[string]string{"app": "db"}

	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To[int32](2),
			ServiceName:         "db",
			PodManagementPolicy: appsv1.ParallelPodManagement,
			Selector:            &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "mysql", Image: "mysql:8.4"}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					StorageClassName: &class,
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceStorage: resource.MustParse("1Gi"),
					}},
				},
			}},
		},
	}
	_, err := cs.AppsV1().StatefulSets("default").Create(ctx, sts, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() int32 {
		s, err := cs.AppsV1().StatefulSets("default").Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return -1
		}
		return s.Status.ReadyReplicas
	}, 90*time.Second, 500*time.Millisecond).Should(Equal(int32(2)))
	g.Eventually(func() []corev1.PersistentVolumeClaimPhase {
		list, err := cs.CoreV1().PersistentVolumeClaims("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil
		}
		var phases []corev1.PersistentVolumeClaimPhase
		for _, pvc := range list.Items {
			phases = append(phases, pvc.Status.Phase)
		}
		return phases
	}, 60*time.Second, 500*time.Millisecond).Should(Equal([]corev1.PersistentVolumeClaimPhase{corev1.ClaimBound, corev1.ClaimBound}))

	// Grow one claim: the provisioner expands the volume and reports the new capacity.
	pvc, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data-db-0", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*pvc.Spec.StorageClassName).To(Equal(class))
	pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("3Gi")
	_, err = cs.CoreV1().PersistentVolumeClaims("default").Update(ctx, pvc, metav1.UpdateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() string {
		p, err := cs.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data-db-0", metav1.GetOptions{})
		if err != nil {
			return ""
		}
		q := p.Status.Capacity[corev1.ResourceStorage]
		return q.String()
	}, 30*time.Second, 500*time.Millisecond).Should(Equal("3Gi"))

	// A CronJob makes a Job, whose Pod completes on the fake node.
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "backup", Namespace: "default"},
		Spec: batchv1.CronJobSpec{
			Schedule: "* * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "backup", Image: "mysql:8.4"}},
			}}}},
		},
	}
	_, err = cs.BatchV1().CronJobs("default").Create(ctx, cj, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	// Trigger a Job from the CronJob's template now, as `kubectl create job --from=cronjob/backup` does, instead
	// of waiting up to a minute for the schedule.
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "backup-manual", Namespace: "default"},
		Spec:       cj.Spec.JobTemplate.Spec,
	}
	_, err = cs.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() int32 {
		j, err := cs.BatchV1().Jobs("default").Get(ctx, "backup-manual", metav1.GetOptions{})
		if err != nil {
			return -1
		}
		return j.Status.Succeeded
	}, 60*time.Second, 500*time.Millisecond).Should(Equal(int32(1)))
}

// A stopped member API server comes back on the same address with its data.
func TestAPIServerRestartKeepsAddressAndData(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := testfleet.ForTest(t, testfleet.Options{Members: twoMembers(t)[:1]})
	m := f.Members[0]
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "survives"}}
	_, err := m.Clientset().CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(m.StopAPIServer()).To(Succeed())
	_, err = m.Clientset().CoreV1().Namespaces().Get(ctx, "survives", metav1.GetOptions{})
	g.Expect(err).To(HaveOccurred())
	g.Expect(m.StartAPIServer()).To(Succeed())
	_, err = m.Clientset().CoreV1().Namespaces().Get(ctx, "survives", metav1.GetOptions{})
	g.Expect(err).NotTo(HaveOccurred())
}

// fleetProcesses lists the processes whose command line names the fleet's directory, as "<pid> <command line>".
// It reads /proc itself rather than run pgrep: a pgrep that could not start (a fork refused on a loaded CI
// machine) would read as "no processes", and a test of teardown would pass or fail on it.
func fleetProcesses(dir string) []string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		panic(err)
	}
	var procs []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(raw) == 0 {
			continue // gone, or a zombie: nothing of it runs
		}
		cmdline := strings.TrimSpace(strings.ReplaceAll(string(raw), "\x00", " "))
		if strings.Contains(cmdline, dir+"/") {
			procs = append(procs, e.Name()+" "+cmdline)
		}
	}
	return procs
}

// threadNices are the nice values of every thread of processes as fleetProcesses lists them ("<pid> <command
// line>").
func threadNices(procs []string) []int {
	var out []int
	for _, p := range procs {
		pid, _, _ := strings.Cut(p, " ")
		stats, _ := filepath.Glob(filepath.Join("/proc", pid, "task", "*", "stat"))
		for _, path := range stats {
			stat, err := os.ReadFile(path)
			if err != nil {
				continue
			}
			// The fields after the command's closing parenthesis start with the state (field 3); nice is field 19.
			fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
			if n, err := strconv.Atoi(fields[16]); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// The fleet is torn down even when its owner is killed outright: the test binary re-runs itself as a child that
// starts a fleet and waits; the child is killed with SIGKILL, and the guardian must remove every process and the
// directory.
func TestFleetIsRemovedWhenOwnerIsKilled(t *testing.T) {
	if os.Getenv("TESTFLEET_CHILD") == "1" {
		f, err := testfleet.Start(context.Background(), testfleet.Options{Members: twoMembers(t)[:1], Workloads: true})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = os.Stdout.WriteString("FLEETDIR=" + f.Dir + "\n")
		time.Sleep(10 * time.Minute)
		return
	}
	g := NewWithT(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestFleetIsRemovedWhenOwnerIsKilled$", "-test.v")
	cmd.Env = append(os.Environ(), "TESTFLEET_CHILD=1")
	out, err := cmd.StdoutPipe()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cmd.Start()).To(Succeed())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var dir string
	buf := make([]byte, 4096)
	var seen strings.Builder
	deadline := time.Now().Add(2 * time.Minute)
	for dir == "" && time.Now().Before(deadline) {
		n, err := out.Read(buf)
		seen.Write(buf[:n])
		for _, l := range strings.Split(seen.String(), "\n") {
			if d, ok := strings.CutPrefix(l, "FLEETDIR="); ok && strings.HasSuffix(seen.String(), "\n") {
				dir = d
			}
		}
		if err != nil {
			break
		}
	}
	g.Expect(dir).NotTo(BeEmpty(), "child output: %s", seen.String())
	// The hub: etcd and kube-apiserver; the member: those plus kube-controller-manager, kube-scheduler and kwok.
	g.Expect(fleetProcesses(dir)).To(HaveLen(7), "child output: %s", seen.String())

	g.Expect(cmd.Process.Kill()).To(Succeed())
	g.Eventually(func() []string { return fleetProcesses(dir) }, 30*time.Second, 200*time.Millisecond).Should(BeEmpty())
	g.Eventually(func() bool { _, err := os.Stat(dir); return os.IsNotExist(err) }, 10*time.Second, 200*time.Millisecond).Should(BeTrue())
}

// A member's controllers, scheduler and kwok survive its API server's restart: workloads created afterwards run.
func TestWorkloadsSurviveAPIServerRestart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := testfleet.ForTest(t, testfleet.Options{Members: twoMembers(t)[:1], Workloads: true})
	m := f.Members[0]
	g.Expect(m.StopAPIServer()).To(Succeed())
	// The outage itself, not a wait for something: longer than the node monitor grace period (40 s), so that the
	// node goes NotReady and has to come back.
	time.Sleep(45 * time.Second)
	g.Expect(m.StartAPIServer()).To(Succeed())
	// A second start (a test's deferred clean-up after it started the server itself) starts nothing more: two
	// controller managers and schedulers would race over the same StatefulSets and Pods.
	g.Expect(m.StartAPIServer()).To(Succeed())
	g.Expect(fleetProcesses(f.Dir)).To(HaveLen(7), "every process of the fleet still runs, once")
	cs := m.Clientset()
	labels := map[string]string{"app": "after"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "after", Namespace: "default"},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "mysql:8.4"}}},
			},
		},
	}
	_, err := cs.AppsV1().StatefulSets("default").Create(ctx, sts, metav1.CreateOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() int32 {
		s, err := cs.AppsV1().StatefulSets("default").Get(ctx, "after", metav1.GetOptions{})
		if err != nil {
			return -1
		}
		return s.Status.ReadyReplicas
	}, 2*time.Minute, time.Second).Should(Equal(int32(1)))
}
