package testfleet

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ForTest starts a fleet for a test and stops it when the test ends, whether it passed, failed or was
// interrupted: Ctrl-C or SIGTERM stop the fleet before the test binary exits, and the guardian covers a
// binary that is killed outright.
func ForTest(tb testing.TB, opts Options) *Fleet {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, err := Start(ctx, opts)
	if err != nil {
		tb.Fatalf("starting the test fleet: %v", err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			_ = f.Stop()
			signal.Stop(sigs)
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				_ = p.Signal(s) // die of the same signal, now that the fleet is gone
			}
		case <-done:
		}
	}()
	tb.Cleanup(func() {
		close(done)
		signal.Stop(sigs)
		if err := f.Stop(); err != nil {
			tb.Errorf("stopping the test fleet: %v", err)
		}
	})
	return f
}

// APIServer starts a lone etcd and kube-apiserver for a test that needs only an API server (no fleet, no
// members) and stops them when the test ends. It fails, never skips, when the binaries are missing.
func APIServer(tb testing.TB) *rest.Config {
	tb.Helper()
	bin, err := binDir("")
	if err != nil {
		tb.Fatal(err)
	}
	// envtest gives each process 20 s to start by default; with the race detector's test binaries and their
	// servers all sharing two cores, a kube-apiserver once missed it five times in a row in CI. A fleet's
	// clusters get 2 minutes (cluster.go); so does this one.
	env := &envtest.Environment{BinaryAssetsDirectory: bin, ControlPlaneStartTimeout: 2 * time.Minute}
	cfg, err := env.Start()
	if err != nil {
		tb.Fatalf("starting an API server: %v", err)
	}
	tb.Cleanup(func() { _ = env.Stop() })
	return cfg
}
