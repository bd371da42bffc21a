package archive

import (
	"fmt"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mysqlfleet/mysqlfleet/internal/backup"
)

// Window is what a backup and the archive after it can restore to: any time from From to To, or any GTID
// position up to Until.
type Window struct {
	// Backup names the backup.
	Backup string `json:"backup"`
	// From is the earliest time a restore from the backup may stop at: when the backup was stored. Its snapshot
	// is from before then, and a restore cannot undo what the backup holds: a target before From needs an older
	// backup (Replay itself does not know when the server's position was taken, and would replay nothing).
	From time.Time `json:"from"`
	// To is the latest time the archive reaches from the backup, as Replay judges it: the last segment's closing
	// time when the archive goes on from the backup without a gap, else the last event before the gap. Until is
	// the GTID position the archive reaches (the backup's own when no segment follows it).
	To    time.Time `json:"to"`
	Until string    `json:"until"`
	// Gap, when set, is where the archive stops following on from the backup: nothing after it can be restored
	// from this backup.
	Gap *Gap `json:"gap,omitempty"`
}

// Recoverable is the window of backup b over the archive's segments segs (List's, oldest first). A time T in
// [From, To] or a GTID position up to Until is a target that Replay accepts from b's position.
func Recoverable(b backup.Manifest, segs []Segment) (Window, error) {
	w := Window{Backup: b.Name, From: b.EndTime, To: b.EndTime, Until: b.GTIDPosition}
	from, err := gomysql.ParseMariadbGTIDSet(b.GTIDPosition)
	if err != nil {
		return w, fmt.Errorf("backup %s at %q: %w", b.Name, b.GTIDPosition, err)
	}
	chained, _, gap, err := follow(segs, from, b.GTIDPosition, nil)
	if err != nil {
		return w, err
	}
	w.Gap = gap
	var to time.Time
	switch n := len(chained); {
	case n > 0 && w.Gap != nil:
		w.Until, to = chained[n-1].End, chained[n-1].LastEventTime
	case n > 0:
		w.Until, to = chained[n-1].End, segs[len(segs)-1].ClosedTime
	case w.Gap == nil && len(segs) > 0:
		// Every segment is in the backup: the archive says nothing was logged after it until its last closed.
		to = segs[len(segs)-1].ClosedTime
	}
	if to.After(w.To) {
		w.To = to
	}
	return w, nil
}
