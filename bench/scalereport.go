package main

import (
	"encoding/json"
	"fmt"
	"image/color"
	"io"
	"os"
	"path/filepath"
	"strings"
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
	Replicas     int     `json:"replicas"`
	IdleSeconds  float64 `json:"idleSeconds"`
	Workers      int     `json:"floorWorkersPerMember"`
	// ManagerProcs is every replica's GOMAXPROCS, PinTiers whether -pin-tiers ran; earlier runs lack both.
	ManagerProcs int  `json:"managerProcs,omitempty"`
	PinTiers     bool `json:"pinTiers,omitempty"`
}

// ScaleSize is one fleet size: a run with one replica and one with the sharded replicas, each on a fleet of its
// own.
type ScaleSize struct {
	Members int      `json:"members"`
	Single  ScaleRun `json:"singleReplica"`
	Sharded ScaleRun `json:"sharded"`
	// ConvergenceRatio is the sharded run's convergence over the single replica's; HeapRatio the largest
	// sharded replica's heap over the single replica's, both converged.
	ConvergenceRatio float64 `json:"convergenceRatio"`
	HeapRatio        float64 `json:"heapRatio"`
	// ClearSeconds is how long the single replica took to delete its run's MySQLClusters and their member
	// objects, between the two runs on the fleet.
	ClearSeconds float64 `json:"clearSeconds"`
}

// ScaleRun is one run of the scale profile.
type ScaleRun struct {
	Replicas    int     `json:"replicas"`
	Floor       Run     `json:"floor"`
	Convergence Run     `json:"convergence"`
	RatioFloor  float64 `json:"ratioToFloor"`
	Idle        Idle    `json:"idleWrites"`
	// Replica is each replica's memory with every member engaged (no MySQLCluster yet) and converged, and how
	// many members it works in.
	Replica  []ReplicaMem `json:"replicaMemory"`
	Takeover *Takeover    `json:"takeover,omitempty"`
}

type ReplicaMem struct {
	Identity string `json:"identity,omitempty"`
	Members  int    `json:"members"`
	// Owned names the members it works in, after the convergence.
	Owned     []string `json:"owned,omitempty"`
	Engaged   memStats `json:"engaged"`
	Converged memStats `json:"converged"`
}

// Takeover is a replica killed -9 on a converged fleet and its members taken over by the others.
type Takeover struct {
	Victim  string   `json:"victim"`
	Members []string `json:"members"`
	// ClaimedAfterSeconds is from the kill to the first claim taken over: the lease duration, give or take.
	ClaimedAfterSeconds float64 `json:"claimedAfterSeconds"`
	// CacheSyncSeconds is from the first claim until the new owners had synced their caches of every member
	// taken over (a cold sync: nothing of these members was cached there); VerifiedSeconds until they had
	// reconciled every MySQLCluster in each of them, that is verified every object there.
	CacheSyncSeconds float64 `json:"cacheSyncSeconds"`
	VerifiedSeconds  float64 `json:"verifiedSeconds"`
	Ratio            float64 `json:"ratioToCacheSync"`
	// OwnerRequests are the new owners' requests to the members taken over, by verb
	// (mysqlfleet_member_requests_total); MemberWrites and MemberGets what those members' API servers served
	// meanwhile: writes (Leases and Events aside), and GETs of single objects of the kinds mysqlfleet writes.
	OwnerRequests map[string]float64 `json:"ownerRequests"`
	MemberWrites  float64            `json:"memberWrites"`
	MemberGets    float64            `json:"memberGets"`
	Missing       int                `json:"membersNotVerified"`
	// Timeline is, per member taken over, when each step came, in seconds after the first claim (-1: never).
	Timeline map[string]TakeoverSteps `json:"timeline,omitempty"`
}

// TakeoverSteps are one member's steps in a takeover: its claim taken, its cache synced, its first pass ended
// (a MySQLCluster reconciled there) and every MySQLCluster reconciled there.
type TakeoverSteps struct {
	Claimed   float64 `json:"claimed"`
	Synced    float64 `json:"synced"`
	FirstPass float64 `json:"firstPass"`
	Verified  float64 `json:"verified"`
}

func (r ScaleRun) heapMiB() float64 {
	var t float64
	for _, m := range r.Replica {
		t += float64(m.Converged.HeapInuseBytes)
	}
	return t / mib
}

func (r ScaleRun) maxHeapMiB() float64 {
	var most float64
	for _, m := range r.Replica {
		most = max(most, float64(m.Converged.HeapInuseBytes)/mib)
	}
	return most
}

func (r ScaleRun) maxRSSMiB() float64 {
	var most float64
	for _, m := range r.Replica {
		most = max(most, float64(m.Converged.RSSBytes)/mib)
	}
	return most
}

func (s *ScaleSize) summarize() {
	s.ConvergenceRatio = ratio(s.Sharded.Convergence.TotalSeconds, s.Single.Convergence.TotalSeconds)
	s.HeapRatio = ratio(s.Sharded.maxHeapMiB(), s.Single.heapMiB())
}

// evaluate judges the targets on the largest fleet (heap) and on every size (the rest).
func (r *ScaleResults) evaluate() {
	add := func(name, target, value string, met, skip bool) {
		r.Targets = append(r.Targets, Target{Name: name, Target: target, Value: value, Met: met, Skip: skip})
	}
	if len(r.Sizes) == 0 {
		return
	}
	for _, s := range r.Sizes {
		add(fmt.Sprintf("convergence, %d replicas vs 1, %d members", r.Params.Replicas, s.Members), "<= 1.00x",
			fmt.Sprintf("%.2fx (%.2fs vs %.2fs)", s.ConvergenceRatio, s.Sharded.Convergence.TotalSeconds, s.Single.Convergence.TotalSeconds),
			s.ConvergenceRatio > 0 && s.ConvergenceRatio <= 1, s.ConvergenceRatio == 0)
	}
	last := r.Sizes[len(r.Sizes)-1]
	add(fmt.Sprintf("heap per replica, %d replicas vs 1, %d members", r.Params.Replicas, last.Members), "<= 0.45x",
		fmt.Sprintf("%.2fx (%.1f vs %.1f MiB)", last.HeapRatio, last.Sharded.maxHeapMiB(), last.Single.heapMiB()),
		last.HeapRatio > 0 && last.HeapRatio <= 0.45, last.HeapRatio == 0)
	for _, s := range r.Sizes {
		t := s.Sharded.Takeover
		if t == nil {
			add(fmt.Sprintf("takeover vs cold cache sync, %d members", s.Members), "<= 1.50x", "not measured", false, true)
			continue
		}
		add(fmt.Sprintf("takeover vs cold cache sync, %d members", s.Members), "<= 1.50x",
			fmt.Sprintf("%.2fx (%.2fs vs %.2fs)", t.Ratio, t.VerifiedSeconds, t.CacheSyncSeconds), t.Ratio > 0 && t.Ratio <= 1.5 && t.Missing == 0, false)
		writes := t.MemberWrites + t.OwnerRequests["create"] + t.OwnerRequests["update"] + t.OwnerRequests["patch"] +
			t.OwnerRequests["apply"] + t.OwnerRequests["delete"]
		add(fmt.Sprintf("takeover writes and single-object GETs, %d members", s.Members), "0 and 0",
			fmt.Sprintf("%.0f and %.0f", writes, t.OwnerRequests["get"]), writes == 0 && t.OwnerRequests["get"] == 0, false)
	}
	for _, s := range r.Sizes {
		for _, run := range []ScaleRun{s.Single, s.Sharded} {
			idle := run.Idle.HubWrites + run.Idle.MemberWrites
			add(fmt.Sprintf("idle writes, %d members, %d replicas", s.Members, run.Replicas), "0", fmt.Sprintf("%.0f", idle),
				idle == 0, run.Idle.WindowSeconds == 0)
		}
	}
}

const scaleLegend = `How to read this (scale profile):
  each size is one fleet of that many bare members: first the floor (the same objects by one Go client per member,
  8 concurrent server-side applies), then one manager replica (unsharded) converges -clusters MySQLClusters, they
  are deleted, and the sharded replicas converge as many others. convergence: the first MySQLCluster created until
  every object exists in every member. heap: HeapInuse after a GC, per replica, converged; the sharded ratio takes
  the largest replica.
  takeover: the replica working in the most members of the converged sharded fleet is killed -9; claimed is the
  lease running out; from the first claim, the caches of the members taken over are synced (a cold sync) and then
  every object there verified (every MySQLCluster reconciled there again). requests: the new owners' to those
  members by verb; member writes and GETs: what those members' API servers served meanwhile.`

func printScale(out io.Writer, r *ScaleResults) {
	w := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	_, _ = fmt.Fprintf(w, "SCALE\tmembers\tobjects\tfloor\t1 replica\t%d replicas\tratio\theap 1 (MiB)\theap max/%d (MiB)\tRSS 1 / max (MiB)\n",
		r.Params.Replicas, r.Params.Replicas)
	for _, s := range r.Sizes {
		var shares []string
		for _, m := range s.Sharded.Replica {
			shares = append(shares, fmt.Sprintf("%s %d", m.Identity, m.Members))
		}
		_, _ = fmt.Fprintf(w, "\t%d\t%d\t%s\t%s (%.2fx)\t%s (%.2fx)\t%.2fx\t%.1f\t%.1f (%.2fx)\t%.1f / %.1f\n",
			s.Members, s.Single.Convergence.Objects, fmtSec(s.Single.Floor.TotalSeconds),
			fmtSec(s.Single.Convergence.TotalSeconds), s.Single.RatioFloor, fmtSec(s.Sharded.Convergence.TotalSeconds),
			s.Sharded.RatioFloor, s.ConvergenceRatio, s.Single.heapMiB(), s.Sharded.maxHeapMiB(), s.HeapRatio,
			s.Single.maxRSSMiB(), s.Sharded.maxRSSMiB())
		_, _ = fmt.Fprintf(w, "\t\tshares: %s\n", strings.Join(shares, ", "))
	}
	_, _ = fmt.Fprintln(w)
	_, _ = fmt.Fprintln(w, "TAKEOVER\tmembers\tvictim (members)\tclaimed after\tcache sync\tverified\tratio\towner requests\tmember writes / GETs")
	for _, s := range r.Sizes {
		if t := s.Sharded.Takeover; t != nil {
			_, _ = fmt.Fprintf(w, "\t%d\t%s (%d)\t%s\t%s\t%s\t%.2fx\t%s\t%.0f / %.0f\n", s.Members, t.Victim, len(t.Members),
				fmtSec(t.ClaimedAfterSeconds), fmtSec(t.CacheSyncSeconds), fmtSec(t.VerifiedSeconds), t.Ratio,
				fmtCounters(t.OwnerRequests), t.MemberWrites, t.MemberGets)
		}
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
	var single, largest, total, floor, one, sharded plotter.XYs
	for _, s := range r.Sizes {
		x := float64(s.Members)
		single = append(single, plotter.XY{X: x, Y: s.Single.heapMiB()})
		largest = append(largest, plotter.XY{X: x, Y: s.Sharded.maxHeapMiB()})
		total = append(total, plotter.XY{X: x, Y: s.Sharded.heapMiB()})
		floor = append(floor, plotter.XY{X: x, Y: s.Single.Floor.TotalSeconds})
		one = append(one, plotter.XY{X: x, Y: s.Single.Convergence.TotalSeconds})
		sharded = append(sharded, plotter.XY{X: x, Y: s.Sharded.Convergence.TotalSeconds})
	}
	n := r.Params.Replicas
	blue, orange, grey := color.RGBA{R: 31, G: 119, B: 180, A: 255}, color.RGBA{R: 255, G: 127, B: 14, A: 255}, color.RGBA{R: 127, G: 127, B: 127, A: 255}
	if err := addLine(mem, "1 replica", single, blue, false); err != nil {
		return err
	}
	if err := addLine(mem, fmt.Sprintf("largest of %d sharded replicas", n), largest, orange, false); err != nil {
		return err
	}
	if err := addLine(mem, fmt.Sprintf("%d sharded replicas, summed", n), total, orange, true); err != nil {
		return err
	}
	if err := addLine(conv, "floor (Go server-side apply)", floor, grey, true); err != nil {
		return err
	}
	if err := addLine(conv, "1 replica", one, blue, false); err != nil {
		return err
	}
	if err := addLine(conv, fmt.Sprintf("%d sharded replicas", n), sharded, orange, false); err != nil {
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
