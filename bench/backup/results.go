package backup

import "github.com/mysqlfleet/mysqlfleet/bench/machine"

// The types of the JSON a run records live outside the test files so that bench's docs command (go run ./bench
// -docs) can read them: docs/benchmarks.md is generated from them.

// Results is what a benchmark run records, as JSON in bench/results/backup-<timestamp>.json.
type Results struct {
	Timestamp string `json:"timestamp"`
	// Host is the machine and its load: the server, the dump tool, gzip and the runner share its cores.
	Host       machine.Host `json:"host"`
	Runner     string       `json:"runner"`
	ServerArgs []string     `json:"serverArgs"`
	Database   Database     `json:"database"`
	// Target is the largest runner/pipe ratio of median times the issue allows.
	Target  float64 `json:"targetRatio"`
	Backup  Summary `json:"backup"`
	Restore Summary `json:"restore"`
	Runs    []Run   `json:"runs"`
}

// Database is what was backed up.
type Database struct {
	Tables      int     `json:"tables"`
	Rows        int64   `json:"rows"`
	OnDiskBytes int64   `json:"onDiskBytes"`
	FillSeconds float64 `json:"fillSeconds"`
}

// Run is one round: both backups, then both restores, each restore into a fresh server and checked.
type Run struct {
	Index         int     `json:"run"`
	Load1         float64 `json:"load1AtStart"`
	Order         string  `json:"order"`
	PlainBackup   Timing  `json:"plainBackup"`
	RunnerBackup  Timing  `json:"runnerBackup"`
	PlainRestore  Timing  `json:"plainRestore"`
	RunnerRestore Timing  `json:"runnerRestore"`
}

// Timing is one backup or restore.
type Timing struct {
	Seconds float64 `json:"seconds"`
	// StoredBytes is the compressed dump as stored (backups).
	StoredBytes int64 `json:"storedBytes,omitempty"`
	// DumpBytes is the dump before compression, as the runner's manifest records it.
	DumpBytes    int64  `json:"dumpBytes,omitempty"`
	GTIDPosition string `json:"gtidPosition,omitempty"`
}

// Summary compares the runner with the pipe for backups or restores.
type Summary struct {
	PlainMedianSeconds  float64 `json:"plainMedianSeconds"`
	RunnerMedianSeconds float64 `json:"runnerMedianSeconds"`
	// Ratio is the runner's median over the pipe's; Met is Ratio <= the target.
	Ratio float64 `json:"ratio"`
	Met   bool    `json:"targetMet"`
	// PairedRatios are each run's runner time over the same run's pipe time.
	PairedRatios []float64 `json:"pairedRatios"`
	// MiB/s of the uncompressed dump (the runner's DumpBytes), at the medians.
	PlainMiBps  float64 `json:"plainMiBPerSecond"`
	RunnerMiBps float64 `json:"runnerMiBPerSecond"`
}
