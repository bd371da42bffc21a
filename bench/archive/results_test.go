package archive

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"text/tabwriter"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	. "github.com/onsi/gomega"

	"github.com/mysqlfleet/mysqlfleet/bench/stats"
)

// percentiles are the nearest-rank p50 and p99 of xs, and their maximum; zeros for none.
func percentiles(xs []float64) Percentiles {
	if len(xs) == 0 {
		return Percentiles{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := func(p float64) float64 { return s[max(int(math.Ceil(p*float64(len(s))))-1, 0)] }
	return Percentiles{P50: rank(0.50), P99: rank(0.99), Max: s[len(s)-1]}
}

// sample is one look at the archive during the load.
type sample struct {
	// posAt is when the primary's gtid_binlog_pos was asked for, pos the answer: it holds every transaction
	// acknowledged before posAt.
	posAt time.Time
	pos   gomysql.GTIDSet
	// at is when the Keeper's Status was read, after the position; through is its ArchivedThrough, end the
	// position its newest stored segment ends at (nil before the first).
	at      time.Time
	through time.Time
	end     gomysql.GTIDSet
}

// recoveryPointAges are at less through of each sample, as the member controller counts them: from start (the
// load's) while through is older or unset.
func recoveryPointAges(ss []sample, start time.Time) []float64 {
	out := make([]float64, 0, len(ss))
	for _, s := range ss {
		through := s.through
		if through.Before(start) {
			through = start
		}
		out = append(out, max(s.at.Sub(through), 0).Seconds())
	}
	return out
}

// storedPositionAges are, for each sample, the time since the last sampled primary position that its stored
// end holds: everything acknowledged before that position was read is stored. Positions only grow, as do the
// ends, so one pass finds them; a sample whose end holds no position yet counts from the first.
func storedPositionAges(ss []sample) []float64 {
	out := make([]float64, 0, len(ss))
	held := -1
	for i, s := range ss {
		for held+1 <= i && s.end != nil && s.end.Contain(ss[held+1].pos) {
			held++
		}
		from := ss[0].posAt
		if held >= 0 {
			from = ss[held].posAt
		}
		out = append(out, max(s.at.Sub(from), 0).Seconds())
	}
	return out
}

func (r *Results) summarize() {
	med := func(f func(Run) float64) float64 {
		var xs []float64
		for _, run := range r.Runs {
			xs = append(xs, f(run))
		}
		return stats.Median(xs)
	}
	medP := func(f func(Run) Percentiles) Percentiles {
		return Percentiles{P50: med(func(x Run) float64 { return f(x).P50 }), P99: med(func(x Run) float64 { return f(x).P99 }),
			Max: med(func(x Run) float64 { return f(x).Max })}
	}
	r.Median = Summary{
		RecoveryPointAge:     medP(func(x Run) Percentiles { return x.RecoveryPointAge }),
		StoredPositionAge:    medP(func(x Run) Percentiles { return x.StoredPositionAge }),
		CommitsPerSecond:     med(func(x Run) float64 { return x.CommitsPerSecond }),
		BinlogBytesPerSecond: med(func(x Run) float64 { return x.BinlogBytesPerSecond }),
		Segments:             med(func(x Run) float64 { return float64(x.Segments) }),
		StoredBytes:          med(func(x Run) float64 { return float64(x.StoredBytes) }),
		CompressionRatio:     med(func(x Run) float64 { return x.CompressionRatio }),
		SegmentStore:         medP(func(x Run) Percentiles { return x.SegmentStore }),
		CatchUpSeconds:       med(func(x Run) float64 { return x.CatchUpSeconds }),
	}
}

func (r *Results) print(w io.Writer) {
	_, _ = fmt.Fprintf(w, "\n%d writers for %.0f s, segments closed at %.0f s or %d MiB, store %s. %d runs, %d cores, "+
		"load %.1f at start, %.1f at end.\n", r.Writers, r.LoadSeconds, r.MaxAgeSeconds, r.MaxSizeBytes>>20, r.Store,
		len(r.Runs), r.Host.Cores, r.Host.LoadStart[0], r.Host.LoadEnd[0])
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "run\tcommits/s\tbinlog MiB/s\tsegments\tstored MiB (ratio)\tstore p50/max\t"+
		"age p50/p99/max\tstored-position age p99/max\tcatch-up\treplay")
	row := func(name string, commits, binlog, segments, stored, ratio float64, store, age, pos Percentiles, catchUp float64,
		replay string) {
		_, _ = fmt.Fprintf(tw, "%s\t%.0f\t%.2f\t%.0f\t%.1f (%.1f×)\t%.2f / %.2f s\t%.2f / %.2f / %.2f s\t%.2f / %.2f s\t%.2f s\t%s\n",
			name, commits, binlog/(1<<20), segments, stored/(1<<20), ratio, store.P50, store.Max, age.P50, age.P99, age.Max,
			pos.P99, pos.Max, catchUp, replay)
	}
	for _, x := range r.Runs {
		row(fmt.Sprint(x.Index), x.CommitsPerSecond, x.BinlogBytesPerSecond, float64(x.Segments), float64(x.StoredBytes),
			x.CompressionRatio, x.SegmentStore, x.RecoveryPointAge, x.StoredPositionAge, x.CatchUpSeconds,
			fmt.Sprintf("%d of %d writes, %.1f s", x.AcknowledgedWrites-x.MissingWrites, x.AcknowledgedWrites, x.ReplaySeconds))
	}
	m := r.Median
	row("median", m.CommitsPerSecond, m.BinlogBytesPerSecond, m.Segments, m.StoredBytes, m.CompressionRatio,
		m.SegmentStore, m.RecoveryPointAge, m.StoredPositionAge, m.CatchUpSeconds, "")
	_ = tw.Flush()
}

// write saves the results as bench/results/archive-<timestamp>.json and archive-latest.json, and says where.
func (r *Results) write() error {
	dir := resultsDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	for _, name := range []string{"archive-" + r.Timestamp + ".json", "archive-latest.json"} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("Results: %s\n", filepath.Join(dir, "archive-"+r.Timestamp+".json"))
	return nil
}

// The latest recorded run reads back into Results with no field left over, and its medians are those of its
// runs: the page generated from it shows what the runs measured.
func TestLatestResultsAreTheirRunsMedians(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile(filepath.Join("..", "results", "archive-latest.json"))
	g.Expect(err).NotTo(HaveOccurred())
	var r Results
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	g.Expect(dec.Decode(&r)).To(Succeed())
	g.Expect(r.Runs).NotTo(BeEmpty())
	g.Expect(r.Host.Cores).To(BeNumerically(">", 0))
	for _, run := range r.Runs {
		g.Expect(run.MissingWrites).To(BeZero(), "a run that lost a write fails rather than being recorded")
		g.Expect(run.Samples).To(BeNumerically(">", 0))
		g.Expect(run.Segments).To(BeNumerically(">", 0))
	}
	recorded := r.Median
	r.summarize()
	g.Expect(r.Median).To(Equal(recorded))
}

func TestPercentilesAreNearestRank(t *testing.T) {
	g := NewWithT(t)
	var xs []float64
	for i := range 200 {
		xs = append(xs, float64(200-i)) // 200 … 1, unsorted
	}
	g.Expect(percentiles(xs)).To(Equal(Percentiles{P50: 100, P99: 198, Max: 200}))
	g.Expect(percentiles([]float64{3})).To(Equal(Percentiles{P50: 3, P99: 3, Max: 3}))
	g.Expect(percentiles(nil)).To(Equal(Percentiles{}))
}

// The ages at each sample: the Keeper's by its ArchivedThrough, and the stored position's by the last sampled
// primary position that the stored end holds, however far behind the stream is.
func TestAgesOfTheSamples(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	pos := func(seq int) gomysql.GTIDSet {
		s, err := gomysql.ParseMariadbGTIDSet(fmt.Sprintf("0-1-%d", seq))
		g.Expect(err).NotTo(HaveOccurred())
		return s
	}
	ss := []sample{
		{posAt: at(0), pos: pos(10), at: at(10), through: time.Time{}, end: pos(10)},
		{posAt: at(100), pos: pos(20), at: at(110), through: at(50), end: pos(10)},
		{posAt: at(200), pos: pos(30), at: at(210), through: at(50), end: pos(10)},
		// A segment ending between two sampled positions holds the earlier one.
		{posAt: at(300), pos: pos(40), at: at(310), through: at(250), end: pos(25)},
		{posAt: at(400), pos: pos(50), at: at(410), through: at(250), end: pos(50)},
	}
	g.Expect(recoveryPointAges(ss, t0)).To(Equal([]float64{0.01, 0.06, 0.16, 0.06, 0.16}))
	g.Expect(storedPositionAges(ss)).To(Equal([]float64{0.01, 0.11, 0.21, 0.21, 0.01}))
	// Before the stored end holds any sampled position, from the first.
	g.Expect(storedPositionAges([]sample{{posAt: at(0), pos: pos(10), at: at(10)}})).To(Equal([]float64{0.01}))
}
