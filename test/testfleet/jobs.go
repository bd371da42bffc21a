package testfleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// A member's fake kubelet (kwok) runs no container: it marks Pods Running and, for Jobs, Succeeded. mysqlfleet's
// backup, restore and seed Jobs are different: what they do (a dump, a restore) and what they report (the runner's
// termination message) is the point. So in a fleet with workloads, kwok leaves those Pods running (the stage
// that completes Job Pods skips them), and the jobs runner here plays their kubelet: it runs the Pod's
// container command, the backup runner mysqlfleet-backup built from this module, as a local process, with the
// Pod's environment (values, Secret and field references, envFrom Secrets) and volumes (each PVC a local
// directory), then writes the Pod's status as a kubelet would: Succeeded or Failed, with the container's exit
// code and termination message.
//
// Two seams stand for the Pod network, which loopback processes do not have: a Service name or a Pod's DNS name
// in MYSQL_HOST (or a seed's SEED_TARGET_HOST) becomes a Pod (through the Service's EndpointSlices, as kube-proxy routes), and a Pod becomes
// an address through PodAddress (default: its IP on port 3306, which on kwok nobody serves, as is true there).

// jobComponents are the app.kubernetes.io/component values of the Pods the jobs runner runs: the hub's backup
// and restore Jobs, and the member controller's seed Jobs.
var jobComponents = []string{"backup", "restore", "seed"}

// hostVariables are the variables of a runner's environment that name database servers.
var hostVariables = []string{"MYSQL_HOST", "SEED_TARGET_HOST"}

// runnerPath is where the Pods expect the backup runner (render.RunnerPath; testfleet does not import render).
const runnerPath = "/mysqlfleet/mysqlfleet-backup"

// PodAddress says where a Pod's database server is reached, as host:port.
type PodAddress func(pod *corev1.Pod) (string, error)

type jobsRunner struct {
	cs      kubernetes.Interface
	dir     string
	binary  func() (string, error)
	mu      sync.Mutex
	address PodAddress
	started map[string]bool
}

// SetPodAddresses sets where the member's database Pods are served (dbpods.Servers.Address, say) for the
// backup, restore and seed Jobs the fleet runs.
func (c *Cluster) SetPodAddresses(a PodAddress) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.jobs != nil {
		c.jobs.mu.Lock()
		c.jobs.address = a
		c.jobs.mu.Unlock()
	}
}

func (r *jobsRunner) podAddress(pod *corev1.Pod) (string, error) {
	r.mu.Lock()
	a := r.address
	r.mu.Unlock()
	if a != nil {
		return a(pod)
	}
	if pod.Status.PodIP == "" {
		return "", fmt.Errorf("pod %s has no IP", pod.Name)
	}
	return net.JoinHostPort(pod.Status.PodIP, "3306"), nil
}

func (r *jobsRunner) run(ctx context.Context) {
	sel := "app.kubernetes.io/managed-by=mysqlfleet,app.kubernetes.io/component in (" + strings.Join(jobComponents, ",") + ")"
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		pods, err := r.cs.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return
		}
		for i := range pods.Items {
			p := pods.Items[i]
			if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
				continue
			}
			r.mu.Lock()
			seen := r.started[string(p.UID)]
			r.started[string(p.UID)] = true
			r.mu.Unlock()
			if !seen {
				go r.runPod(ctx, &p)
			}
		}
	}, 200*time.Millisecond)
}

// runPod runs one Pod's container and records its end.
func (r *jobsRunner) runPod(ctx context.Context, pod *corev1.Pod) {
	var ctr *corev1.Container
	for i := range pod.Spec.Containers {
		if len(pod.Spec.Containers[i].Command) > 0 && pod.Spec.Containers[i].Command[0] == runnerPath {
			ctr = &pod.Spec.Containers[i]
		}
	}
	exit, message := 1, ""
	if ctr == nil {
		message = "testfleet: the Pod runs no " + runnerPath
	} else {
		exit, message = r.runContainer(ctx, pod, ctr)
	}
	phase := corev1.PodSucceeded
	reason := "Completed"
	if exit != 0 {
		phase, reason = corev1.PodFailed, "Error"
	}
	now := metav1.Now()
	name := "backup"
	if ctr != nil {
		name = ctr.Name
	}
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		live, err := r.cs.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, nil
		}
		live.Status.Phase = phase
		live.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name: name, Image: pod.Spec.Containers[0].Image, Ready: false,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: int32(exit), Reason: reason, Message: message, StartedAt: now, FinishedAt: now}},
		}}
		for i := range live.Status.Conditions {
			if live.Status.Conditions[i].Type == corev1.PodReady || live.Status.Conditions[i].Type == corev1.ContainersReady {
				live.Status.Conditions[i].Status = corev1.ConditionFalse
			}
		}
		_, err = r.cs.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, live, metav1.UpdateOptions{})
		return err == nil, nil
	})
}

// runContainer runs the container's command with its environment and volumes; it returns the exit code and
// the termination message (the report file, or the output's tail when there is none).
func (r *jobsRunner) runContainer(ctx context.Context, pod *corev1.Pod, ctr *corev1.Container) (int, string) {
	bin, err := r.binary()
	if err != nil {
		return 1, err.Error()
	}
	work, err := os.MkdirTemp(r.dir, "job-")
	if err != nil {
		return 1, err.Error()
	}
	defer func() { _ = os.RemoveAll(work) }()
	env, err := r.environment(ctx, pod, ctr)
	if err != nil {
		return 1, err.Error()
	}
	// Volumes: a PVC is a directory of its own per member and claim, kept across Jobs as a volume is.
	for _, m := range ctr.VolumeMounts {
		for _, v := range pod.Spec.Volumes {
			if v.Name == m.Name && v.PersistentVolumeClaim != nil {
				dir := filepath.Join(r.dir, "volumes", pod.Namespace, v.PersistentVolumeClaim.ClaimName)
				if err := os.MkdirAll(dir, 0o700); err != nil {
					return 1, err.Error()
				}
				env = replaceValue(env, m.MountPath, dir)
			}
		}
	}
	report := filepath.Join(work, "termination-log")
	env = replaceValue(env, corev1.TerminationMessagePathDefault, report)
	env = append(env, "TMPDIR="+work, "PATH=/usr/bin:/bin:/usr/sbin:/sbin")
	cmd := exec.CommandContext(ctx, bin, append(ctr.Command[1:], ctr.Args...)...)
	cmd.Env = env
	cmd.Dir = work
	out, runErr := cmd.CombinedOutput()
	exit := 0
	if runErr != nil {
		exit = 1
		var ee *exec.ExitError
		if errors.As(runErr, &ee) {
			exit = ee.ExitCode()
		}
	}
	msg, _ := os.ReadFile(report)
	if len(msg) == 0 {
		msg = out[max(0, len(out)-2048):]
	}
	return exit, string(msg)
}

// environment resolves the container's variables as a kubelet does, and puts the addresses of the database
// Pods that MYSQL_HOST names in place of their names.
func (r *jobsRunner) environment(ctx context.Context, pod *corev1.Pod, ctr *corev1.Container) ([]string, error) {
	vars := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := vars[k]; !ok {
			order = append(order, k)
		}
		vars[k] = v
	}
	secrets := map[string]*corev1.Secret{}
	secret := func(name string) (*corev1.Secret, error) {
		if s, ok := secrets[name]; ok {
			return s, nil
		}
		s, err := r.cs.CoreV1().Secrets(pod.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("secret %s: %w", name, err)
		}
		secrets[name] = s
		return s, nil
	}
	for _, from := range ctr.EnvFrom {
		if from.SecretRef == nil {
			continue
		}
		s, err := secret(from.SecretRef.Name)
		if err != nil {
			return nil, err
		}
		keys := make([]string, 0, len(s.Data))
		for k := range s.Data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			set(from.Prefix+k, string(s.Data[k]))
		}
	}
	for _, e := range ctr.Env {
		switch {
		case e.ValueFrom == nil:
			set(e.Name, e.Value)
		case e.ValueFrom.SecretKeyRef != nil:
			s, err := secret(e.ValueFrom.SecretKeyRef.Name)
			if err != nil {
				return nil, err
			}
			set(e.Name, string(s.Data[e.ValueFrom.SecretKeyRef.Key]))
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			set(e.Name, pod.Namespace)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name":
			set(e.Name, pod.Name)
		}
	}
	for _, v := range hostVariables {
		if hosts := vars[v]; hosts != "" {
			vars[v] = r.addresses(ctx, pod.Namespace, hosts)
		}
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+vars[k])
	}
	return out, nil
}

// addresses resolves a comma-separated list of names a Pod would resolve in namespace ns into the addresses of
// the database Pods they lead to.
func (r *jobsRunner) addresses(ctx context.Context, ns, hosts string) string {
	var addrs []string
	for _, h := range strings.Split(hosts, ",") {
		// A name resolves once its Pod or endpoint exists; a Pod's DNS name may be looked up before the
		// server behind it starts, and the runner waits for the server, not for the name: give the name a
		// moment here, then let it lead nowhere, as an unresolved name would.
		name := strings.TrimSpace(h)
		a, err := r.resolve(ctx, ns, name)
		if err != nil && strings.Contains(name, ".") { // a Pod's name; a Service's endpoints are what they are
			err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, false,
				func(ctx context.Context) (bool, error) {
					var err error
					a, err = r.resolve(ctx, ns, name)
					return err == nil, nil
				})
		}
		if err != nil {
			a = name + ".unresolved.invalid"
		}
		addrs = append(addrs, a)
	}
	return strings.Join(addrs, ",")
}

// resolve turns a name a Pod would resolve in its namespace (a Service, or <pod>.<headless Service>) into the
// address of the database Pod it leads to.
func (r *jobsRunner) resolve(ctx context.Context, ns, host string) (string, error) {
	var podName string
	if name, _, ok := strings.Cut(host, "."); ok {
		podName = name
	} else {
		slices, err := r.cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{
			LabelSelector: discoveryv1.LabelServiceName + "=" + host})
		if err != nil {
			return "", err
		}
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.TargetRef != nil && (e.Conditions.Ready == nil || *e.Conditions.Ready) {
					podName = e.TargetRef.Name
					break
				}
			}
		}
		if podName == "" {
			return "", fmt.Errorf("service %s has no ready endpoint", host)
		}
	}
	pod, err := r.cs.CoreV1().Pods(ns).Get(ctx, podName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return r.podAddress(pod)
}

func replaceValue(env []string, old, now string) []string {
	for i, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if v == old {
			env[i] = k + "=" + now
		}
	}
	return env
}

// runnerBinary builds mysqlfleet-backup from this module into dir, once.
func runnerBinary(dir string) func() (string, error) {
	var once sync.Once
	var path string
	var err error
	return func() (string, error) {
		once.Do(func() {
			root, rerr := ModuleRoot()
			if rerr != nil {
				err = rerr
				return
			}
			path = filepath.Join(dir, "mysqlfleet-backup")
			cmd := exec.Command("go", "build", "-o", path, "./cmd/backup")
			cmd.Dir = root
			if out, berr := cmd.CombinedOutput(); berr != nil {
				err = fmt.Errorf("testfleet: failed to build the backup runner: %v\n%s", berr, out)
			}
		})
		return path, err
	}
}

// kwokStages writes kwok's stage definitions with one change: the stage that completes the Pods of Jobs skips
// mysqlfleet's backup and restore Pods, which the jobs runner runs.
func kwokStages(bin, dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(bin, "kwok-stages.yaml"))
	if err != nil {
		return "", err
	}
	docs := strings.Split(string(b), "\n---")
	found := false
	for i, d := range docs {
		if !strings.Contains(d, "name: pod-complete") {
			continue
		}
		const anchor = "    matchExpressions:\n"
		if !strings.Contains(d, anchor) {
			return "", errors.New("testfleet: kwok's pod-complete stage has no matchExpressions")
		}
		quoted, _ := json.Marshal(jobComponents)
		docs[i] = strings.Replace(d, anchor, anchor+
			"    - key: '.metadata.labels[\"app.kubernetes.io/component\"]'\n"+
			"      operator: 'NotIn'\n"+
			"      values: "+string(quoted)+"\n", 1)
		found = true
	}
	if !found {
		return "", errors.New("testfleet: kwok's stages have no pod-complete stage")
	}
	out := filepath.Join(dir, "kwok-stages.yaml")
	return out, os.WriteFile(out, []byte(strings.Join(docs, "\n---")), 0o600)
}
