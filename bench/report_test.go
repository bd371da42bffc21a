package main

import (
	"bytes"
	"testing"

	. "github.com/onsi/gomega"
)

func TestSpreadOf(t *testing.T) {
	for name, tc := range map[string]struct {
		in   []float64
		want Spread
	}{
		"none":                  {nil, Spread{}},
		"one":                   {[]float64{1.2}, Spread{1.2, 1.2, 1.2}},
		"odd count":             {[]float64{1.3, 1.0, 1.1}, Spread{1.0, 1.1, 1.3}},
		"even count: mean of 2": {[]float64{1.4, 1.0, 1.1, 1.2}, Spread{1.0, 1.15, 1.4}},
		"unmeasured left out":   {[]float64{0, 1.2, 1.0, 0}, Spread{1.0, 1.1, 1.2}},
	} {
		t.Run(name, func(t *testing.T) {
			NewWithT(t).Expect(spreadOf(tc.in)).To(Equal(tc.want))
		})
	}
}

func convergenceRun(ratioFloor, applyRatio, reconciles float64, errs map[string]float64) ConvergenceRun {
	return ConvergenceRun{
		MySQLFleet:      Run{TotalSeconds: 30 * ratioFloor, Manager: map[string]float64{"reconciles": reconciles}, ApplyErrors: errs},
		Floor:           Run{TotalSeconds: 30},
		RatioFloor:      ratioFloor,
		RatioKubectl:    ratioFloor / 1.6,
		ApplyRatioFloor: applyRatio,
	}
}

func target(g Gomega, r *Results, name string) Target {
	for _, t := range r.Targets {
		if t.Name == name {
			return t
		}
	}
	g.Expect(name).To(BeEmpty(), "no target named so")
	return Target{}
}

// Targets are judged on the median with the worst run beside it, and a run with rework says so.
func TestEvaluateJudgesTheMedianAndNamesRunsWithRework(t *testing.T) {
	g := NewWithT(t)
	r := &Results{Params: Params{Clusters: 100}}
	r.Convergence.Runs = []ConvergenceRun{
		convergenceRun(1.05, 1.2, 100, nil),
		convergenceRun(1.40, 2.5, 112, map[string]float64{"deadline": 3, "conflict": 1}),
		convergenceRun(1.10, 1.4, 100, nil),
	}
	r.Convergence.summarize()
	g.Expect(r.Convergence.HealthySeconds).To(BeNumerically("~", 33, 0.001))
	r.evaluate()

	median := target(g, r, "convergence vs floor (b), median")
	g.Expect(median.Met).To(BeTrue())
	g.Expect(median.Value).To(Equal("1.10x (worst run 1.40x)"))
	g.Expect(target(g, r, "convergence vs floor (b), worst run").Met).To(BeFalse())
	g.Expect(target(g, r, "member mean apply vs floor (b), median").Met).To(BeTrue())

	errs := target(g, r, "apply errors, healthy runs")
	g.Expect(errs.Met).To(BeFalse())
	g.Expect(errs.Value).To(Equal("run 2: 4 (conflict 1, deadline 3)"))
	reconciles := target(g, r, "reconciles per MySQLCluster, healthy runs")
	g.Expect(reconciles.Met).To(BeFalse())
	g.Expect(reconciles.Value).To(Equal("run 2: 112 for 100"))

	var out bytes.Buffer
	printTable(&out, r)
	g.Expect(out.String()).To(And(ContainSubstring("CONVERGENCE, run 3 of 3"), ContainSubstring("SPREAD over 3 runs"),
		ContainSubstring("apply errors: 4 (conflict 1, deadline 3)")))
}

// A clean set of runs meets the rework targets.
func TestEvaluateCleanRuns(t *testing.T) {
	g := NewWithT(t)
	r := &Results{Params: Params{Clusters: 100}}
	r.Convergence.Runs = []ConvergenceRun{convergenceRun(1.05, 1.2, 100, nil), convergenceRun(1.1, 1.3, 100, map[string]float64{})}
	r.Convergence.summarize()
	r.evaluate()
	g.Expect(target(g, r, "apply errors, healthy runs")).To(And(HaveField("Met", true), HaveField("Value", "0")))
	g.Expect(target(g, r, "reconciles per MySQLCluster, healthy runs")).To(And(HaveField("Met", true), HaveField("Value", "1")))
}
