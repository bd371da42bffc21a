package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/mysqlfleet/mysqlfleet/test/testfleet"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// sample is one line of a Prometheus text exposition.
type sample struct {
	labels map[string]string
	value  float64
}

// parseMetric returns the samples of one metric from a Prometheus text exposition, named as in the exposition:
// a histogram's are its _bucket, _sum and _count samples. Like a scrape, it keeps what parses of a damaged
// exposition.
func parseMetric(raw []byte, name string) []sample {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, _ := parser.TextToMetricFamilies(bytes.NewReader(raw))
	var out []sample
	for family, f := range families {
		if !strings.HasPrefix(name, family) {
			continue // a family's samples are named after it
		}
		samples, _ := expfmt.ExtractSamples(&expfmt.DecodeOptions{}, f)
		for _, s := range samples {
			if string(s.Metric[model.MetricNameLabel]) != name {
				continue
			}
			l := map[string]string{}
			for k, v := range s.Metric {
				if k != model.MetricNameLabel {
					l[string(k)] = string(v)
				}
			}
			out = append(out, sample{labels: l, value: float64(s.Value)})
		}
	}
	return out
}

// requests counts API requests of one cluster by "resource[/subresource] VERB". Keys starting with "@" are
// the sum and count of apiserver_request_duration_seconds by verb ("@sum VERB", "@count VERB").
type requests map[string]float64

var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

func requestKey(resource, subresource, verb string) string {
	if subresource != "" {
		resource += "/" + subresource
	}
	return resource + " " + verb
}

func splitKey(k string) (resource, verb string) {
	resource, verb, _ = strings.Cut(k, " ")
	return resource, verb
}

// scrapeRequests reads apiserver_request_total from one API server.
func scrapeRequests(ctx context.Context, cs kubernetes.Interface) (requests, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	out := requests{}
	for _, s := range parseMetric(raw, "apiserver_request_total") {
		out[requestKey(s.labels["resource"], s.labels["subresource"], s.labels["verb"])] += s.value
	}
	for _, s := range parseMetric(raw, "apiserver_request_duration_seconds_sum") {
		out["@sum "+s.labels["verb"]] += s.value
	}
	for _, s := range parseMetric(raw, "apiserver_request_duration_seconds_count") {
		out["@count "+s.labels["verb"]] += s.value
	}
	return out, nil
}

// fleetRequests scrapes every reachable cluster of the fleet at once; unreachable ones are left out.
type fleetRequests map[string]requests

func scrapeFleet(ctx context.Context, clients map[string]kubernetes.Interface) fleetRequests {
	out := fleetRequests{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, cs := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := scrapeRequests(ctx, cs)
			if err != nil {
				return
			}
			mu.Lock()
			out[name] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// delta is after minus before, per cluster, for clusters present in both, with zero entries dropped.
func (after fleetRequests) delta(before fleetRequests) fleetRequests {
	out := fleetRequests{}
	for name, a := range after {
		b, ok := before[name]
		if !ok {
			continue
		}
		d := requests{}
		for k, v := range a {
			if v != b[k] {
				d[k] = v - b[k]
			}
		}
		out[name] = d
	}
	return out
}

// writes sums the write requests of one cluster, leaving out Leases (every API server renews its own, and
// the manager's leader election, when on, renews one) and, in members, Events (nothing of mysqlfleet writes
// them there).
func (r requests) writes(isHub bool) (total float64, byKey map[string]float64) {
	byKey = map[string]float64{}
	for k, v := range r {
		res, verb := splitKey(k)
		if strings.HasPrefix(k, "@") || !writeVerbs[verb] || strings.HasPrefix(res, "leases") || (!isHub && strings.HasPrefix(res, "events")) {
			continue
		}
		total += v
		byKey[k] += v
	}
	return total, byKey
}

// verbs sums a cluster's requests by verb.
func (r requests) verbs() map[string]float64 {
	out := map[string]float64{}
	for k, v := range r {
		if strings.HasPrefix(k, "@") {
			continue
		}
		_, verb := splitKey(k)
		out[verb] += v
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// fleetCPU sums the CPU seconds (user + system) used so far by every process of the fleet: the etcd and
// kube-apiserver processes, found by the fleet directory in their command lines.
func fleetCPU(f *testfleet.Fleet) float64 { return cpuOfProcessesIn(f.Dir) }

// cpuOfProcessesIn sums the CPU seconds of the processes whose command line names a file in dir.
func cpuOfProcessesIn(dir string) float64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	var total float64
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmdline), dir+"/") {
			continue
		}
		total += processCPU(pid)
	}
	return total
}

// processCPU reads a process's user and system time from /proc/<pid>/stat, in seconds.
func processCPU(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name may hold spaces; fields count from after its closing parenthesis.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / clockTicks
}

// clockTicks is USER_HZ, 100 on every Linux platform Go supports.
const clockTicks = 100
