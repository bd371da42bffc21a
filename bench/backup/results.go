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

// PhysicalResults is what the physical benchmark (BenchmarkPhysical) records, as JSON in
// bench/results/physical-<timestamp>.json: the runner's physical backup and restore (internal/backup, Method
// Physical, in process) against the hand pipeline, and the commit stall a writer saw during each backup.
type PhysicalResults struct {
	Timestamp  string       `json:"timestamp"`
	Host       machine.Host `json:"host"`
	ServerArgs []string     `json:"serverArgs"`
	Database   Database     `json:"database"`
	// MariaDBBackup is mariadb-backup --version; Zstd the zstd binary's version, which the hand pipeline runs.
	MariaDBBackup string `json:"mariadbBackup"`
	Zstd          string `json:"zstd"`
	// Hand is the hand pipeline's backup command line, HandRestore its restore steps.
	Hand        string `json:"hand"`
	HandRestore string `json:"handRestore"`
	// RunnerLogCopyIntervalMs is the runner's --log-copy-interval; the hand pipeline keeps the tool's default
	// (1000 ms), as a person who types it does. RunnerZstdLevel is the runner's in-process encoder level.
	RunnerLogCopyIntervalMs float64         `json:"runnerLogCopyIntervalMs"`
	RunnerZstdLevel         string          `json:"runnerZstdLevel"`
	Backup                  PhysicalSummary `json:"backup"`
	Restore                 PhysicalSummary `json:"restore"`
	Stall                   StallSummary    `json:"stall"`
	Runs                    []PhysicalRun   `json:"runs"`
}

// PhysicalRun is one round: both backups, each under the writer, then both restores, each into a fresh data
// directory on which a server is started and every table's checksum compared with the source's.
type PhysicalRun struct {
	Index         int            `json:"run"`
	Load1         float64        `json:"load1AtStart"`
	Order         string         `json:"order"`
	HandBackup    PhysicalTiming `json:"handBackup"`
	RunnerBackup  PhysicalTiming `json:"runnerBackup"`
	HandRestore   PhysicalTiming `json:"handRestore"`
	RunnerRestore PhysicalTiming `json:"runnerRestore"`
}

// PhysicalTiming is one physical backup or restore. A restore's time runs from the stored object to a server
// that answers on the restored data directory.
type PhysicalTiming struct {
	Seconds float64 `json:"seconds"`
	// StoredBytes is the compressed stream as stored, StreamBytes the xbstream before compression (backups).
	StoredBytes  int64  `json:"storedBytes,omitempty"`
	StreamBytes  int64  `json:"streamBytes,omitempty"`
	GTIDPosition string `json:"gtidPosition,omitempty"`
	// LongestCommitGapSeconds is the longest time during the backup in which the writer got no commit
	// acknowledged; IdleLongestGapSeconds the same over as long a time just before it, with no backup running:
	// the machine's own noise. CommitsPerSecond are the writer's rates during the backup and idle.
	LongestCommitGapSeconds float64 `json:"longestCommitGapSeconds,omitempty"`
	IdleLongestGapSeconds   float64 `json:"idleLongestGapSeconds,omitempty"`
	CommitsPerSecond        float64 `json:"commitsPerSecond,omitempty"`
	IdleCommitsPerSecond    float64 `json:"idleCommitsPerSecond,omitempty"`
}

// PhysicalSummary compares the runner with the hand pipeline for backups or restores, at the medians.
type PhysicalSummary struct {
	HandMedianSeconds   float64   `json:"handMedianSeconds"`
	RunnerMedianSeconds float64   `json:"runnerMedianSeconds"`
	Ratio               float64   `json:"ratio"`
	PairedRatios        []float64 `json:"pairedRatios"`
	// MiB/s of the xbstream (the runner's StreamBytes).
	HandMiBps   float64 `json:"handMiBPerSecond"`
	RunnerMiBps float64 `json:"runnerMiBPerSecond"`
}

// StallSummary is the longest commit gap over all runs, for each backup and idle.
type StallSummary struct {
	HandMaxSeconds   float64 `json:"handMaxSeconds"`
	RunnerMaxSeconds float64 `json:"runnerMaxSeconds"`
	IdleMaxSeconds   float64 `json:"idleMaxSeconds"`
}
