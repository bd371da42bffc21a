package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

const (
	benchmarksPage = "../docs/benchmarks.md"
	resultsDir     = "results"
)

// docs/benchmarks.md holds, between its markers, exactly the tables the JSON in bench/results makes: a run added,
// a figure edited by hand or a JSON changed fails here until the page is regenerated.
func TestBenchmarksPageIsGenerated(t *testing.T) {
	page, err := os.ReadFile(benchmarksPage)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkDocs(page, resultsDir, docSections); err != nil {
		t.Fatalf("docs/benchmarks.md is not what bench/results makes of it: %v", err)
	}
}

// The check notices a figure that differs from its JSON, and regenerating keeps the prose around the sections.
func TestCheckDocsFindsAFigureThatDiffersFromItsJSON(t *testing.T) {
	g := NewWithT(t)
	var skeleton strings.Builder
	skeleton.WriteString("# Benchmarks\n\nProse that stays.\n\n")
	for _, s := range docSections {
		skeleton.WriteString(beginMarker(s) + "\nstale\n" + endMarker(s) + "\n\nMore prose about " + s + ".\n\n")
	}
	page, err := renderDocs([]byte(skeleton.String()), resultsDir, docSections)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(page)).To(And(HavePrefix("# Benchmarks\n\nProse that stays.\n\n"), ContainSubstring("More prose about backup."),
		Not(ContainSubstring("stale"))))
	g.Expect(checkDocs(page, resultsDir, docSections)).To(Succeed())

	// The backup run's median runner / pipe ratio, as its JSON gives it, edited by hand.
	g.Expect(string(page)).To(ContainSubstring("| **0.90** |"))
	edited := strings.Replace(string(page), "| **0.90** |", "| **0.80** |", 1)
	g.Expect(checkDocs([]byte(edited), resultsDir, docSections)).To(MatchError(ContainSubstring("run make bench-docs")))

	// A run's JSON that the page does not show yet.
	dir := t.TempDir()
	copyResults(t, resultsDir, dir)
	data, err := os.ReadFile(filepath.Join(resultsDir, "backup-latest.json"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(dir, "backup-20991231T000000Z.json"),
		[]byte(strings.Replace(string(data), `"commit": "`, `"commit": "0000000`, 1)), 0o644)).To(Succeed())
	g.Expect(checkDocs(page, dir, docSections)).To(MatchError(ContainSubstring("backup-20991231T000000Z")))
}

// A page without a section's markers is refused rather than left as it is.
func TestRenderDocsRefusesAPageWithoutItsMarkers(t *testing.T) {
	_, err := renderDocs([]byte("# Benchmarks\n"), resultsDir, docSections)
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring(beginMarker(docSections[0]))))
}

// copyResults copies the JSON of from into to, keeping subdirectories.
func copyResults(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".json" {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(to, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The README's quick start gives the demo's times exactly as the newest recorded runs have them.
func TestReadmeDemoTimesAreGenerated(t *testing.T) {
	page, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if err := checkDocs(page, resultsDir, readmeSections); err != nil {
		t.Fatalf("README.md is not what bench/results makes of it: %v", err)
	}
}

// GNU time's report of a make demo becomes the run's figures.
func TestParseGNUTime(t *testing.T) {
	g := NewWithT(t)
	r, err := parseGNUTime("\tCommand being timed: \"make demo\"\n\tUser time (seconds): 675.29\n\tSystem time (seconds): 168.43\n" +
		"\tElapsed (wall clock) time (h:mm:ss or m:ss): 15:11.62\n\tMaximum resident set size (kbytes): 1969588\n\tExit status: 0\n")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Seconds).To(BeNumerically("~", 911.62, 1e-6))
	g.Expect(r.UserSeconds + r.SystemSeconds).To(BeNumerically("~", 843.72, 1e-6))
	g.Expect(r.MaxRSSMiB).To(BeNumerically("~", 1923.43, 0.01))
	r, err = parseGNUTime("\tElapsed (wall clock) time (h:mm:ss or m:ss): 1:02:03\n\tUser time (seconds): 1\n\tSystem time (seconds): 1\n" +
		"\tMaximum resident set size (kbytes): 1\n\tExit status: 2\n")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Seconds).To(Equal(3723.0))
	g.Expect(r.ExitStatus).To(Equal(2))
	_, err = parseGNUTime("real 0m1.0s\n")
	g.Expect(err).To(MatchError(ContainSubstring("elapsed")))
}
