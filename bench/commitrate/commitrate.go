// Package commitrate is what the operator costs an application's commits (make bench-commit-kind,
// e2e/kind_commit_bench_test.go): commits per second through the primary's Service at 1 and 8 connections, on a
// set that mysqlfleet runs and on the same image's three servers wired by hand the same way (a StatefulSet, GTID
// replication, semi-synchronous AFTER_SYNC, the same durability options), in the same member and run. The client
// Pod's script and the judging of its output are here, plain, so that their rules are tested in make test.
package commitrate

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"

	"github.com/mysqlfleet/mysqlfleet/bench/machine"
	"github.com/mysqlfleet/mysqlfleet/bench/stats"
)

// Script is the client Pod's shell script: conns connections to $HOST as $DB_USER (with $client the image's
// client), each a client fed autocommit INSERTs into $SQL (id AUTO_INCREMENT, c INT) as fast as the server takes
// them; after warmup seconds it reads MAX(id) and the time, again window seconds later, and prints
// "rate A TA B TB" (ids and times in seconds since the epoch), then "done". Ids are handed out in commit order
// by single-row autocommit INSERTs, so B − A is the commits of the window, taken from the server itself: the
// statements queued in a client's pipe count only once committed. The writers run on until the Pod is deleted.
func Script(conns, warmup, window int) string {
	return fmt.Sprintf(`max() { "$client" --host="$HOST" --user="$DB_USER" -N -B -e "SELECT COALESCE(MAX(id), 0) FROM $SQL"; }
k=1
while [ "$k" -le %[1]d ]; do
  yes "INSERT INTO $SQL (c) VALUES ($k);" | "$client" --host="$HOST" --user="$DB_USER" >/dev/null 2>&1 &
  k=$((k + 1))
done
sleep %[2]d
a=$(max); ta=$(date +%%s.%%N)
sleep %[3]d
b=$(max); tb=$(date +%%s.%%N)
echo "rate $a $ta $b $tb"
echo done
wait`, conns, warmup, window)
}

var rateLine = regexp.MustCompile(`(?m)^rate ([0-9]+) ([0-9]+\.[0-9]+) ([0-9]+) ([0-9]+\.[0-9]+)$`)

// Parse reads the script's output: the commits of its window and the window's length in seconds. ok is false
// until the line is there, or when it is malformed (a read of MAX(id) failed).
func Parse(logs string) (commits int64, seconds float64, ok bool) {
	m := rateLine.FindStringSubmatch(logs)
	if m == nil {
		return 0, 0, false
	}
	a, _ := strconv.ParseInt(m[1], 10, 64)
	ta, _ := strconv.ParseFloat(m[2], 64)
	b, _ := strconv.ParseInt(m[3], 10, 64)
	tb, _ := strconv.ParseFloat(m[4], 64)
	if b < a || tb <= ta {
		return 0, 0, false
	}
	return b - a, tb - ta, true
}

// Sets of a run.
const (
	// HandWired is the same image's servers wired by hand.
	HandWired = "hand-wired"
	// Operator is a MySQLCluster of as many servers, run by mysqlfleet.
	Operator = "mysqlfleet"
)

// Results is one run of the bench.
type Results struct {
	Timestamp string       `json:"timestamp"`
	Host      machine.Host `json:"host"`
	Tier      string       `json:"tier"`
	Member    string       `json:"member"`
	// Nodes is how many nodes the member has.
	Nodes int `json:"nodes"`
	// Image is the database image both sets run.
	Image string `json:"image"`
	// Servers is how many servers each set has.
	Servers int `json:"servers"`
	// WarmupSeconds and WindowSeconds are the script's: how long the writers ran before the window, and the window.
	WarmupSeconds int `json:"warmupSeconds"`
	WindowSeconds int `json:"windowSeconds"`
	// HandWiredOptions are the hand-wired servers' mariadbd options.
	HandWiredOptions []string `json:"handWiredOptions"`
	// ControllerArgs are the member controller's arguments.
	ControllerArgs []string `json:"controllerArgs"`
	Samples        []Sample `json:"samples"`
	// Ratios are filled by Summarize: the operator's median over the hand-wired set's, per connection count.
	Ratios []Ratio `json:"ratios"`
}

// Sample is one window of one set at one connection count.
type Sample struct {
	Set         string  `json:"set"`
	Connections int     `json:"connections"`
	Trial       int     `json:"trial"`
	Commits     int64   `json:"commits"`
	Seconds     float64 `json:"seconds"`
	PerSecond   float64 `json:"perSecond"`
	Load1       float64 `json:"load1"`
	Error       string  `json:"error,omitempty"`
}

// Ratio compares the two sets at one connection count.
type Ratio struct {
	Connections int `json:"connections"`
	// HandWired and Operator are the medians of their samples' commits per second.
	HandWired float64 `json:"handWired"`
	Operator  float64 `json:"operator"`
	// Ratio is Operator / HandWired; Target the bound, Met whether Ratio reaches it.
	Ratio  float64 `json:"ratio"`
	Target float64 `json:"target"`
	Met    bool    `json:"met"`
}

// Target is the bound: the operator's set commits at least this share of the hand-wired set's rate.
const Target = 0.95

// Summarize fills Ratios from the samples without an error, for every connection count both sets have.
func (r *Results) Summarize() {
	rates := map[string]map[int][]float64{}
	var conns []int
	for _, s := range r.Samples {
		if s.Error != "" {
			continue
		}
		if rates[s.Set] == nil {
			rates[s.Set] = map[int][]float64{}
		}
		rates[s.Set][s.Connections] = append(rates[s.Set][s.Connections], s.PerSecond)
		if !slices.Contains(conns, s.Connections) {
			conns = append(conns, s.Connections)
		}
	}
	slices.Sort(conns)
	r.Ratios = nil
	for _, c := range conns {
		h, o := rates[HandWired][c], rates[Operator][c]
		if len(h) == 0 || len(o) == 0 {
			continue
		}
		ratio := Ratio{Connections: c, HandWired: stats.Median(h), Operator: stats.Median(o), Target: Target}
		if ratio.HandWired > 0 {
			ratio.Ratio = ratio.Operator / ratio.HandWired
		}
		ratio.Met = ratio.Ratio >= Target
		r.Ratios = append(r.Ratios, ratio)
	}
}
