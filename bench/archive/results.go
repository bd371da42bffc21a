package archive

import "github.com/mysqlfleet/mysqlfleet/bench/machine"

// The types of the JSON a run records live outside the test files so that bench's docs command (go run ./bench
// -docs) can read them: docs/benchmarks.md is generated from them.

// Results is what a benchmark run records, as JSON in bench/results/archive-<timestamp>.json.
type Results struct {
	Timestamp string `json:"timestamp"`
	// Host is the machine and its load: the servers, the writers, the Keeper and the store share its cores.
	Host machine.Host `json:"host"`
	// Store is where the segments went: "s3" (versitygw on loopback) or "dir"; StoreServer is versitygw's
	// version.
	Store       string `json:"store"`
	StoreServer string `json:"storeServer,omitempty"`
	// ServerOptions are the primary's boot options (the product's); ReplayTargetArgs what the replay's server
	// adds to them.
	ServerOptions    []string `json:"serverOptions"`
	ReplayTargetArgs []string `json:"replayTargetArgs"`
	Writers          int      `json:"writers"`
	LoadSeconds      float64  `json:"loadSeconds"`
	// MaxAgeSeconds and MaxSizeBytes close a segment (the Keeper's MaxAge and MaxSize).
	MaxAgeSeconds float64 `json:"maxSegmentAgeSeconds"`
	MaxSizeBytes  int64   `json:"maxSegmentSizeBytes"`
	SampleMillis  float64 `json:"sampleIntervalMs"`
	// Median is the median of each figure over the runs.
	Median Summary `json:"median"`
	Runs   []Run   `json:"runs"`
}

// Percentiles of one figure over a run's samples or segments, in seconds.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Run is one load on fresh servers, its catch-up, and the check of its archive.
type Run struct {
	Index int     `json:"run"`
	Load1 float64 `json:"load1AtStart"`
	// Samples are the looks at the Keeper's Status during the load.
	Samples int `json:"samples"`
	// RecoveryPointAge is now less Status().ArchivedThrough at each sample, as the member controller reports it.
	RecoveryPointAge Percentiles `json:"recoveryPointAgeSeconds"`
	// StoredPositionAge is the time since the last primary position (as sampled) that the newest stored segment
	// holds: the same age without the Keeper's clock, at most 100 ms (a sample) too old.
	StoredPositionAge Percentiles `json:"storedPositionAgeSeconds"`
	// SamplesOverMaxAge counts the samples whose RecoveryPointAge exceeded MaxAge: the time segments took to
	// be closed and stored.
	SamplesOverMaxAge int `json:"samplesOverMaxAge"`
	// Commits were acknowledged to the writers during the load.
	Commits          int64   `json:"commits"`
	CommitsPerSecond float64 `json:"commitsPerSecond"`
	// BinlogBytes is the binary log the run's segments hold (their LogSize), BinlogBytesPerSecond that over
	// the load's length. Segments counts them all: the first holds the schema, written before the load.
	BinlogBytes          int64   `json:"binlogBytes"`
	BinlogBytesPerSecond float64 `json:"binlogBytesPerSecond"`
	Segments             int     `json:"segments"`
	// StoredBytes is the segments' compressed size; CompressionRatio is BinlogBytes over it.
	StoredBytes      int64   `json:"storedBytes"`
	CompressionRatio float64 `json:"compressionRatio"`
	// SegmentStore is how long storing a segment took: its object's Put and its manifest's.
	SegmentStore Percentiles `json:"segmentStoreSeconds"`
	// CatchUpSeconds runs from the writers' stop to the newest stored segment ending at the primary's
	// gtid_binlog_pos.
	CatchUpSeconds float64 `json:"catchUpSeconds"`
	// StreamRestarts counts the Keeper's streams that ended during the run (it starts another after 1 s).
	StreamRestarts int `json:"streamRestarts"`
	// The check: every acknowledged write (AcknowledgedWrites, the load and the stop together) was found in the
	// server the archive was replayed into, ReplayedSegments in ReplaySeconds.
	AcknowledgedWrites int     `json:"acknowledgedWrites"`
	MissingWrites      int     `json:"missingWrites"`
	ReplayedSegments   int     `json:"replayedSegments"`
	ReplaySeconds      float64 `json:"replaySeconds"`
}

// Summary is the median over the runs of each run's figure.
type Summary struct {
	RecoveryPointAge     Percentiles `json:"recoveryPointAgeSeconds"`
	StoredPositionAge    Percentiles `json:"storedPositionAgeSeconds"`
	CommitsPerSecond     float64     `json:"commitsPerSecond"`
	BinlogBytesPerSecond float64     `json:"binlogBytesPerSecond"`
	Segments             float64     `json:"segments"`
	StoredBytes          float64     `json:"storedBytes"`
	CompressionRatio     float64     `json:"compressionRatio"`
	SegmentStore         Percentiles `json:"segmentStoreSeconds"`
	CatchUpSeconds       float64     `json:"catchUpSeconds"`
}
