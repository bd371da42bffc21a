package machine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// Every run recorded in bench/results reads into Host without losing a field, and a Host writes back exactly the
// keys and values its run wrote: the fleet, scale, failover and backup runs, each with its own shape of load.
func TestHostReadsAndWritesEveryRecordedRunAsItWas(t *testing.T) {
	g := NewWithT(t)
	files, err := filepath.Glob(filepath.Join("..", "results", "*.json"))
	g.Expect(err).NotTo(HaveOccurred())
	more, err := filepath.Glob(filepath.Join("..", "results", "*", "*.json"))
	g.Expect(err).NotTo(HaveOccurred())
	files = append(files, more...)
	g.Expect(len(files)).To(BeNumerically(">", 30), "the recorded runs")
	kinds := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		var run struct {
			Host json.RawMessage `json:"host"`
		}
		g.Expect(json.Unmarshal(data, &run)).To(Succeed(), f)
		var recorded map[string]any
		g.Expect(json.Unmarshal(run.Host, &recorded)).To(Succeed(), f)

		var h Host
		g.Expect(json.Unmarshal(run.Host, &h)).To(Succeed(), f)
		written, err := json.Marshal(h)
		g.Expect(err).NotTo(HaveOccurred())
		var rewritten map[string]any
		g.Expect(json.Unmarshal(written, &rewritten)).To(Succeed())
		g.Expect(rewritten).To(Equal(recorded), f)
		g.Expect(h.Cores).To(BeNumerically(">", 0), f)
		switch {
		case h.Gzip != "":
			kinds["backup"] = true
		case h.LoadStart != [3]float64{}:
			kinds["failover"] = true
		case h.Load1Start != 0:
			kinds["fleet"] = true
		}
	}
	g.Expect(kinds).To(HaveLen(3), "runs of every shape were read")
}
