package main

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/mysqlfleet/mysqlfleet/bench/machine"
)

// ScaleResults is what the scale profile measured: scale-<timestamp>.json.
type ScaleResults struct {
	Started  time.Time    `json:"started"`
	Finished time.Time    `json:"finished"`
	Host     machine.Host `json:"host"`
	Params   ScaleParams  `json:"params"`
	Sizes    []ScaleSize  `json:"sizes"`
	Targets  []Target     `json:"targets"`
	Plot     string       `json:"plot,omitempty"`
	Profiles string       `json:"profiles"`
	Errors   []string     `json:"errors,omitempty"`
}

type ScaleParams struct {
	// Members are the fleet sizes; Clusters the MySQLClusters of each run, every one placed on every member.
	Members      []int   `json:"members"`
	Clusters     int     `json:"clusters"`
	PerNamespace int     `json:"clustersPerNamespace"`
	IdleSeconds  float64 `json:"idleSeconds"`
	Workers      int     `json:"floorWorkersPerMember"`
	// ManagerProcs is the manager's GOMAXPROCS, PinTiers whether -pin-tiers ran; earlier runs lack both.
	ManagerProcs int  `json:"managerProcs,omitempty"`
	PinTiers     bool `json:"pinTiers,omitempty"`
}

// ScaleSize is one fleet size and the manager's run on it. Runs recorded until 2026-11-28 also hold a second run
// of several replicas, its ratios to this one and a takeover: those keys are left unread.
type ScaleSize struct {
	Members int      `json:"members"`
	Single  ScaleRun `json:"singleReplica"`
}

// ScaleRun is the manager's run on one fleet size.
type ScaleRun struct {
	Floor       Run     `json:"floor"`
	Convergence Run     `json:"convergence"`
	RatioFloor  float64 `json:"ratioToFloor"`
	Idle        Idle    `json:"idleWrites"`
	// Memory is the manager's with every member engaged (no MySQLCluster yet) and converged: one entry, in a list
	// as the JSON of earlier runs has it.
	Memory []ReplicaMem `json:"replicaMemory"`
}

type ReplicaMem struct {
	Engaged   memStats `json:"engaged"`
	Converged memStats `json:"converged"`
}

// converged is the manager's memory once converged.
func (r ScaleRun) converged() memStats {
	if len(r.Memory) == 0 {
		return memStats{}
	}
	return r.Memory[0].Converged
}

func (r ScaleRun) heapMiB() float64 { return float64(r.converged().HeapInuseBytes) / mib }

func (r ScaleRun) rssMiB() float64 { return float64(r.converged().RSSBytes) / mib }

// evaluate judges the idle writes of every size.
func (r *ScaleResults) evaluate() {
	for _, s := range r.Sizes {
		idle := s.Single.Idle.HubWrites + s.Single.Idle.MemberWrites
		r.Targets = append(r.Targets, Target{Name: fmt.Sprintf("idle writes, %d members", s.Members), Target: "0",
			Value: fmt.Sprintf("%.0f", idle), Met: idle == 0, Skip: s.Single.Idle.WindowSeconds == 0})
	}
}

const scaleLegend = `How to read this (scale profile):
  each size is one fleet of that many bare members: first the floor (the same objects by one Go client per member,
  8 concurrent server-side applies), then the manager converges -clusters MySQLClusters. convergence: the first
  MySQLCluster created until every object exists in every member. heap: HeapInuse after a GC, converged.`

func printScale(out io.Writer, r *ScaleResults) {
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "SCALE\tmembers\tobjects\tfloor\tmysqlfleet\theap (MiB)\tRSS (MiB)\thub writes")
	for _, s := range r.Sizes {
		run := s.Single
		_, _ = fmt.Fprintf(w, "\t%d\t%d\t%s\t%s (%.2fx)\t%.1f\t%.1f\t%.0f\n", s.Members, run.Convergence.Objects,
			fmtSec(run.Floor.TotalSeconds), fmtSec(run.Convergence.TotalSeconds), run.RatioFloor, run.heapMiB(),
			run.rssMiB(), run.Convergence.HubWrites)
	}
	_, _ = fmt.Fprintln(w)
	_, _ = fmt.Fprintln(w, "TARGETS\tvalue\ttarget\t")
	for _, t := range r.Targets {
		verdict := "met"
		switch {
		case t.Skip:
			verdict = "not measured"
		case !t.Met:
			verdict = "MISSED"
		}
		_, _ = fmt.Fprintf(w, "  %s\t%s\t%s\t%s\n", t.Name, t.Value, t.Target, verdict)
	}
	for _, e := range r.Errors {
		_, _ = fmt.Fprintf(w, "ERROR\t%s\n", e)
	}
	_ = w.Flush()
}

func writeScaleJSON(dir, stamp string, r *ScaleResults) (string, error) {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", err
	}
	data = append(data, '\n')
	path := filepath.Join(dir, "scale-"+stamp+".json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", err
	}
	return path, os.WriteFile(filepath.Join(dir, "scale-latest.json"), data, 0o644)
}

// plotScale draws the manager's memory and the convergence time against the number of members, side by side.
func plotScale(r *ScaleResults, path string) error {
	if len(r.Sizes) == 0 {
		return fmt.Errorf("nothing measured")
	}
	mem, conv := plot.New(), plot.New()
	mem.Title.Text = "Manager heap, converged"
	mem.X.Label.Text, mem.Y.Label.Text = "members", "MiB (HeapInuse after GC)"
	conv.Title.Text = "Convergence"
	conv.X.Label.Text, conv.Y.Label.Text = "members", "seconds"
	var heap, floor, conv1 plotter.XYs
	for _, s := range r.Sizes {
		x := float64(s.Members)
		heap = append(heap, plotter.XY{X: x, Y: s.Single.heapMiB()})
		floor = append(floor, plotter.XY{X: x, Y: s.Single.Floor.TotalSeconds})
		conv1 = append(conv1, plotter.XY{X: x, Y: s.Single.Convergence.TotalSeconds})
	}
	blue, grey := color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.RGBA{R: 127, G: 127, B: 127, A: 255}
	if err := addLine(mem, "manager", heap, blue, false); err != nil {
		return err
	}
	if err := addLine(conv, "floor (Go server-side apply)", floor, grey, true); err != nil {
		return err
	}
	if err := addLine(conv, "mysqlfleet", conv1, blue, false); err != nil {
		return err
	}
	for _, p := range []*plot.Plot{mem, conv} {
		p.Legend.Top, p.Legend.Left = true, true
		p.X.Min, p.Y.Min = 0, 0
		p.Add(plotter.NewGrid())
	}
	img := vgimg.New(12*vg.Inch, 4.5*vg.Inch)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Inch / 4, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	canvases := plot.Align([][]*plot.Plot{{mem, conv}}, tiles, dc)
	mem.Draw(canvases[0][0])
	conv.Draw(canvases[0][1])
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// addLine adds a line with its points and a legend entry; dashed for a reference line.
func addLine(p *plot.Plot, name string, xys plotter.XYs, c color.Color, dashed bool) error {
	l, pts, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	l.Color, pts.Color = c, c
	l.Width = vg.Points(1.5)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	}
	p.Add(l, pts)
	p.Legend.Add(name, l, pts)
	return nil
}
