// Package kindfleet runs the fleet of clusters/ as kind clusters: one kind cluster per definition (the hub and as
// many members as asked), with the nodes its kind configuration lists (a member has workers that its database
// Pods spread over), the kind tier's images loaded into the nodes that run them by `kind load image-archive`'s
// library call, a storage provisioner on every node and each member's cloud-named StorageClasses, and kubeconfigs
// both for this machine (127.0.0.1) and for the hub's Pods (the control-plane node container's IP on kind's docker
// network).
// The pod network across a cluster's nodes is its node image's default CNI: kindnetd in kind's own images,
// mysqlfleet's agent (test/kindnet) in the project's.
//
// kind is used as it is everywhere. Only where `docker run --privileged` fails on this Docker host (see
// Adapter) are kind's node containers started through the adapter in hack/kind/adapter, and it says so.
// `make kind-up` (hack/kindfleet) and the e2e suite's kind provider both use this package.
package kindfleet

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodes"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	kindcmd "sigs.k8s.io/kind/pkg/cmd"

	"github.com/mysqlfleet/mysqlfleet/clusters"
)

// Images are what the kind tier runs. Archives are docker-archive tarballs loaded into the clusters; an empty one
// is not loaded (its image is pulled by the nodes, where a registry is reachable).
type Images struct {
	// Node is kind's node image.
	Node string
	// Manager is the manager image (repository:tag), also the member controller's and the backup runner's.
	Manager, ManagerArchive string
	// Database is the MariaDB image that MySQLClusters with engine MariaDB run (mariadb:<version>).
	Database, DatabaseArchive string
	// Provisioner serves the members' StorageClasses.
	Provisioner, ProvisionerArchive string
}

// ReadImages reads hack/kind/images.env (written by make kind-images); variables of the same names in the
// environment win, so that e.g. KIND_NODE_IMAGE=kindest/node:v1.36.3 uses a public node image.
func ReadImages(path string) (Images, error) {
	vals := map[string]string{}
	if f, err := os.Open(path); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
				vals[k] = v
			}
		}
		_ = f.Close()
		if err := sc.Err(); err != nil {
			return Images{}, err
		}
	} else if !os.IsNotExist(err) {
		return Images{}, err
	}
	get := func(k string) string {
		if v, ok := os.LookupEnv(k); ok {
			return v
		}
		return vals[k]
	}
	im := Images{
		Node:    get("KIND_NODE_IMAGE"),
		Manager: get("KIND_MANAGER_IMAGE"), ManagerArchive: get("KIND_MANAGER_ARCHIVE"),
		Database: get("KIND_MARIADB_IMAGE"), DatabaseArchive: get("KIND_MARIADB_ARCHIVE"),
		Provisioner: get("KIND_PROVISIONER_IMAGE"), ProvisionerArchive: get("KIND_PROVISIONER_ARCHIVE"),
	}
	var missing []string
	for k, v := range map[string]string{"KIND_NODE_IMAGE": im.Node, "KIND_MANAGER_IMAGE": im.Manager,
		"KIND_MARIADB_IMAGE": im.Database, "KIND_PROVISIONER_IMAGE": im.Provisioner} {
		if v == "" {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return im, fmt.Errorf("kind images not named (%s): run make kind-images, or set them in the environment", strings.Join(missing, ", "))
	}
	return im, nil
}

// Options of a fleet.
type Options struct {
	// Root is the repository root (for hack/kind/adapter).
	Root string
	// Dir receives the kubeconfigs.
	Dir string
	// Prefix is put before every kind cluster's name ("e2e-" for the e2e suite), so that a fleet of
	// `make kind-up` and the suite's never meet. Member names (as registered on the hub) stay the definitions'.
	Prefix string
	// Members is how many members to start, in the order of clusters/ (0: all).
	Members int
	Images  Images
	// Log receives progress; nil: stderr.
	Log io.Writer
}

// Cluster is one kind cluster of the fleet.
type Cluster struct {
	clusters.Definition
	// KindName is the kind cluster's name (Prefix + Name).
	KindName string
	// KubeconfigPath is an admin kubeconfig for this machine (the API server's port published on 127.0.0.1).
	KubeconfigPath string
	// Config is the same as a client configuration.
	Config *rest.Config
	// InternalKubeconfig is an admin kubeconfig whose server is the node container's IP on kind's docker
	// network: what the hub's Pods can reach.
	InternalKubeconfig []byte
	// Server is that address (https://<node IP>:6443).
	Server string
	node   nodes.Node   // the control plane
	all    []nodes.Node // every node, the control plane first
}

// Fleet is a running fleet of kind clusters.
type Fleet struct {
	Hub      *Cluster
	Members  []*Cluster
	provider *cluster.Provider
	log      io.Writer
	opts     Options
	// Adapted is true when kind's nodes were started through the adapter.
	Adapted bool
}

// Member returns the member of that definition name, or nil.
func (f *Fleet) Member(name string) *Cluster {
	for _, m := range f.Members {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// All returns the hub and the members.
func (f *Fleet) All() []*Cluster { return append([]*Cluster{f.Hub}, f.Members...) }

func (o *Options) logf(format string, args ...any) {
	w := o.Log
	if w == nil {
		w = os.Stderr
	}
	_, _ = fmt.Fprintf(w, "[kindfleet] "+format+"\n", args...)
}

// Adapter decides whether kind needs the adapter on this Docker host: it probes `docker run --privileged` with
// the node image. It returns the probe's output when it failed.
func Adapter(ctx context.Context, nodeImage string) (needed bool, probe string, err error) {
	if _, err := exec.LookPath("docker"); err != nil {
		return false, "", fmt.Errorf("the kind tier needs Docker: %w", err)
	}
	cmd := exec.CommandContext(ctx, "docker", "run", "--rm", "--privileged", "--entrypoint", "/bin/true", nodeImage)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return false, "", nil
	}
	if bytes.Contains(out, []byte("Unable to find image")) || bytes.Contains(out, []byte("No such image")) {
		return false, "", fmt.Errorf("node image %s is not present: run make kind-images (or docker pull it): %s", nodeImage, out)
	}
	return true, strings.TrimSpace(string(out)), nil
}

// useAdapter puts the adapter's docker shim first on this process's PATH: kind's library runs `docker` from PATH.
// The shim passes every call but a kind node's `docker run` through unchanged.
func useAdapter(root string) error {
	real, err := exec.LookPath("docker")
	if err != nil {
		return err
	}
	shimDir := filepath.Join(root, "hack", "kind", "adapter")
	if filepath.Dir(real) == shimDir {
		return nil // already in place
	}
	if err := os.Setenv("MYSQLFLEET_REAL_DOCKER", real); err != nil {
		return err
	}
	return os.Setenv("PATH", shimDir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// Up starts the fleet: creates each kind cluster that does not exist yet (one at a time: each kubeadm init takes
// the machine's cores), loads the images, and sets up the members' storage.
func Up(ctx context.Context, o Options) (*Fleet, error) {
	hubDef, memberDefs, err := clusters.Fleet()
	if err != nil {
		return nil, err
	}
	if o.Members > 0 && o.Members < len(memberDefs) {
		memberDefs = memberDefs[:o.Members]
	}
	if err := os.MkdirAll(o.Dir, 0o700); err != nil {
		return nil, err
	}
	f := &Fleet{opts: o, log: o.Log}
	needed, probe, err := Adapter(ctx, o.Images.Node)
	if err != nil {
		return nil, err
	}
	if needed {
		o.logf("docker run --privileged fails on this Docker host (%s):", firstLine(probe))
		o.logf("kind's node containers start through the adapter hack/kind/adapter (--cap-add ALL --cap-drop SYS_RESOURCE instead of --privileged; see docs/testing.md, kind tier)")
		if err := useAdapter(o.Root); err != nil {
			return nil, err
		}
		f.Adapted = true
	}
	raiseInotifyLimits(o)
	f.provider = cluster.NewProvider(cluster.ProviderWithDocker(), cluster.ProviderWithLogger(kindcmd.NewLogger()))
	existing, err := f.provider.List()
	if err != nil {
		return nil, err
	}
	for _, d := range append([]clusters.Definition{hubDef}, memberDefs...) {
		c, err := f.start(ctx, d, slices.Contains(existing, o.Prefix+d.Name))
		if err != nil {
			return f, err
		}
		if d.Role == clusters.RoleHub {
			f.Hub = c
		} else {
			f.Members = append(f.Members, c)
		}
	}
	if err := f.loadImages(); err != nil {
		return f, err
	}
	var wg sync.WaitGroup
	errs := make([]error, len(f.Members))
	for i, m := range f.Members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = setUpStorage(ctx, m, o.Images.Provisioner)
		}()
	}
	wg.Wait()
	return f, errors.Join(errs...)
}

// inotifyLimits are what kind's known-issues page asks of a host that runs many nodes: each node's systemd,
// kubelet and containerd take inotify instances, and with the kernel's default of 128 a fleet of eleven nodes fails
// in kubeadm with "too many open files".
var inotifyLimits = map[string]int{
	"/proc/sys/fs/inotify/max_user_instances": 512,
	"/proc/sys/fs/inotify/max_user_watches":   524288,
}

// raiseInotifyLimits raises the host's inotify limits to inotifyLimits where they are lower, and says so; it never
// lowers them. Where it may not (not root), it says what to set.
func raiseInotifyLimits(o Options) {
	for path, want := range inotifyLimits {
		raw, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		var have int
		if _, err := fmt.Sscan(string(raw), &have); err != nil || have >= want {
			continue
		}
		key := strings.ReplaceAll(strings.TrimPrefix(path, "/proc/sys/"), "/", ".")
		if err := os.WriteFile(path, []byte(fmt.Sprint(want)), 0o644); err != nil {
			o.logf("%s is %d, below the %d that a fleet of many kind nodes needs, and could not be raised (%v): sysctl -w %s=%d", key, have, want, err, key, want)
			continue
		}
		o.logf("raised %s from %d to %d for the kind nodes (as kind's known issues advise)", key, have, want)
	}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

func (f *Fleet) start(ctx context.Context, d clusters.Definition, exists bool) (*Cluster, error) {
	o := f.opts
	c := &Cluster{Definition: d, KindName: o.Prefix + d.Name, KubeconfigPath: filepath.Join(o.Dir, o.Prefix+d.Name+".kubeconfig")}
	if d.Kind == nil {
		return nil, fmt.Errorf("clusters/%s.yaml has no kind configuration", d.Name)
	}
	if !exists {
		cfg := d.Kind.DeepCopy()
		cfg.Name = c.KindName
		start := time.Now()
		o.logf("creating kind cluster %s (node image %s)", c.KindName, o.Images.Node)
		if err := f.provider.Create(c.KindName, cluster.CreateWithV1Alpha4Config(cfg),
			cluster.CreateWithNodeImage(o.Images.Node), cluster.CreateWithWaitForReady(5*time.Minute),
			cluster.CreateWithKubeconfigPath(c.KubeconfigPath+".kind"), cluster.CreateWithDisplayUsage(false),
			cluster.CreateWithDisplaySalutation(false)); err != nil {
			return nil, fmt.Errorf("creating kind cluster %s: %w", c.KindName, err)
		}
		_ = os.Remove(c.KubeconfigPath + ".kind")
		o.logf("kind cluster %s is ready after %s", c.KindName, time.Since(start).Round(time.Second))
	} else {
		o.logf("kind cluster %s exists: using it", c.KindName)
	}
	ns, err := f.provider.ListInternalNodes(c.KindName)
	if err != nil {
		return nil, err
	}
	if len(ns) != len(d.Kind.Nodes) {
		return nil, fmt.Errorf("kind cluster %s has %d nodes; clusters/%s.yaml lists %d (delete the cluster to start it anew)",
			c.KindName, len(ns), d.Name, len(d.Kind.Nodes))
	}
	cps, err := nodeutils.ControlPlaneNodes(ns)
	if err != nil || len(cps) == 0 {
		return nil, fmt.Errorf("kind cluster %s has no control-plane node: %v", c.KindName, err)
	}
	c.node = cps[0]
	c.all = append([]nodes.Node{c.node}, slices.DeleteFunc(slices.Clone(ns), func(n nodes.Node) bool { return n.String() == c.node.String() })...)
	ip, _, err := c.node.IP()
	if err != nil {
		return nil, fmt.Errorf("node IP of %s: %w", c.KindName, err)
	}
	c.Server = "https://" + ip + ":6443"
	external, err := f.provider.KubeConfig(c.KindName, false)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(c.KubeconfigPath, []byte(external), 0o600); err != nil {
		return nil, err
	}
	if c.Config, err = clientcmd.RESTConfigFromKubeConfig([]byte(external)); err != nil {
		return nil, err
	}
	raw, err := clientcmd.Load([]byte(external))
	if err != nil {
		return nil, err
	}
	for _, cl := range raw.Clusters {
		cl.Server = c.Server
	}
	if c.InternalKubeconfig, err = clientcmd.Write(*raw); err != nil {
		return nil, err
	}
	return c, nil
}

// loadImages loads each image archive into the nodes that run it, as `kind load image-archive` does: the manager
// everywhere (the member controller runs from it too), the database and the provisioner in members. In a cluster
// with workers the control plane keeps its NoSchedule taint, so only the provisioner, which tolerates it, runs
// there: the other images go to the workers alone.
func (f *Fleet) loadImages() error {
	im := f.opts.Images
	load := func(c *Cluster, archive string) error {
		if archive == "" {
			return nil
		}
		targets := c.all
		if len(c.all) > 1 && archive != im.ProvisionerArchive {
			targets = c.all[1:]
		}
		for _, n := range targets {
			start := time.Now()
			r, err := os.Open(archive)
			if err != nil {
				return err
			}
			err = nodeutils.LoadImageArchive(n, r)
			_ = r.Close()
			if err != nil {
				return fmt.Errorf("loading %s into %s: %w", archive, n, err)
			}
			f.opts.logf("loaded %s into %s in %s", filepath.Base(archive), n, time.Since(start).Round(100*time.Millisecond))
		}
		return nil
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, c := range f.All() {
		archives := []string{im.ManagerArchive}
		if c.Role == clusters.RoleMember {
			archives = append(archives, im.DatabaseArchive, im.ProvisionerArchive)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, a := range archives {
				if err := load(c, a); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Down deletes the fleet's kind clusters (those of the definitions, with the prefix) and their kubeconfigs.
func Down(o Options) error {
	defs, err := clusters.All()
	if err != nil {
		return err
	}
	p := cluster.NewProvider(cluster.ProviderWithDocker(), cluster.ProviderWithLogger(kindcmd.NewLogger()))
	existing, err := p.List()
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range defs {
		name := o.Prefix + d.Name
		if !slices.Contains(existing, name) {
			continue
		}
		o.logf("deleting kind cluster %s", name)
		if err := p.Delete(name, ""); err != nil {
			errs = append(errs, err)
		}
		_ = os.Remove(filepath.Join(o.Dir, name+".kubeconfig"))
	}
	return errors.Join(errs...)
}

// Down deletes this fleet's clusters.
func (f *Fleet) Down() error { return Down(f.opts) }

const (
	apiServerManifest = "/etc/kubernetes/manifests/kube-apiserver.yaml"
	apiServerStopped  = "/etc/kubernetes/kube-apiserver.yaml.stopped"
)

// StopAPIServer makes a member's API server go away, as a control plane that fails: its static Pod manifest is
// moved out of kubelet's manifest directory, and this returns once the server no longer answers.
func (f *Fleet) StopAPIServer(ctx context.Context, name string) error {
	m := f.Member(name)
	if m == nil {
		return fmt.Errorf("no member %q", name)
	}
	if err := m.node.CommandContext(ctx, "mv", apiServerManifest, apiServerStopped).Run(); err != nil {
		return fmt.Errorf("stopping the API server of %s: %w", m.KindName, err)
	}
	return waitAPIServer(ctx, m, false, 2*time.Minute)
}

// StartAPIServer brings it back, with its data, and returns once it answers.
func (f *Fleet) StartAPIServer(ctx context.Context, name string) error {
	m := f.Member(name)
	if m == nil {
		return fmt.Errorf("no member %q", name)
	}
	if err := m.node.CommandContext(ctx, "sh", "-c", "[ ! -e "+apiServerStopped+" ] || mv "+apiServerStopped+" "+apiServerManifest).Run(); err != nil {
		return fmt.Errorf("starting the API server of %s: %w", m.KindName, err)
	}
	return waitAPIServer(ctx, m, true, 3*time.Minute)
}

func waitAPIServer(ctx context.Context, c *Cluster, up bool, timeout time.Duration) error {
	cfg := rest.CopyConfig(c.Config)
	cfg.Timeout = 3 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		var code int
		err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&code).Error()
		if (err == nil && code == http.StatusOK) == up {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the API server of %s is not %s after %s: %v", c.KindName, map[bool]string{true: "up", false: "down"}[up], timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// Join registers a member with the fleet's hub as a user does: `mysqlfleet join` (the binary cli) with the
// member's admin kubeconfig, the node's address on kind's docker network as the server the hub's Pods reach, and
// the member controller installed from the manager image loaded into the member (the CLI's default,
// mysqlfleet/manager:<version>, is no image a kind node has). Its output goes to out.
func (f *Fleet) Join(ctx context.Context, cli string, m *Cluster, out io.Writer) error {
	args := []string{"--kubeconfig", f.Hub.KubeconfigPath, "join", m.Name,
		"--member-kubeconfig", m.KubeconfigPath, "--server", m.Server, "--cloud", m.Cloud, "--region", m.Region,
		"--member-controller-image", f.opts.Images.Manager}
	_, _ = fmt.Fprintf(out, "\n$ %s %s\n", cli, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("joining %s: %w", m.Name, err)
	}
	return nil
}

// Exec runs a command in a cluster's node container and returns its combined output.
func (c *Cluster) Exec(ctx context.Context, args ...string) (string, error) {
	var out bytes.Buffer
	cmd := c.node.CommandContext(ctx, args[0], args[1:]...).SetStdout(&out).SetStderr(&out)
	err := cmd.Run()
	return out.String(), err
}
