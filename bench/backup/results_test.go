package backup

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/mysqlfleet/mysqlfleet/bench/stats"
)

func (r *Results) summarize() {
	var dump []float64
	for _, run := range r.Runs {
		dump = append(dump, float64(run.RunnerBackup.DumpBytes))
	}
	mib := stats.Median(dump) / (1 << 20)
	sum := func(plain, runner func(Run) Timing) Summary {
		var p, q, paired []float64
		for _, run := range r.Runs {
			p, q = append(p, plain(run).Seconds), append(q, runner(run).Seconds)
			paired = append(paired, runner(run).Seconds/plain(run).Seconds)
		}
		s := Summary{PlainMedianSeconds: stats.Median(p), RunnerMedianSeconds: stats.Median(q), PairedRatios: paired}
		if s.PlainMedianSeconds > 0 && s.RunnerMedianSeconds > 0 {
			s.Ratio = s.RunnerMedianSeconds / s.PlainMedianSeconds
			s.Met = s.Ratio <= r.Target
			s.PlainMiBps, s.RunnerMiBps = mib/s.PlainMedianSeconds, mib/s.RunnerMedianSeconds
		}
		return s
	}
	r.Backup = sum(func(x Run) Timing { return x.PlainBackup }, func(x Run) Timing { return x.RunnerBackup })
	r.Restore = sum(func(x Run) Timing { return x.PlainRestore }, func(x Run) Timing { return x.RunnerRestore })
}

func (r *Results) print(w io.Writer) {
	_, _ = fmt.Fprintf(w, "\nDatabase: %d tables, %d rows, %.2f GiB on disk; dump %.2f GiB, stored %.0f MiB "+
		"(runner) / %.0f MiB (pipe). %d runs, %d cores, load %.1f at start, %.1f at end.\n",
		r.Database.Tables, r.Database.Rows, gib(r.Database.OnDiskBytes), gib(r.Runs[0].RunnerBackup.DumpBytes),
		float64(r.Runs[0].RunnerBackup.StoredBytes)/(1<<20), float64(r.Runs[0].PlainBackup.StoredBytes)/(1<<20),
		len(r.Runs), r.Host.Cores, r.Host.LoadStart[0], r.Host.LoadEnd[0])
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "\tpipe median\trunner median\trunner/pipe\tpaired ratios\tpipe MiB/s\trunner MiB/s\ttarget ≤1.10")
	for _, row := range []struct {
		name string
		s    Summary
	}{{"backup", r.Backup}, {"restore", r.Restore}} {
		met := "met"
		if !row.s.Met {
			met = "MISSED"
		}
		_, _ = fmt.Fprintf(tw, "%s\t%.1f s\t%.1f s\t%.3f\t%s\t%.1f\t%.1f\t%s\n", row.name, row.s.PlainMedianSeconds,
			row.s.RunnerMedianSeconds, row.s.Ratio, ratios(row.s.PairedRatios), row.s.PlainMiBps, row.s.RunnerMiBps, met)
	}
	_ = tw.Flush()
}

func ratios(xs []float64) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += " "
		}
		out += fmt.Sprintf("%.3f", x)
	}
	return out
}

func (r *Results) write() error { return writeResults("backup", r.Timestamp, r) }

// writeResults writes v as bench/results/KIND-TIMESTAMP.json and KIND-latest.json, and says where.
func writeResults(kind, timestamp string, v any) error {
	dir := resultsDir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	for _, name := range []string{kind + "-" + timestamp + ".json", kind + "-latest.json"} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("Results: %s\n", filepath.Join(dir, kind+"-"+timestamp+".json"))
	return nil
}
