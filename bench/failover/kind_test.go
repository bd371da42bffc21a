package failover

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A failover's output: the old primary db-0 acknowledges until the fault at 100, writes fail, db-1 acknowledges
// from 103.5; a line cut off by the Pod's deletion is left out.
const failoverLog = `ack 1 99.10 db-0
ack 2 99.90 db-0
fail 3 100.50
fail 4 101.00
ack 5 103.50 db-1
ack 6 103.20 db-2
ack 7 104.00 db-1
ack 8 104.10`

func TestTallyTimesTheFirstWriteOfANewPrimaryAndTheGapBeforeIt(t *testing.T) {
	writes := ParseWrites(failoverLog)
	if len(writes) != 7 {
		t.Fatalf("parsed %d writes, want 7 (the cut-off line left out): %+v", len(writes), writes)
	}
	var r Run
	acked := r.Tally(writes, 100, "db-0", "")
	if r.Error != "" || r.To != "db-2" || !near(r.Seconds, 3.2) || !near(r.GapSeconds, 3.3) {
		t.Errorf("to %s after %.2fs, gap %.2fs (%s); want db-2 after 3.20s (its write returned first), gap 3.30s",
			r.To, r.Seconds, r.GapSeconds, r.Error)
	}
	if !slices.Equal(acked, []int64{1, 2, 5, 6, 7}) || r.Acknowledged != 5 || r.FailedWrites != 2 || r.OldPrimaryAcks != 0 {
		t.Errorf("acknowledged %v (%d), failed %d, old primary's %d", acked, r.Acknowledged, r.FailedWrites, r.OldPrimaryAcks)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestTallyCountsTheOldPrimarysWritesAfterTheNewOnesFirst(t *testing.T) {
	var r Run
	r.Tally(ParseWrites(failoverLog+"\nack 9 105.00 db-0"), 100, "db-0", "")
	if r.OldPrimaryAcks != 1 {
		t.Errorf("old primary's acknowledgements after db-2's first: %d, want 1", r.OldPrimaryAcks)
	}
}

func TestRecoveryOfASwitchoverIsTheTargetsFirstWrite(t *testing.T) {
	first := Recovery(ParseWrites(failoverLog), 100, "db-0", "db-1")
	if first == nil || first.Host != "db-1" || first.At != 103.5 {
		t.Errorf("recovery %+v, want db-1's write at 103.50", first)
	}
}

func TestRecoveryIsTheOldPrimaryBackOnlyAfterAFailedWrite(t *testing.T) {
	back := ParseWrites("ack 1 99.0 db-0\nack 2 100.2 db-0\nfail 3 101.0\nack 4 102.0 db-0")
	if got := Recovery(back, 100, "db-0", ""); got == nil || got.ID != 4 {
		t.Errorf("recovery %+v, want id 4: the old primary back after the failed write", got)
	}
	if got := Recovery(back[:2], 100, "db-0", ""); got != nil {
		t.Errorf("recovery %+v of writes that never failed, want none", got)
	}
	var r Run
	if r.Tally(back[:2], 100, "db-0", ""); r.Error == "" {
		t.Error("a run without a recovery has no error")
	}
}

// The writer script runs under sh with a stand-in client: each loop writes its own ids, one line per write.
func TestWriterScriptWritesDistinctIDsOnEveryConnection(t *testing.T) {
	dir := t.TempDir()
	client := filepath.Join(dir, "client")
	// The stand-in acknowledges every write as db-0, and records the ids it was asked to insert.
	if err := os.WriteFile(client, []byte("#!/bin/sh\nfor a; do case $a in -e) ;; *INSERT*) echo \"$a\" >>"+
		filepath.Join(dir, "sql")+";; esac; done\necho db-0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("timeout", "2", "sh", "-c", "client="+client+"\n"+WriterScript(3))
	cmd.Env = append(os.Environ(), "HOST=h", "DB_USER=u", "SQL=t")
	out, _ := cmd.Output()
	writes := ParseWrites(string(out))
	ids := Acknowledged(writes)
	if len(ids) < 6 {
		t.Fatalf("%d writes in 2 s: %s", len(ids), out)
	}
	seen := map[int64]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("id %d written twice", id)
		}
		seen[id] = true
	}
	for k := int64(1); k <= 3; k++ {
		if !seen[k] {
			t.Errorf("connection %d wrote nothing", k)
		}
	}
	sql, _ := os.ReadFile(filepath.Join(dir, "sql"))
	if !strings.Contains(string(sql), "INSERT INTO t VALUES (1); SELECT @@report_host") {
		t.Errorf("the statements sent: %s", sql)
	}
}
