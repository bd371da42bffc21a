package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	_ "net/http/pprof" // the manager process serves /debug/pprof on its bench address
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/mysqlfleet/mysqlfleet/controllers/mysqlcluster"
	"github.com/mysqlfleet/mysqlfleet/internal/fleet"
	"github.com/mysqlfleet/mysqlfleet/internal/kubeconfig"
)

// The manager runs in a process of its own: the bench binary started again with managerEnv set. Its memory is
// then the manager's alone (the bench's watches, baselines and clients would otherwise share the heap and the
// RSS), and it is assembled by controllers/mysqlcluster exactly as cmd/manager assembles it, with cmd/manager's
// defaults. Unlike ./cmd/manager it also serves, on a loopback address, net/http/pprof and a few bench
// endpoints: memory after a forced GC, which members are engaged, and a CPU profile on demand.
const (
	managerEnv         = "MYSQLFLEET_BENCH_MANAGER"         // the bench address
	managerMetricsEnv  = "MYSQLFLEET_BENCH_MANAGER_METRICS" // the metrics address
	managerLogEnv      = "MYSQLFLEET_BENCH_MANAGER_LOG"
	managerQPSEnv      = "MYSQLFLEET_BENCH_MEMBER_QPS"
	managerBurstEnv    = "MYSQLFLEET_BENCH_MEMBER_BURST"
	managerTimeoutEnv  = "MYSQLFLEET_BENCH_MEMBER_TIMEOUT"
	managerInFlightEnv = "MYSQLFLEET_BENCH_MEMBER_MAX_IN_FLIGHT"
	managerWorkersEnv  = "MYSQLFLEET_BENCH_WORKERS"
	managerNamespace   = "mysqlfleet-system"
)

// memStats is what /bench/mem reports.
type memStats struct {
	RSSBytes       uint64  `json:"rssBytes"`
	HeapInuseBytes uint64  `json:"heapInuseBytes"`
	HeapAllocBytes uint64  `json:"heapAllocBytes"`
	SysBytes       uint64  `json:"sysBytes"`
	Goroutines     int     `json:"goroutines"`
	CPUSeconds     float64 `json:"cpuSeconds"`
}

// runManager is the manager process.
func runManager() int {
	// Sample allocations every 64 KiB rather than 512 KiB, so that heap profiles of a manager holding a few
	// MiB per 1,000 objects show what holds them (at about 2% of the manager's CPU).
	runtime.MemProfileRate = 64 << 10
	mysqlcluster.SetGCPercent() // as cmd/manager does
	logOut := io.Writer(os.Stderr)
	if path := os.Getenv(managerLogEnv); path != "" {
		if f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
			logOut = f
		}
	}
	// Times with their fractions of a second: a pass takes milliseconds.
	ctrl.SetLogger(zap.New(zap.WriteTo(logOut), func(o *zap.Options) { o.TimeEncoder = zapcore.RFC3339NanoTimeEncoder }))
	log := ctrl.Log.WithName("bench-manager")

	// The defaults of cmd/manager's flags, leader election aside: one process needs none.
	o := mysqlcluster.Options{
		Namespace:              managerNamespace,
		MetricsBindAddress:     os.Getenv(managerMetricsEnv),
		HealthProbeBindAddress: "0",
		Kubeconfig:             kubeconfig.Options{QPS: kubeconfig.DefaultQPS, Burst: kubeconfig.DefaultBurst},
		MemberSyncTimeout:      20 * time.Second,
		MemberHealthInterval:   10 * time.Second,
		MemberTimeout:          fleet.DefaultRequestTimeout,
		MemberMaxInFlight:      fleet.DefaultMaxInFlight,
		DeletionTimeout:        5 * time.Minute,
	}
	if v, err := strconv.ParseFloat(os.Getenv(managerQPSEnv), 32); err == nil {
		o.Kubeconfig.QPS = float32(v)
	}
	if v, err := strconv.Atoi(os.Getenv(managerBurstEnv)); err == nil {
		o.Kubeconfig.Burst = v
	}
	if v, err := time.ParseDuration(os.Getenv(managerTimeoutEnv)); err == nil {
		o.MemberTimeout = v
	}
	if v, err := strconv.Atoi(os.Getenv(managerInFlightEnv)); err == nil {
		o.MemberMaxInFlight = v
	}
	if v, err := strconv.Atoi(os.Getenv(managerWorkersEnv)); err == nil {
		o.Workers = v
	}
	// KUBECONFIG names the hub; GetConfig leaves client-side rate limiting off, as for cmd/manager.
	mgr, err := mysqlcluster.New(ctrl.GetConfigOrDie(), o)
	if err != nil {
		log.Error(err, "Unable to set up the manager")
		return 1
	}
	ctx := ctrl.SetupSignalHandler()

	var ready sync.Once
	readyCh := make(chan struct{})
	go func() {
		<-mgr.Elected() // leader election off: closed once the controllers run
		if mgr.GetLocalManager().GetCache().WaitForCacheSync(ctx) {
			ready.Do(func() { close(readyCh) })
		}
	}()
	var cpuMu sync.Mutex
	var cpuFile *os.File
	http.HandleFunc("/bench/ready", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-readyCh:
			_, _ = io.WriteString(w, "ok")
		default:
			http.Error(w, "starting", http.StatusServiceUnavailable)
		}
	})
	http.HandleFunc("/bench/mem", func(w http.ResponseWriter, _ *http.Request) {
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s := memStats{HeapInuseBytes: ms.HeapInuse, HeapAllocBytes: ms.HeapAlloc, SysBytes: ms.Sys,
			Goroutines: runtime.NumGoroutine(), RSSBytes: rss("self"), CPUSeconds: processCPU(os.Getpid())}
		_ = json.NewEncoder(w).Encode(s)
	})
	http.HandleFunc("/bench/engaged", func(w http.ResponseWriter, r *http.Request) {
		var engaged []string
		for _, name := range strings.Split(r.URL.Query().Get("members"), ",") {
			if name == "" {
				continue
			}
			if _, err := mgr.GetCluster(r.Context(), multicluster.ClusterName(name)); err == nil {
				engaged = append(engaged, name)
			}
		}
		_ = json.NewEncoder(w).Encode(engaged)
	})
	http.HandleFunc("/bench/cpu/start", func(w http.ResponseWriter, r *http.Request) {
		cpuMu.Lock()
		defer cpuMu.Unlock()
		if cpuFile != nil {
			http.Error(w, "already profiling", http.StatusConflict)
			return
		}
		f, err := os.Create(r.URL.Query().Get("file"))
		if err == nil {
			if err = pprof.StartCPUProfile(f); err != nil {
				_ = f.Close()
			}
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		cpuFile = f
	})
	http.HandleFunc("/bench/cpu/stop", func(w http.ResponseWriter, _ *http.Request) {
		cpuMu.Lock()
		defer cpuMu.Unlock()
		if cpuFile == nil {
			return
		}
		pprof.StopCPUProfile()
		_ = cpuFile.Close()
		cpuFile = nil
	})
	l, err := net.Listen("tcp", os.Getenv(managerEnv))
	if err != nil {
		log.Error(err, "Unable to listen for the bench")
		return 1
	}
	go func() { _ = http.Serve(l, nil) }()

	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "The manager stopped with an error")
		return 1
	}
	return 0
}

// rss reads VmRSS of /proc/<pid>/status, in bytes.
func rss(pid string) uint64 {
	data, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// managerProc is the parent's handle on the manager process.
type managerProc struct {
	cmd     *exec.Cmd
	addr    string
	metrics string
	done    chan struct{}
	http    *http.Client
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String(), nil
}

// startManager starts the manager process against the hub and waits until it serves. The manager's member flags
// are the bench's options of the same names.
func startManager(ctx context.Context, hubKubeconfig, logPath string, o options) (*managerProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	metrics, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), managerEnv+"="+addr, managerMetricsEnv+"="+metrics, managerLogEnv+"="+logPath,
		"KUBECONFIG="+hubKubeconfig, managerQPSEnv+"="+strconv.FormatFloat(o.memberQPS, 'f', -1, 64),
		managerBurstEnv+"="+strconv.Itoa(o.memberBurst), managerTimeoutEnv+"="+o.memberTimeout.String(),
		managerInFlightEnv+"="+strconv.Itoa(o.memberMaxInFlight), managerWorkersEnv+"="+strconv.Itoa(o.managerWorkers),
		"GOMAXPROCS="+strconv.Itoa(o.managerProcs))
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	// Its own process group, so that a Ctrl-C reaches the bench, which stops it in order; the kernel kills it
	// if the bench dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the manager process: %w", err)
	}
	p := &managerProc{cmd: cmd, addr: addr, metrics: metrics, done: make(chan struct{}), http: &http.Client{Timeout: time.Minute}}
	go func() { _ = cmd.Wait(); close(p.done) }()
	pin := func() error {
		if !o.pinTiers {
			return nil
		}
		return pinProcess(cmd.Process.Pid, pinHubCPU)
	}
	if err := pin(); err != nil {
		p.stop()
		return nil, err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := p.get(ctx, "/bench/ready"); err == nil {
			// Threads made while the first pass set the others are set now.
			if err := pin(); err != nil {
				p.stop()
				return nil, err
			}
			return p, nil
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("the manager process exited; see %s", logPath)
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.stop()
			return nil, fmt.Errorf("the manager process did not become ready; see %s", logPath)
		}
	}
}

func (p *managerProc) get(ctx context.Context, path string) ([]byte, error) {
	return httpGet(ctx, p.http, "http://"+p.addr+path)
}

func httpGet(ctx context.Context, c *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return body, nil
}

// mem forces a GC in the manager and reads its memory.
func (p *managerProc) mem(ctx context.Context) (memStats, error) {
	var s memStats
	body, err := p.get(ctx, "/bench/mem")
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(body, &s)
}

// settledMem takes three GC'd samples a second apart and keeps the smallest heap: a reconcile or a watch
// event in flight during one sample must not count as memory the manager holds.
func (p *managerProc) settledMem(ctx context.Context) (memStats, error) {
	var best memStats
	for i := range 3 {
		s, err := p.mem(ctx)
		if err != nil {
			return s, err
		}
		if i == 0 || s.HeapInuseBytes < best.HeapInuseBytes {
			best = s
		}
		if i < 2 {
			_ = sleep(ctx, time.Second)
		}
	}
	return best, nil
}

func (p *managerProc) engaged(ctx context.Context, members []string) (map[string]bool, error) {
	body, err := p.get(ctx, "/bench/engaged?members="+strings.Join(members, ","))
	if err != nil {
		return nil, err
	}
	var names []string
	if err := json.Unmarshal(body, &names); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out, nil
}

// waitEngaged waits until the manager has every named member engaged.
func (p *managerProc) waitEngaged(ctx context.Context, members []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		got, err := p.engaged(ctx, members)
		if err == nil && len(got) == len(members) {
			return nil
		}
		if time.Now().After(deadline) {
			var missing []string
			for _, m := range members {
				if !got[m] {
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

func (p *managerProc) startCPUProfile(ctx context.Context, file string) error {
	_, err := p.get(ctx, "/bench/cpu/start?file="+file)
	return err
}

func (p *managerProc) stopCPUProfile(ctx context.Context) error {
	_, err := p.get(ctx, "/bench/cpu/stop")
	return err
}

// heapProfile saves a heap profile taken after a GC.
func (p *managerProc) heapProfile(ctx context.Context, file string) error {
	body, err := p.get(ctx, "/debug/pprof/heap?gc=1")
	if err != nil {
		return err
	}
	return os.WriteFile(file, body, 0o644)
}

// managerMetrics reads the manager's own Prometheus metrics.
func (p *managerProc) managerMetrics(ctx context.Context) ([]byte, error) {
	return httpGet(ctx, p.http, "http://"+p.metrics+"/metrics")
}

// counters sums the manager's metrics of interest: reconciles of the MySQLCluster controller (and those that
// failed), the time they took and waited in the queue, its workers, member applies by action, and failed
// applies by cause.
func (p *managerProc) counters(ctx context.Context) map[string]float64 {
	out := map[string]float64{}
	raw, err := p.managerMetrics(ctx)
	if err != nil {
		return out
	}
	sum := func(metric, label, value, key string) {
		for _, s := range parseMetric(raw, metric) {
			if s.labels[label] == value {
				out[key] += s.value
			}
		}
	}
	sum("controller_runtime_reconcile_total", "controller", "mysqlcluster", "reconciles")
	sum("controller_runtime_reconcile_time_seconds_sum", "controller", "mysqlcluster", "@reconcile seconds")
	sum("controller_runtime_max_concurrent_reconciles", "controller", "mysqlcluster", "@workers")
	sum("workqueue_queue_duration_seconds_sum", "name", "mysqlcluster", "@queue seconds")
	sum("workqueue_queue_duration_seconds_count", "name", "mysqlcluster", "@queue count")
	sum("controller_runtime_reconcile_errors_total", "controller", "mysqlcluster", "reconcile errors")
	for _, s := range parseMetric(raw, "controller_runtime_reconcile_total") { // every controller: status too
		out[allReconciles] += s.value
	}
	for _, s := range parseMetric(raw, "mysqlfleet_member_apply_errors_total") {
		out[applyErrorPrefix+s.labels["reason"]] += s.value
	}
	for _, s := range parseMetric(raw, "mysqlfleet_member_applies_total") {
		out["applies "+s.labels["action"]] += s.value
		out["@applies "+s.labels["action"]+" "+s.labels["member"]] += s.value
	}
	return out
}

func (p *managerProc) cpu() float64 {
	if p.cmd.Process == nil {
		return 0
	}
	return processCPU(p.cmd.Process.Pid)
}

// stop terminates the manager process and waits for it (killing it after 20s).
func (p *managerProc) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

var errTimeout = errors.New("timed out")
