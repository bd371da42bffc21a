package archive

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/backup"
)

// Each backup's window is what Replay accepts from its position: its last second is accepted and the one after
// it refused, for every backup, with the archive whole and with a segment missing; a time before the backup
// is outside the window.
func TestRecoverableAgreesWithReplay(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	// Segment i holds GTIDs 10(i-1)+1 .. 10i, logged from second 10(i-1)+1 to 10i, closed 2 s after its last.
	var segs []Segment
	for i := 1; i <= 5; i++ {
		segs = append(segs, Segment{Name: name(i), Start: pos(10 * (i - 1)), End: pos(10 * i),
			FirstEventTime: at(10*(i-1) + 1), LastEventTime: at(10 * i), ClosedTime: at(10*i + 2)})
	}
	backups := []backup.Manifest{
		{Name: "before-the-archive", GTIDPosition: "", EndTime: at(0)},
		{Name: "inside-segment-2", GTIDPosition: pos(15), EndTime: at(15)},
		{Name: "at-the-end-of-3", GTIDPosition: pos(30), EndTime: at(31)},
		{Name: "after-the-archive", GTIDPosition: pos(50), EndTime: at(60)},
	}
	whole := map[string]Window{
		"before-the-archive": {From: at(0), To: at(52), Until: pos(50)},
		"inside-segment-2":   {From: at(15), To: at(52), Until: pos(50)},
		"at-the-end-of-3":    {From: at(31), To: at(52), Until: pos(50)},
		"after-the-archive":  {From: at(60), To: at(60), Until: pos(50)},
	}
	// Segment 4 deleted: backups before it reach the end of segment 3 (its last event), the one after it is
	// cut from the archive from the start.
	gapped := append(append([]Segment{}, segs[:3]...), segs[4])
	cut := map[string]Window{
		"before-the-archive": {From: at(0), To: at(30), Until: pos(30)},
		"inside-segment-2":   {From: at(15), To: at(30), Until: pos(30)},
		"at-the-end-of-3":    {From: at(31), To: at(31), Until: pos(30)},
		"after-the-archive":  {From: at(60), To: at(60), Until: pos(50)},
	}
	for _, tc := range []struct {
		name string
		segs []Segment
		want map[string]Window
		gap  bool
	}{{"whole", segs, whole, false}, {"segment 4 missing", gapped, cut, true}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, b := range backups {
				w, err := Recoverable(b, tc.segs)
				if err != nil {
					t.Fatal(err)
				}
				want := tc.want[b.Name]
				if !w.From.Equal(want.From) || !w.To.Equal(want.To) || w.Until != want.Until {
					t.Errorf("%s: window %s to %s until %s, want %s to %s until %s", b.Name, w.From, w.To, w.Until,
						want.From, want.To, want.Until)
				}
				if gap := w.Gap != nil; gap != (tc.gap && b.Name != "after-the-archive") {
					t.Errorf("%s: gap %v", b.Name, w.Gap)
				}
				// The window's end is a target Replay takes from the backup; a second later is refused, unless
				// the window ends at the backup itself with no segment after it.
				if _, err := choose(tc.segs, ReplayOptions{From: b.GTIDPosition, UntilTime: w.To}); err != nil &&
					w.To.After(w.From) {
					t.Errorf("%s: Replay refuses the window's end %s: %v", b.Name, w.To, err)
				}
				if _, err := choose(tc.segs, ReplayOptions{From: b.GTIDPosition, UntilTime: w.To.Add(time.Second)}); w.Until != b.GTIDPosition &&
					!errors.Is(err, ErrGap) && !errors.Is(err, ErrBeyondArchive) {
					t.Errorf("%s: Replay takes %s, past the window's end: %v", b.Name, w.To.Add(time.Second), err)
				}
				if _, err := choose(tc.segs, ReplayOptions{From: b.GTIDPosition, UntilGTID: w.Until}); err != nil {
					t.Errorf("%s: Replay refuses the window's position %s: %v", b.Name, w.Until, err)
				}
			}
		})
	}
	if _, err := Recoverable(backup.Manifest{Name: "mysql", GTIDPosition: "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5"}, segs); err == nil {
		t.Error("a MySQL GTID set was read as a MariaDB position")
	}
}

func name(i int) string { return fmt.Sprintf("%012d", i) }

// pos is the position after the first seq transactions of domain 0, server 1.
func pos(seq int) string {
	if seq == 0 {
		return ""
	}
	return fmt.Sprintf("0-1-%d", seq)
}
