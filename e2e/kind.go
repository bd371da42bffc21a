//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/onsi/ginkgo/v2"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	mfcli "github.com/mysqlfleet/mysqlfleet/internal/cli"
	"github.com/mysqlfleet/mysqlfleet/test/kindfleet"
	"github.com/mysqlfleet/mysqlfleet/test/localfleet"
)

// kindPrefix names the suite's kind clusters (e2e-hub, e2e-aws-eu-west-1, ...), apart from those of make kind-up.
const kindPrefix = "e2e-"

// managerLease is the manager's leader election Lease (the chart's default).
const managerLease = "mysqlfleet-manager"

// memberNamespace is where join installs the member controller in a member.
const memberNamespace = mfcli.MemberNamespace

// kindProvider runs the fleet of clusters/ as kind clusters (test/kindfleet) with the images of make
// kind-images, and the manager as the chart's Deployment. The suite's clusters are created fresh and deleted at
// the end; E2E_KIND_KEEP=1 keeps them for a look (the next run replaces them). E2E_KIND_MEMBERS=N starts only
// the first N members of clusters/ (CI runs the real-Pods specs on one, which place on every member there is;
// the local fleet's specs expect all three).
type kindProvider struct {
	root   string
	images kindfleet.Images
	// members is how many members of clusters/ to start; 0: all.
	members int
	fleet   *kindfleet.Fleet
	hubCS   kubernetes.Interface
}

func newKindProvider() (*kindProvider, error) {
	root, err := filepath.Abs("..")
	if err != nil {
		return nil, err
	}
	images, err := kindfleet.ReadImages(filepath.Join(root, "hack", "kind", "images.env"))
	if err != nil {
		return nil, err
	}
	p := &kindProvider{root: root, images: images}
	if v := os.Getenv("E2E_KIND_MEMBERS"); v != "" {
		if p.members, err = strconv.Atoi(v); err != nil || p.members < 1 {
			return nil, fmt.Errorf("E2E_KIND_MEMBERS must be a number of members, at least 1, not %q", v)
		}
	}
	return p, nil
}

func (p *kindProvider) Name() string { return "kind" }

func (p *kindProvider) options() kindfleet.Options {
	return kindfleet.Options{Root: p.root, Dir: filepath.Join(p.root, ".kind"), Prefix: kindPrefix, Images: p.images,
		Members: p.members, Log: ginkgo.GinkgoWriter}
}

func (p *kindProvider) Up(ctx context.Context) (*Cluster, []*Cluster, error) {
	// A kept fleet of an earlier run holds its registrations and databases: start from clean clusters.
	if err := kindfleet.Down(p.options()); err != nil {
		return nil, nil, err
	}
	f, err := kindfleet.Up(ctx, p.options())
	p.fleet = f
	if err != nil {
		return nil, nil, err
	}
	wrap := func(c *kindfleet.Cluster) *Cluster {
		return &Cluster{Definition: c.Definition, Config: c.Config, KubeconfigPath: c.KubeconfigPath, MemberKubeconfig: c.InternalKubeconfig}
	}
	var members []*Cluster
	for _, m := range f.Members {
		members = append(members, wrap(m))
	}
	if p.hubCS, err = kubernetes.NewForConfig(f.Hub.Config); err != nil {
		return nil, nil, err
	}
	return wrap(f.Hub), members, nil
}

// Database is MariaDB: make kind-images builds its image from Debian's packages. Where a registry is reachable,
// E2E_DATABASE=MySQL:8.4 runs the official MySQL image instead.
func (p *kindProvider) Database() (v1alpha1.Engine, string) {
	if engine, version, ok := strings.Cut(os.Getenv("E2E_DATABASE"), ":"); ok {
		return v1alpha1.Engine(engine), version
	}
	return v1alpha1.EngineMariaDB, strings.TrimPrefix(p.images.Database, "mariadb:")
}

func (p *kindProvider) Capabilities() []Capability {
	return []Capability{RealPods, Replication, Backup}
}

// Join runs `mysqlfleet join`, which installs the member controller from the manager image loaded into the
// member, and waits until both of its replicas run: the replication and backup specs need it.
func (p *kindProvider) Join(ctx context.Context, m *Cluster, cli string) error {
	km := p.fleet.Member(m.Name)
	if km == nil {
		return fmt.Errorf("no member %q", m.Name)
	}
	if err := p.fleet.Join(ctx, cli, km, ginkgo.GinkgoWriter); err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(km.Config)
	if err != nil {
		return err
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(memberNamespace).Get(ctx, mfcli.MemberControllerName, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = rollout(d)
		return last == "", nil
	})
	if err != nil {
		return fmt.Errorf("the member controller of %s does not run: %s: %w", m.Name, last, err)
	}
	return nil
}

func (p *kindProvider) InstallManager(ctx context.Context, chartDir, _ string) error {
	repo, tag, _ := strings.Cut(p.images.Manager, ":")
	values := map[string]any{
		"image":                map[string]any{"repository": repo, "tag": tag, "pullPolicy": "IfNotPresent"},
		"replicas":             2,
		"leaderElection":       map[string]any{"leaseDuration": "4s", "renewDeadline": "3s", "retryPeriod": "500ms"},
		"memberHealthInterval": "1s",
		"memberTimeout":        "5s",
		"deletionTimeout":      "20s",
	}
	if err := localfleet.InstallChart(p.fleet.Hub.KubeconfigPath, chartDir, namespace, release, values); err != nil {
		return err
	}
	// Both replicas running, and one of them leading.
	return wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		d, err := p.hubCS.AppsV1().Deployments(namespace).Get(ctx, release, metav1.GetOptions{})
		if err != nil || ptr.Deref(d.Spec.Replicas, 1) != 2 || rollout(d) != "" {
			return false, nil
		}
		rs, err := p.Managers(ctx)
		if err != nil {
			return false, nil
		}
		for _, r := range rs {
			if r.IsLeader(ctx) {
				return true, nil
			}
		}
		return false, nil
	})
}

func (p *kindProvider) Managers(ctx context.Context) ([]ManagerReplica, error) {
	pods, err := p.hubCS.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{
		LabelSelector: "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/component=manager"})
	if err != nil {
		return nil, err
	}
	var out []ManagerReplica
	for _, pod := range pods.Items {
		out = append(out, podReplica{cs: p.hubCS, name: pod.Name})
	}
	return out, nil
}

func (p *kindProvider) StopAPIServer(member string) error {
	return p.fleet.StopAPIServer(context.Background(), member)
}

func (p *kindProvider) StartAPIServer(member string) error {
	return p.fleet.StartAPIServer(context.Background(), member)
}

func (p *kindProvider) Down() error {
	if os.Getenv("E2E_KIND_KEEP") == "1" {
		_, _ = fmt.Fprintf(ginkgo.GinkgoWriter, "E2E_KIND_KEEP=1: keeping the kind clusters %s*; kubeconfigs in %s\n",
			kindPrefix, filepath.Join(p.root, ".kind"))
		return nil
	}
	return kindfleet.Down(p.options())
}

// rollout says what a Deployment's rollout still waits for, "" once done: its controller has seen the latest
// spec and every replica it asks for runs that spec and is ready, none of an older one left.
func rollout(d *appsv1.Deployment) string {
	want := ptr.Deref(d.Spec.Replicas, 1)
	if d.Status.ObservedGeneration != d.Generation || d.Status.UpdatedReplicas != want || d.Status.ReadyReplicas != want ||
		d.Status.Replicas != want {
		return fmt.Sprintf("generation %d observed %d; %d of %d replicas updated, %d ready, %d in all", d.Generation,
			d.Status.ObservedGeneration, d.Status.UpdatedReplicas, want, d.Status.ReadyReplicas, d.Status.Replicas)
	}
	return ""
}

// podReplica is a manager replica as a Pod of the chart's Deployment.
type podReplica struct {
	cs   kubernetes.Interface
	name string
}

func (r podReplica) Name() string { return r.name }

func (r podReplica) Running(ctx context.Context) bool {
	pod, err := r.cs.CoreV1().Pods(namespace).Get(ctx, r.name, metav1.GetOptions{})
	return err == nil && pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning
}

// IsLeader reads the Lease: controller-runtime's identity is the hostname, which in a Pod is its name, then "_"
// and a UUID.
func (r podReplica) IsLeader(ctx context.Context) bool {
	l, err := r.cs.CoordinationV1().Leases(namespace).Get(ctx, managerLease, metav1.GetOptions{})
	return err == nil && l.Spec.HolderIdentity != nil && strings.HasPrefix(*l.Spec.HolderIdentity, r.name+"_") &&
		r.Running(ctx)
}

// Kill deletes the Pod with no grace period: the container is killed and the Lease is not released.
func (r podReplica) Kill(ctx context.Context) error {
	err := r.cs.CoreV1().Pods(namespace).Delete(ctx, r.name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (r podReplica) Log(ctx context.Context) string {
	b, err := r.cs.CoreV1().Pods(namespace).GetLogs(r.name, &corev1.PodLogOptions{Container: "manager", TailLines: ptr.To[int64](300)}).DoRaw(ctx)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	return string(b)
}
