package failover

import (
	"fmt"
	"regexp"
	"strconv"
)

// The failover bench on kind (e2e/kind_failover_bench_test.go, make bench-failover-kind) writes from a client Pod
// with the script below and judges each run from its output with the functions here, which are plain so that
// their rules are tested in make test.

// WriterScript is the client Pod's shell script: conns loops, each opening a connection per INSERT into $SQL
// through $HOST as $DB_USER (with $client the image's client), printing "ack ID UNIXTIME SERVER" when the server
// acknowledged the commit (SERVER is its @@report_host) and "fail ID UNIXTIME" otherwise (refused, broken off, or
// no answer within 5 s: the outcome is unknown). Loop k writes the ids k, k+conns, k+2·conns, ...; each line is
// one short write, so the loops' lines never interleave. It runs until the Pod is deleted.
func WriterScript(conns int) string {
	return fmt.Sprintf(`w() {
  k=$1; i=0
  while :; do
    id=$((i * %[1]d + k)); i=$((i + 1))
    if out=$(timeout 5 "$client" --host="$HOST" --user="$DB_USER" --connect-timeout=2 -N -B \
        -e "INSERT INTO $SQL VALUES ($id); SELECT @@report_host" 2>/dev/null) && [ -n "$out" ]; then
      echo "ack $id $(date +%%s.%%N) $out"
    else
      echo "fail $id $(date +%%s.%%N)"; sleep 0.2
    fi
  done
}
k=1; while [ "$k" -le %[1]d ]; do w $k & k=$((k + 1)); done
wait`, conns)
}

// Write is one line of the writer's output.
type Write struct {
	Ack bool
	ID  int64
	// At is when the client returned, in seconds since the epoch.
	At float64
	// Host is the server that acknowledged it; empty for a failed write.
	Host string
}

var writeLine = regexp.MustCompile(`(?m)^(ack|fail) ([0-9]+) ([0-9]+\.[0-9]+)(?: (\S+))?$`)

// ParseWrites reads the writer's output; a line cut off at the end (the Pod deleted while it wrote) is left out.
func ParseWrites(logs string) []Write {
	var out []Write
	for _, m := range writeLine.FindAllStringSubmatch(logs, -1) {
		if m[1] == "ack" && m[4] == "" {
			continue
		}
		id, _ := strconv.ParseInt(m[2], 10, 64)
		at, _ := strconv.ParseFloat(m[3], 64)
		out = append(out, Write{Ack: m[1] == "ack", ID: id, At: at, Host: m[4]})
	}
	return out
}

// Acknowledged are the ids of the acknowledged writes.
func Acknowledged(writes []Write) []int64 {
	var ids []int64
	for _, w := range writes {
		if w.Ack {
			ids = append(ids, w.ID)
		}
	}
	return ids
}

// Recovery is the write that ends a run: the first acknowledged after t0 by a server other than old (by target,
// when one is given: a switchover). Without one, the first that old acknowledged after a write failed after t0:
// the old primary came back as the primary (a restart faster than a failover). Nil when there is neither yet.
func Recovery(writes []Write, t0 float64, old, target string) *Write {
	var first, back *Write
	failedAt := -1.0
	for i := range writes {
		w := &writes[i]
		if w.At <= t0 {
			continue
		}
		switch {
		case !w.Ack:
			if failedAt < 0 || w.At < failedAt {
				failedAt = w.At
			}
		case w.Host != old && (target == "" || w.Host == target):
			if first == nil || w.At < first.At {
				first = w
			}
		}
	}
	if first != nil || target != "" || failedAt < 0 {
		return first
	}
	for i := range writes {
		w := &writes[i]
		if w.Ack && w.Host == old && w.At > failedAt && (back == nil || w.At < back.At) {
			back = w
		}
	}
	return back
}

// Tally records a run's writes in r: the recovery's server and time after t0, the gap before it, the counts, and
// the old primary's acknowledgements after the new primary's first (two writable servers). It returns the ids
// acknowledged, every one of which must be on r.To. r.Error is set when there is no recovery.
func (r *Run) Tally(writes []Write, t0 float64, old, target string) []int64 {
	first := Recovery(writes, t0, old, target)
	acked := Acknowledged(writes)
	r.Acknowledged = len(acked)
	for _, w := range writes {
		if !w.Ack {
			r.FailedWrites++
		}
	}
	if first == nil {
		r.Error = "no write acknowledged by a new primary"
		return acked
	}
	r.To, r.Seconds = first.Host, first.At-t0
	last := t0 // without an acknowledged write before it, the gap is counted from the fault
	for _, w := range writes {
		if w.Ack && w.At < first.At && (w.At > last || last == t0) {
			last = w.At
		}
		if w.Ack && w.Host == old && first.Host != old && w.At > first.At {
			r.OldPrimaryAcks++
		}
	}
	r.GapSeconds = first.At - last
	return acked
}
