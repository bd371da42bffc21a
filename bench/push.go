package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/mysqlfleet/mysqlfleet/controllers/mysqlcluster"
	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
)

// writeManifests writes each member's objects of a group as YAML into dir/<member>/: the Namespaces first
// (kubectl applies the files of a directory in lexical order, and the objects of a file in order), then one
// file per MySQLCluster. It returns the directory of each member.
func writeManifests(dir string, g *group, members []*testfleet.Cluster) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range members {
		mo := g.objects[m.Name]
		if mo == nil {
			return nil, fmt.Errorf("group %s has no objects for member %s", g.prefix, m.Name)
		}
		d := filepath.Join(dir, m.Name)
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
		if err := writeYAML(filepath.Join(d, "00-namespaces.yaml"), mo.namespaces); err != nil {
			return nil, err
		}
		for i, objs := range mo.clusters {
			if err := writeYAML(filepath.Join(d, fmt.Sprintf("10-cluster-%04d.yaml", i)), objs); err != nil {
				return nil, err
			}
		}
		out[m.Name] = d
	}
	return out, nil
}

func writeYAML(path string, objs []*unstructured.Unstructured) error {
	var b bytes.Buffer
	for _, o := range objs {
		data, err := yaml.Marshal(o.Object)
		if err != nil {
			return err
		}
		b.WriteString("---\n")
		b.Write(data)
	}
	return os.WriteFile(path, b.Bytes(), 0o600)
}

// pushKubectl runs `kubectl apply --server-side --force-conflicts -f DIR` for every member at once, one kubectl
// per member, as a user without mysqlfleet would. Each member's discovery cache is filled first (kubectl
// api-resources), so that the timed apply is kubectl at its best. It returns the start time and the time the
// last kubectl exited.
func pushKubectl(ctx context.Context, kubectl, cacheDir string, dirs map[string]string, members []*testfleet.Cluster) (start, end time.Time, err error) {
	var wg sync.WaitGroup
	errs := make([]error, len(members))
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", m.KubeconfigPath, "--cache-dir", cacheDir,
				"api-resources", "-o", "name").CombinedOutput()
			if err != nil {
				errs[i] = fmt.Errorf("kubectl api-resources in %s: %w: %s", m.Name, err, lastLines(string(out), 5))
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return start, end, err
	}
	start = time.Now()
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", m.KubeconfigPath, "--cache-dir", cacheDir,
				"apply", "--server-side", "--force-conflicts", "-f", dirs[m.Name])
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("kubectl apply to %s: %w: %s", m.Name, err, lastLines(stderr.String(), 5))
			}
		}()
	}
	wg.Wait()
	return start, time.Now(), errors.Join(errs...)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// fullSpeedClient is a client for a member without client-side rate limiting, its REST mappings for the kinds
// render produces already discovered, so that the floor measures applies and nothing else.
func fullSpeedClient(cfg *rest.Config) (client.Client, error) {
	c := rest.CopyConfig(cfg)
	c.QPS, c.Burst = -1, 0
	cl, err := client.New(c, client.Options{Scheme: mysqlcluster.Scheme()})
	if err != nil {
		return nil, err
	}
	for _, gvr := range watchedResources {
		if _, err := cl.RESTMapper().KindFor(gvr); err != nil {
			return nil, err
		}
	}
	return cl, nil
}

// pushGo applies every member's objects with one client per member and `workers` concurrent server-side
// applies, the Namespaces first. It returns the start and end times.
func pushGo(ctx context.Context, g *group, members []*testfleet.Cluster, workers int) (start, end time.Time, err error) {
	clients := make([]client.Client, len(members))
	for i, m := range members {
		if clients[i], err = fullSpeedClient(m.Config); err != nil {
			return start, end, err
		}
	}
	// A failed apply is tried again a few times (10 ms to 1.25 s apart), as any controller would: a loaded
	// member's etcd times a request out now and then, and the floor must not wait out the run's -timeout for an
	// object it gave up on (mysqlfleet's manager retries too).
	apply := func(cl client.Client, u *unstructured.Unstructured) error {
		return retry.OnError(retry.DefaultBackoff, func(error) bool { return ctx.Err() == nil }, func() error {
			return cl.Apply(ctx, client.ApplyConfigurationFromUnstructured(u.DeepCopy()), client.FieldOwner("bench"), client.ForceOwnership)
		})
	}
	var wg sync.WaitGroup
	errs := make([]error, len(members))
	start = time.Now()
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mo := g.objects[m.Name]
			for _, ns := range mo.namespaces {
				if err := apply(clients[i], ns); err != nil {
					errs[i] = fmt.Errorf("applying Namespace %s in %s: %w", ns.GetName(), m.Name, err)
					return
				}
			}
			jobs := make(chan *unstructured.Unstructured)
			var mu sync.Mutex
			var werrs []error
			var ww sync.WaitGroup
			for range workers {
				ww.Add(1)
				go func() {
					defer ww.Done()
					for u := range jobs {
						if err := apply(clients[i], u); err != nil {
							mu.Lock()
							werrs = append(werrs, fmt.Errorf("applying %s %s/%s in %s: %w", u.GetKind(), u.GetNamespace(), u.GetName(), m.Name, err))
							mu.Unlock()
						}
					}
				}()
			}
			for _, objs := range mo.clusters {
				for _, u := range objs {
					jobs <- u
				}
			}
			close(jobs)
			ww.Wait()
			errs[i] = errors.Join(werrs...)
		}()
	}
	wg.Wait()
	return start, time.Now(), errors.Join(errs...)
}

// unrelatedNamespace holds the ConfigMaps that nothing of mysqlfleet manages.
const unrelatedNamespace = "bench-unrelated"

// createUnrelated creates n ConfigMaps of 512 bytes without mysqlfleet's labels in every member, with `workers`
// concurrent creates per member.
func createUnrelated(ctx context.Context, members []*testfleet.Cluster, n, workers int) error {
	payload := strings.Repeat("x", 512)
	var wg sync.WaitGroup
	errs := make([]error, len(members))
	for i, m := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := fullSpeedClient(m.Config)
			if err != nil {
				errs[i] = err
				return
			}
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: unrelatedNamespace}}
			if err := cl.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
				errs[i] = err
				return
			}
			jobs := make(chan int)
			var mu sync.Mutex
			var failed int
			var first error
			var ww sync.WaitGroup
			for range workers {
				ww.Add(1)
				go func() {
					defer ww.Done()
					for j := range jobs {
						cm := &corev1.ConfigMap{
							ObjectMeta: metav1.ObjectMeta{Namespace: unrelatedNamespace, Name: fmt.Sprintf("unrelated-%05d", j),
								Labels: map[string]string{"app.kubernetes.io/name": "unrelated"}},
							Data: map[string]string{"payload": payload},
						}
						if err := cl.Create(ctx, cm); err != nil && !apierrors.IsAlreadyExists(err) {
							mu.Lock()
							failed++
							if first == nil {
								first = err
							}
							mu.Unlock()
						}
					}
				}()
			}
		feed:
			for j := range n {
				select {
				case jobs <- j:
				case <-ctx.Done():
					break feed
				}
			}
			close(jobs)
			ww.Wait()
			if failed > 0 {
				errs[i] = fmt.Errorf("%d ConfigMaps not created in %s, first: %w", failed, m.Name, first)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
