// Package machine holds what every benchmark records about the machine it ran on, so that the fleet benchmark
// (bench), the failover benchmark (bench/failover) and the backup benchmark (bench/backup) write one type and
// bench's docs command reads one. It imports nothing of the benchmarks: they and bench import it.
package machine

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
