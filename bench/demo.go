package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/mysqlfleet/mysqlfleet/bench/machine"
)

// The README's quick start gives how long `make demo` takes, cold (a machine where nothing was built yet) and warm
// (the tools and the Go build cache from an earlier run): `make demo-time` runs it under GNU time and records
// what time printed as bench/results/demo-<timestamp>.json (go run ./bench -demo-record KIND=LOG), and the
// README's figures are generated from that JSON like the tables of docs/benchmarks.md.

// DemoResults is one timed `make demo`.
type DemoResults struct {
	// Timestamp is when the run started: when time's output was written, less the elapsed time.
	Timestamp string       `json:"timestamp"`
	Host      machine.Host `json:"host"`
	// Kind is cold (nothing built yet: the Kubernetes binaries, the Go build cache) or warm.
	Kind    string  `json:"kind"`
	Seconds float64 `json:"seconds"`
	// UserSeconds, SystemSeconds and MaxRSSMiB are GNU time's, over make and the processes it waited for: the
	// builds, not the fleet's servers and control planes, which the demo leaves running.
	UserSeconds   float64 `json:"userSeconds"`
	SystemSeconds float64 `json:"systemSeconds"`
	MaxRSSMiB     float64 `json:"maxResidentMiB"`
	ExitStatus    int     `json:"exitStatus"`
	// Note says what else the machine did meanwhile, when it was not idle.
	Note string `json:"note,omitempty"`
}

var gnuTime = map[string]*regexp.Regexp{
	"elapsed": regexp.MustCompile(`Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([0-9:.]+)`),
	"user":    regexp.MustCompile(`User time \(seconds\): ([0-9.]+)`),
	"system":  regexp.MustCompile(`System time \(seconds\): ([0-9.]+)`),
	"rss":     regexp.MustCompile(`Maximum resident set size \(kbytes\): ([0-9]+)`),
	"status":  regexp.MustCompile(`Exit status: ([0-9]+)`),
}

// parseGNUTime reads what `/usr/bin/time -v` printed.
func parseGNUTime(out string) (DemoResults, error) {
	var r DemoResults
	field := func(name string) (string, error) {
		m := gnuTime[name].FindStringSubmatch(out)
		if m == nil {
			return "", fmt.Errorf("no %q line in GNU time's output", name)
		}
		return m[1], nil
	}
	v, err := field("elapsed")
	if err != nil {
		return r, err
	}
	// h:mm:ss or m:ss.ss
	for _, part := range strings.Split(v, ":") {
		f, err := strconv.ParseFloat(part, 64)
		if err != nil {
			return r, fmt.Errorf("elapsed %q: %w", v, err)
		}
		r.Seconds = r.Seconds*60 + f
	}
	for name, dst := range map[string]*float64{"user": &r.UserSeconds, "system": &r.SystemSeconds, "rss": &r.MaxRSSMiB} {
		v, err := field(name)
		if err != nil {
			return r, err
		}
		if *dst, err = strconv.ParseFloat(v, 64); err != nil {
			return r, err
		}
	}
	r.MaxRSSMiB /= 1024
	if v, err = field("status"); err != nil {
		return r, err
	}
	r.ExitStatus, err = strconv.Atoi(v)
	return r, err
}

// recordDemo writes a DemoResults from a GNU time output file to dir as demo-<timestamp>.json; the README shows
// the newest run of each kind.
func recordDemo(kind, logPath, note, dir string) error {
	if kind != "cold" && kind != "warm" {
		return fmt.Errorf("the kind of a demo run is cold or warm, not %q", kind)
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		return err
	}
	st, err := os.Stat(logPath)
	if err != nil {
		return err
	}
	r, err := parseGNUTime(string(data))
	if err != nil {
		return fmt.Errorf("%s: %w", logPath, err)
	}
	if r.ExitStatus != 0 {
		return fmt.Errorf("%s: make demo failed (exit status %d): nothing recorded", logPath, r.ExitStatus)
	}
	r.Kind, r.Note = kind, note
	r.Host = machine.Now()
	r.Host.LoadStart = [3]float64{} // the load now is not the run's
	r.Timestamp = st.ModTime().Add(-time.Duration(r.Seconds * float64(time.Second))).UTC().Format("20060102T150405Z")
	out, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	name := filepath.Join(dir, demoPrefix+r.Timestamp+".json")
	if err := os.WriteFile(name, append(out, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Println("recorded", name)
	return nil
}

// demoSection is the README's sentence on the demo's times: the newest run of each kind.
func (recs *records) demoSection(b *strings.Builder) {
	newest := map[string]*DemoResults{}
	for _, rec := range recs.demo {
		newest[rec.r.Kind] = rec.r // sorted oldest first
	}
	cold, warm := newest["cold"], newest["warm"]
	if cold == nil && warm == nil {
		b.WriteString("No timed run is recorded (`make demo-time`).\n")
		return
	}
	var runs []string
	for _, r := range []*DemoResults{cold, warm} {
		if r == nil {
			continue
		}
		what := "a warm run (tools and Go build cache from an earlier one)"
		if r.Kind == "cold" {
			what = "a cold run (nothing built yet: every Kubernetes binary and the Go build cache)"
		}
		day := r.Timestamp
		if t, err := time.Parse("20060102T150405Z", r.Timestamp); err == nil {
			day = t.Format("2006-01-02")
		}
		run := fmt.Sprintf("%s took **%s** on %d cores (%s)", what, minutes(r.Seconds), r.Host.Cores, day)
		if r.Note != "" {
			run += ", " + r.Note
		}
		runs = append(runs, run)
	}
	fmt.Fprintf(b, "Timed from `bench/results/demo-*.json` (`make demo-time`): %s.\n", strings.Join(runs, "; "))
}

func minutes(s float64) string {
	m := int(s) / 60
	if m == 0 {
		return fmt.Sprintf("%.0f s", s)
	}
	return fmt.Sprintf("%d min %02d s", m, int(s)%60)
}
