// Package testfleet starts a fleet of real, independent Kubernetes clusters on loopback: a hub and any number of
// members, each its own etcd and kube-apiserver (through envtest), optionally with kube-controller-manager,
// kube-scheduler, kwok fake nodes and a storage provisioner so that StatefulSets get Ready Pods and bound PVCs
// and CronJobs run Jobs. Integration tests, the e2e suite, the benchmark and the local demo fleet all start
// their clusters here, from the definitions in clusters/.
//
// Every process is torn down by Stop. If the owning process dies without calling Stop (a test binary killed
// on timeout, kill -9), a guardian started with the fleet notices that its pipe closed, kills whatever still
// runs from the fleet's directory and removes the directory.
package testfleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/mysqlfleet/mysqlfleet/clusters"
)

// Options configure a fleet.
type Options struct {
	// BinDir holds kube-apiserver and etcd, and with Workloads also kube-controller-manager, kube-scheduler, kwok
	// and kwok-stages.yaml. Default: $MYSQLFLEET_BIN, else $KUBEBUILDER_ASSETS, else ./bin of the module.
	BinDir string
	// Hub is the hub's definition; default: the hub of clusters/.
	Hub *clusters.Definition
	// Members are the members' definitions; nil means the members of clusters/. Use an empty, non-nil slice
	// for a hub alone.
	Members []clusters.Definition
	// Workloads adds kube-controller-manager, kube-scheduler, a kwok fake node and a storage provisioner to
	// every member, so that workloads really run there.
	Workloads bool
	// HubCRDDirectoryPaths are installed into the hub.
	HubCRDDirectoryPaths []string
	// Dir is where the fleet keeps certificates, data, kubeconfigs and logs. Default: a new temporary
	// directory, removed by Stop. A given Dir is kept by Stop (so a demo's kubeconfigs can be found there).
	Dir string
}

// Fleet is a running hub and its members.
type Fleet struct {
	Dir     string
	Hub     *Cluster
	Members []*Cluster

	ownDir   bool
	guardian *guardian
	stopOnce sync.Once
	stopErr  error
}

// Start starts the hub and the members concurrently. On error, whatever was started is stopped.
func Start(ctx context.Context, opts Options) (*Fleet, error) {
	hub, members, err := definitions(opts)
	if err != nil {
		return nil, err
	}
	bin, err := binDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	f := &Fleet{Dir: opts.Dir}
	if f.Dir == "" {
		if f.Dir, err = os.MkdirTemp("", dirPrefix+"*"); err != nil {
			return nil, err
		}
		f.ownDir = true
	} else if err := os.MkdirAll(f.Dir, 0o700); err != nil {
		return nil, err
	}
	if f.Dir, err = filepath.Abs(f.Dir); err != nil {
		return nil, err
	}
	if f.guardian, err = startGuardian(f.Dir, f.ownDir); err != nil {
		_ = os.RemoveAll(f.Dir)
		return nil, err
	}

	defs := append([]clusters.Definition{hub}, members...)
	started := make([]*Cluster, len(defs))
	errs := make([]error, len(defs))
	var wg sync.WaitGroup
	// A kube-apiserver's start is CPU-bound for seconds: starting a dozen at once on a small machine makes them
	// all miss their start timeout, so a few start at a time.
	slots := make(chan struct{}, startConcurrency)
	for i, d := range defs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			c := &Cluster{Definition: d, Dir: filepath.Join(f.Dir, d.Name), bin: bin}
			started[i] = c
			crds := []string(nil)
			if d.Role == clusters.RoleHub {
				crds = opts.HubCRDDirectoryPaths
			}
			errs[i] = c.start(ctx, crds, opts.Workloads && d.Role == clusters.RoleMember)
		}()
	}
	wg.Wait()
	f.Hub, f.Members = started[0], started[1:]
	if err := errors.Join(errs...); err != nil {
		_ = f.Stop()
		return nil, err
	}
	return f, nil
}

// Member returns the member of the given name, or nil.
func (f *Fleet) Member(name string) *Cluster {
	for _, m := range f.Members {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// Stop stops every process of the fleet, concurrently, and removes the fleet's directory if Start made it.
// It is safe to call more than once.
func (f *Fleet) Stop() error {
	f.stopOnce.Do(func() {
		all := append([]*Cluster{f.Hub}, f.Members...)
		errs := make([]error, len(all))
		var wg sync.WaitGroup
		for i, c := range all {
			if c == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = c.stop()
			}()
		}
		wg.Wait()
		// The guardian kills anything left from this fleet and, for a temporary directory, removes it.
		errs = append(errs, f.guardian.release())
		f.stopErr = errors.Join(errs...)
	})
	return f.stopErr
}

const dirPrefix = "mysqlfleet-fleet-"

// startConcurrency is how many clusters start at once.
const startConcurrency = 4

func definitions(opts Options) (clusters.Definition, []clusters.Definition, error) {
	hub, members, err := clusters.Fleet()
	if err != nil {
		return hub, nil, err
	}
	if opts.Hub != nil {
		hub = *opts.Hub
	}
	if opts.Members != nil {
		members = opts.Members
	}
	seen := map[string]bool{hub.Name: true}
	for _, m := range members {
		if seen[m.Name] {
			return hub, nil, fmt.Errorf("testfleet: duplicate cluster name %q", m.Name)
		}
		seen[m.Name] = true
	}
	return hub, members, nil
}

// binDir finds the directory of the control-plane binaries.
func binDir(dir string) (string, error) {
	candidates := []string{dir, os.Getenv("MYSQLFLEET_BIN"), os.Getenv("KUBEBUILDER_ASSETS")}
	if root, err := ModuleRoot(); err == nil {
		candidates = append(candidates, filepath.Join(root, "bin"))
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(c, "kube-apiserver")); err == nil {
			return filepath.Abs(c)
		}
	}
	return "", errors.New("testfleet: kube-apiserver not found in $MYSQLFLEET_BIN, $KUBEBUILDER_ASSETS or ./bin: run `make test-tools`")
}

// ModuleRoot walks up from the working directory to the directory holding go.mod.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", os.ErrNotExist
		}
		dir = parent
	}
}

// logFile opens a process's log in the cluster's directory.
func logFile(dir, name string) (io.WriteCloser, error) {
	return os.OpenFile(filepath.Join(dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
}
