package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// managers are the manager's replicas: one process unsharded (leader election off, as one replica needs none),
// or -replicas sharded processes. What the phases read of "the manager" is the sum over the replicas: CPU,
// counters, memory; the scale profile also reads each replica.
type managers struct {
	procs []*managerProc
}

// replicaID names the i-th sharded replica.
func replicaID(i int) string { return fmt.Sprintf("bench-%d", i) }

// startManagers starts n replicas (sharded when n > 1), their logs in dir/manager[-<id>].log, and waits until
// each serves.
func startManagers(ctx context.Context, hubKubeconfig, dir string, n int, o options) (*managers, error) {
	ms := &managers{}
	if n <= 1 {
		p, err := startManager(ctx, hubKubeconfig, filepath.Join(dir, "manager.log"), "", o)
		if err != nil {
			return nil, err
		}
		ms.procs = []*managerProc{p}
		return ms, nil
	}
	errs := make([]error, n)
	ms.procs = make([]*managerProc, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := replicaID(i)
			ms.procs[i], errs[i] = startManager(ctx, hubKubeconfig, filepath.Join(dir, "manager-"+id+".log"), id, o)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		ms.stop()
		return nil, err
	}
	return ms, nil
}

// live are the replicas still running.
func (ms *managers) live() []*managerProc {
	var out []*managerProc
	for _, p := range ms.procs {
		select {
		case <-p.done:
		default:
			out = append(out, p)
		}
	}
	return out
}

func (ms *managers) cpu() float64 {
	var t float64
	for _, p := range ms.procs {
		t += p.cpu()
	}
	return t
}

// counters sums the replicas' counters (workers too: the pool of all replicas).
func (ms *managers) counters(ctx context.Context) map[string]float64 {
	out := map[string]float64{}
	for _, p := range ms.live() {
		for k, v := range p.counters(ctx) {
			out[k] += v
		}
	}
	return out
}

// settledMem is the replicas' memory added up (goroutines and CPU too).
func (ms *managers) settledMem(ctx context.Context) (memStats, error) {
	each, err := ms.settledEach(ctx)
	var sum memStats
	for _, s := range each {
		sum.RSSBytes += s.RSSBytes
		sum.HeapInuseBytes += s.HeapInuseBytes
		sum.HeapAllocBytes += s.HeapAllocBytes
		sum.SysBytes += s.SysBytes
		sum.Goroutines += s.Goroutines
		sum.CPUSeconds += s.CPUSeconds
	}
	return sum, err
}

// settledEach is each live replica's settled memory, in order.
func (ms *managers) settledEach(ctx context.Context) ([]memStats, error) {
	live := ms.live()
	out := make([]memStats, len(live))
	errs := make([]error, len(live))
	var wg sync.WaitGroup
	for i, p := range live {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = p.settledMem(ctx)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// owners tells which replica has each of the members engaged; a member engaged by two is an error.
func (ms *managers) owners(ctx context.Context, members []string) (map[string]*managerProc, error) {
	out := map[string]*managerProc{}
	for _, p := range ms.live() {
		got, err := p.engaged(ctx, members)
		if err != nil {
			return nil, err
		}
		for m := range got {
			if q := out[m]; q != nil {
				return nil, fmt.Errorf("member %s engaged by %s and %s", m, q.identity, p.identity)
			}
			out[m] = p
		}
	}
	return out, nil
}

// waitEngaged waits until every named member is engaged by one replica.
func (ms *managers) waitEngaged(ctx context.Context, members []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		got, err := ms.owners(ctx, members)
		if err == nil && len(got) == len(members) {
			return nil
		}
		if time.Now().After(deadline) {
			var missing []string
			for _, m := range members {
				if got[m] == nil {
					missing = append(missing, m)
				}
			}
			return fmt.Errorf("members not engaged after %s: %v (%v)", timeout, missing, err)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// fileFor names a replica's file: file itself for one replica, file with -<id> before its extension otherwise.
func (ms *managers) fileFor(file string, p *managerProc) string {
	if p.identity == "" {
		return file
	}
	dir, base := filepath.Split(file)
	if i := strings.Index(base, "."); i > 0 {
		return filepath.Join(dir, base[:i]+"-"+p.identity+base[i:])
	}
	return file + "-" + p.identity
}

func (ms *managers) startCPUProfile(ctx context.Context, file string) error {
	var errs []error
	for _, p := range ms.live() {
		errs = append(errs, p.startCPUProfile(ctx, ms.fileFor(file, p)))
	}
	return errors.Join(errs...)
}

func (ms *managers) stopCPUProfile(ctx context.Context) error {
	var errs []error
	for _, p := range ms.live() {
		errs = append(errs, p.stopCPUProfile(ctx))
	}
	return errors.Join(errs...)
}

func (ms *managers) heapProfile(ctx context.Context, file string) error {
	var errs []error
	for _, p := range ms.live() {
		errs = append(errs, p.heapProfile(ctx, ms.fileFor(file, p)))
	}
	return errors.Join(errs...)
}

func (ms *managers) stop() {
	if ms == nil {
		return
	}
	var wg sync.WaitGroup
	for _, p := range ms.procs {
		if p == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.stop()
		}()
	}
	wg.Wait()
}
