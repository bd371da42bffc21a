package localfleet

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
)

// rig stands in for a test's testing.TB where the local fleet runs the test rigs (dbpods, mysqltest) outside a
// test: the demo's supervisor is a long-running process, not a test, and those rigs take a testing.TB only for
// temporary directories, cleanups and failures. Its directories are numbered under dir, so that the paths of a
// server's files (a Unix socket included) stay short and everything the rigs make lies under the fleet's own
// directory; a failure panics and is turned into an error by do. Methods the rigs do not use are left to the
// embedded (nil) interface: calling one panics, which do reports as well.
type rig struct {
	testing.TB
	dir string

	mu       sync.Mutex
	next     int
	cleanups []func()
}

// rigFailure is a Fatal of the rig.
type rigFailure struct{ msg string }

func newRig(dir string) *rig { return &rig{dir: dir} }

// do runs f and returns the failure f reported through the rig, or the panic it raised, as an error.
func (r *rig) do(f func()) (err error) {
	defer func() {
		switch p := recover().(type) {
		case nil:
		case rigFailure:
			err = fmt.Errorf("%s", p.msg)
		default:
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	f()
	return nil
}

func (r *rig) Helper()             {}
func (r *rig) Name() string        { return "localfleet" }
func (r *rig) Failed() bool        { return false }
func (r *rig) Logf(string, ...any) {}

func (r *rig) Fatal(args ...any) { panic(rigFailure{fmt.Sprint(args...)}) }

func (r *rig) Fatalf(format string, args ...any) { panic(rigFailure{fmt.Sprintf(format, args...)}) }

func (r *rig) Errorf(format string, args ...any) { panic(rigFailure{fmt.Sprintf(format, args...)}) }

// TempDir makes a new numbered directory under the rig's directory; close removes them all.
func (r *rig) TempDir() string {
	r.mu.Lock()
	r.next++
	dir := filepath.Join(r.dir, strconv.Itoa(r.next))
	r.mu.Unlock()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		r.Fatalf("localfleet: %v", err)
	}
	return dir
}

func (r *rig) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// close runs the cleanups, last registered first (servers stop), then removes the rig's directory.
func (r *rig) close() error {
	r.mu.Lock()
	cleanups := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for i := len(cleanups) - 1; i >= 0; i-- {
		_ = r.do(cleanups[i])
	}
	return os.RemoveAll(r.dir)
}
