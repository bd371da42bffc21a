package failover

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mysqlfleet/mysqlfleet/bench/machine"
)

func newResults(stamp string) *Results {
	r := &Results{
		Timestamp: stamp,
		Host:      machine.Now(),
		Writer: Writer{EndpointPoll: pollEvery.String(), WriteTimeout: flagWriteTimeout.String(),
			Warmup: flagWarmup.String(), Spread: spreadOf(*flagSpread)},
	}
	return r
}

func spreadOf(d time.Duration) string {
	switch {
	case d == 0:
		return "up to the poll interval"
	case d < 0:
		return "none"
	}
	return "up to " + d.String()
}

func controllerOf(e *env) Controller {
	t := e.timing
	return Controller{Defaults: t == productionTiming, PollInterval: t.PollInterval.String(), BusyInterval: t.BusyInterval.String(),
		StatusTimeout: t.StatusTimeout.String(), PassTimeout: t.PassTimeout.String(), MaxLag: t.MaxLag.String(),
		ReplicaConnectRetry: t.ReplicaConnectRetry.String(), LeaderElection: true}
}

func (r *Results) figures() []*Figure {
	var fs []*Figure
	for _, f := range []*Figure{r.Failover, r.Frozen, r.Switchover} {
		if f != nil {
			fs = append(fs, f)
		}
	}
	return fs
}

func (r *Results) lost() int {
	n := 0
	for _, f := range r.figures() {
		n += f.LostWrites
	}
	return n
}

// print writes the legend, the figures against their targets and every run's phases.
func (r *Results) print(out io.Writer) {
	c := r.Controller
	_, _ = fmt.Fprintf(out, "\nFailover and switchover on real servers: %s, 3 servers (a primary and two semi-sync replicas).\n",
		r.Host.MariaDB)
	settings := "cmd/member's defaults"
	if !c.Defaults {
		settings = "settings that are NOT cmd/member's defaults"
	}
	_, _ = fmt.Fprintf(out, "Member controller with %s: poll %s, busy %s, status timeout %s, max lag %s, "+
		"leader election on.\n", settings, c.PollInterval, c.BusyInterval, c.StatusTimeout, c.MaxLag)
	_, _ = fmt.Fprintf(out, "Writer: one autocommit INSERT at a time through <name>-primary's ready EndpointSlice endpoint "+
		"(listed every %s and after each failed write), as the application's account.\n", r.Writer.EndpointPoll)
	_, _ = fmt.Fprintf(out, "Load average (1, 5, 15 min) %s at start, %s at end, on %d cores.\n\n",
		fmtLoad(r.Host.LoadStart), fmtLoad(r.Host.LoadEnd), r.Host.Cores)

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	_, _ = fmt.Fprintln(tw, "figure\truns\tmin\tmedian\tmax\ttarget (median)\t\tacknowledged writes lost")
	for _, f := range r.figures() {
		verdict := "missed"
		if f.Met {
			verdict = "met"
		}
		_, _ = fmt.Fprintf(tw, "%s\t%d/%d\t%s\t%s\t%s\t≤ %gs\t%s\t%d\n", f.What, f.Completed, len(f.Runs),
			secs(f.MinSeconds), secs(f.MedianSeconds), secs(f.MaxSeconds), f.TargetSeconds, verdict, f.LostWrites)
	}
	_ = tw.Flush()

	for _, f := range r.figures() {
		if len(f.Runs) == 0 {
			continue
		}
		_, _ = fmt.Fprintf(out, "\n%s runs (seconds after the %s):\n", f.Runs[0].Kind, map[string]string{
			kindFailover: "kill", kindFrozen: "SIGSTOP", kindSwitchover: "annotation write"}[f.Runs[0].Kind])
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		head := []string{"run", "load1", "spread", "from", "to"}
		for _, p := range f.PhaseMedians {
			head = append(head, p.Name)
		}
		head = append(head, "gap", "acked", "failed", "lost", "semi-sync no_tx", "slice retries")
		_, _ = fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, run := range f.Runs {
			row := []string{strconv.Itoa(run.Index), fmt.Sprintf("%.1f", run.Load1), secs(run.SpreadSeconds), run.From,
				run.To}
			if run.Error != "" {
				row = append(row, "error: "+run.Error)
				_, _ = fmt.Fprintln(tw, strings.Join(row, "\t"))
				continue
			}
			for _, p := range run.Phases {
				row = append(row, secs(p.Seconds))
			}
			row = append(row, secs(run.GapSeconds), strconv.Itoa(run.Acknowledged), strconv.Itoa(run.FailedWrites),
				strconv.Itoa(run.Lost), fmt.Sprintf("%d/%d", run.SemiSyncBefore.NoTx, run.SemiSyncAfter.NoTx),
				strconv.Itoa(run.EndpointSliceRetries))
			_, _ = fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		row := []string{"median", "", "", "", ""}
		for _, p := range f.PhaseMedians {
			row = append(row, secs(p.Seconds))
		}
		_, _ = fmt.Fprintln(tw, strings.Join(row, "\t"))
		_ = tw.Flush()
	}
	_, _ = fmt.Fprintln(out)
}

func secs(s float64) string {
	if s < 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fs", s)
}

func fmtLoad(l [3]float64) string { return fmt.Sprintf("%.2f %.2f %.2f", l[0], l[1], l[2]) }

// write saves the results as <out>/failover-<timestamp>.json and <out>/failover-latest.json.
func (r *Results) write(out string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	for _, name := range []string{"failover-" + r.Timestamp + ".json", "failover-latest.json"} {
		if err := os.WriteFile(filepath.Join(out, name), data, 0o644); err != nil {
			return err
		}
	}
	fmt.Printf("results: %s\n", filepath.Join(out, "failover-"+r.Timestamp+".json"))
	return nil
}

// semiSync reads a primary's semi-sync counters and version as root.
func semiSync(dsn string) (SemiSync, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return SemiSync{}, err
	}
	defer func() { _ = db.Close() }()
	var s SemiSync
	if err := db.QueryRow("SELECT VERSION()").Scan(&s.Version); err != nil {
		return s, err
	}
	rows, err := db.Query("SHOW GLOBAL STATUS LIKE 'Rpl_semi_sync_master_%'")
	if err != nil {
		return s, err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return s, err
		}
		n, _ := strconv.ParseInt(value, 10, 64)
		switch strings.ToLower(name) {
		case "rpl_semi_sync_master_status":
			s.Status = value
		case "rpl_semi_sync_master_clients":
			s.Clients = int(n)
		case "rpl_semi_sync_master_yes_tx":
			s.YesTx = n
		case "rpl_semi_sync_master_no_tx":
			s.NoTx = n
		}
	}
	return s, rows.Err()
}

// ids are the ids the writer's table holds on a server.
func ids(dsn string) (map[int64]bool, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, err
	}
	defer func() { _ = db.Close() }()
	rows, err := db.Query("SELECT id FROM " + database + ".writes")
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	out := map[int64]bool{}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rows.Err()
}
