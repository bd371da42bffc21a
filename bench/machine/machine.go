// Package machine holds what every benchmark records about the machine it ran on, so that the fleet benchmark
// (bench), the failover benchmark (bench/failover) and the backup benchmark (bench/backup) write one type and
// bench's docs command reads one. It imports nothing of the benchmarks: they and bench import it.
package machine

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// Host is the machine and its load: every process of a run shares its cores with whatever else runs there.
//
// The benchmarks record the load in two shapes, kept as their JSON has always had them: the fleet and scale
// runs the 1-minute load average (load1Start, load1End), the failover and backup runs /proc/loadavg's three
// (loadAverageStart, loadAverageEnd). A field that one kind of run does not record is left out of its JSON
// (omitzero) rather than written as a zero that would read as a measured load or version.
type Host struct {
	Cores int `json:"cores"`
	// Load1Start and Load1End are the 1-minute load average at the start and the end (fleet and scale runs).
	Load1Start float64 `json:"load1Start,omitzero"`
	Load1End   float64 `json:"load1End,omitzero"`
	// LoadStart and LoadEnd are /proc/loadavg's 1, 5 and 15 minute load averages (failover and backup runs).
	LoadStart [3]float64 `json:"loadAverageStart,omitzero"`
	LoadEnd   [3]float64 `json:"loadAverageEnd,omitzero"`
	GoVersion string     `json:"goVersion"`
	// MariaDB is the server's version (failover and backup runs); Gzip is gzip's (backup runs).
	MariaDB string `json:"mariadb,omitzero"`
	Gzip    string `json:"gzip,omitzero"`
	// Commit is the checked-out revision, with -dirty when the work tree had changes. WholeTree tells that the
	// check looked at the whole work tree: failover runs recorded without it looked under bench/failover only.
	Commit    string `json:"commit,omitempty"`
	WholeTree bool   `json:"commitCheckedWholeTree,omitempty"`
}

// LoadAverage is /proc/loadavg's 1, 5 and 15 minute load averages; zeros where it cannot be read.
func LoadAverage() [3]float64 {
	var l [3]float64
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return l
	}
	for i, f := range strings.Fields(string(data)) {
		if i >= len(l) {
			break
		}
		l[i], _ = strconv.ParseFloat(f, 64)
	}
	return l
}

// Commit is the checked-out revision, marked -dirty when the work tree has changes anywhere (untracked files
// included: a new benchmark file is a change); false outside a git work tree. git looks at the whole work tree
// from any directory in it, so a benchmark run by go test in its package's directory sees every change.
func Commit() (string, bool) {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "", false
	}
	rev := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", ":/").Output(); err == nil && len(st) > 0 {
		rev += "-dirty"
	}
	return rev, true
}

// Now is the machine as a run starts: its cores, Go's version, /proc/loadavg in LoadStart, and the commit.
func Now() Host {
	h := Host{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), LoadStart: LoadAverage()}
	if rev, ok := Commit(); ok {
		h.Commit, h.WholeTree = rev, true
	}
	return h
}
