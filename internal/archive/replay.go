package archive

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mysqlfleet/mysqlfleet/internal/backup"
)

// ErrGap is returned by Replay when the archive is not continuous between the server's position and the target:
// what lies in the gap is lost, and a roll forward across it would make a server that never existed.
var ErrGap = errors.New("the archive has a gap before the target")

// ErrBeyondArchive is returned by Replay for a target the archive does not reach (yet).
var ErrBeyondArchive = errors.New("the target is past the end of the archive")

// ReplayOptions of one roll forward.
type ReplayOptions struct {
	Store backup.Store
	// From is the GTID position the server stands at, such as a restored backup's: only transactions after it
	// are replayed.
	From string
	// UntilGTID (a GTID list, inclusive) or UntilTime (exclusive: transactions logged at or after it are not
	// replayed; the binary log dates events in whole seconds) is the target; neither means the archive's end.
	UntilGTID string
	UntilTime time.Time
	// Client loads SQL from its standard input into the server, as root, such as
	// mariadb --no-defaults --socket=... --user=root.
	Client []string
	// Binlog is mariadb-binlog's path; empty means on PATH.
	Binlog string
	// WorkDir holds the segments' binary logs while they are replayed; empty means the system's temporary
	// directory.
	WorkDir string
	// Stderr receives the tools' errors; may be nil.
	Stderr io.Writer
}

// Replay rolls a server forward from From to the target with the archive's segments: it chooses the segments
// that hold transactions after From, up to the one that reaches the target, refuses when they do not follow each
// other (ErrGap) or do not reach the target (ErrBeyondArchive), checks each against its manifest, and runs them
// through mariadb-binlog --start-position=From (and --stop-position or --stop-datetime) into Client. It returns
// the segments it replayed.
func Replay(ctx context.Context, o ReplayOptions) ([]Segment, error) {
	if o.UntilGTID != "" && !o.UntilTime.IsZero() {
		return nil, errors.New("replay until a GTID or until a time, not both")
	}
	if len(o.Client) == 0 {
		return nil, errors.New("no client to load the replay into")
	}
	all, err := List(ctx, o.Store)
	if err != nil {
		return nil, err
	}
	segs, err := choose(all, o)
	if err != nil {
		return nil, err
	}
	if len(segs) == 0 {
		return nil, nil
	}
	dir, err := os.MkdirTemp(o.WorkDir, "mysqlfleet-replay-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	args := []string{"--start-position=" + o.From}
	if o.From == "" {
		args = args[:0]
	}
	switch {
	case o.UntilGTID != "":
		args = append(args, "--stop-position="+o.UntilGTID)
	case !o.UntilTime.IsZero():
		// The tool reads the time in its local zone; it runs in UTC here.
		args = append(args, "--stop-datetime="+o.UntilTime.UTC().Format(time.DateTime))
	}
	for _, s := range segs {
		log, err := Open(ctx, o.Store, s)
		if err != nil {
			return nil, err
		}
		f := filepath.Join(dir, s.Name+".binlog")
		if err := os.WriteFile(f, log, 0o600); err != nil {
			return nil, err
		}
		args = append(args, f)
	}
	return segs, pipe(ctx, append([]string{cmp.Or(o.Binlog, "mariadb-binlog")}, args...), o.Client, o.Stderr)
}

// choose is the segments a replay from o.From to o's target needs, after checking that they are continuous.
func choose(all []Segment, o ReplayOptions) ([]Segment, error) {
	from, err := gomysql.ParseMariadbGTIDSet(o.From)
	if err != nil {
		return nil, fmt.Errorf("replay from %q: %w", o.From, err)
	}
	var until gomysql.GTIDSet
	if o.UntilGTID != "" {
		if until, err = gomysql.ParseMariadbGTIDSet(o.UntilGTID); err != nil {
			return nil, fmt.Errorf("replay until %q: %w", o.UntilGTID, err)
		}
		if from.Contain(until) {
			return nil, nil // the server is there already
		}
	}
	segs, reached, gap, err := follow(all, from, o.From, func(s Segment, end gomysql.GTIDSet) bool {
		return until != nil && end.Contain(until) || !o.UntilTime.IsZero() && !s.LastEventTime.Before(o.UntilTime)
	})
	switch {
	case err != nil:
		return nil, err
	case gap != nil && gap.After == "":
		return nil, fmt.Errorf("%w: the archive goes on from %s (segment %s), not from %s", ErrGap, gap.To,
			gap.Before, o.From)
	case gap != nil:
		return nil, fmt.Errorf("%w: %s", ErrGap, gap)
	case reached:
		return segs, nil
	}
	switch {
	case until != nil:
		return nil, fmt.Errorf("%w: it ends at %s, before %s", ErrBeyondArchive, lastEnd(all, o.From), o.UntilGTID)
	case !o.UntilTime.IsZero():
		// Transactions may still arrive for a time not yet archived: a target after the last archived
		// event is refused only when the archive could not tell it holds everything before it.
		if n := len(all); n == 0 || all[n-1].ClosedTime.Before(o.UntilTime) {
			return nil, fmt.Errorf("%w: its last segment was closed before %s", ErrBeyondArchive,
				o.UntilTime.UTC().Format(time.RFC3339))
		}
	}
	return segs, nil
}

// follow is the segments that carry a server at position from (text: fromText) forward, in order: those after
// it, each starting where the one before ended, up to the first for which reached is true (reached may be nil).
// A gap stops it: before the first segment needed (After empty), or between two.
func follow(all []Segment, from gomysql.GTIDSet, fromText string,
	reached func(Segment, gomysql.GTIDSet) bool) (segs []Segment, done bool, gap *Gap, err error) {
	for _, s := range all {
		end, err := gomysql.ParseMariadbGTIDSet(s.End)
		if err != nil {
			return nil, false, nil, fmt.Errorf("segment %s ends at %q: %w", s.Name, s.End, err)
		}
		if from.Contain(end) {
			continue // wholly before the server's position
		}
		if len(segs) == 0 {
			start, err := gomysql.ParseMariadbGTIDSet(s.Start)
			if err != nil {
				return nil, false, nil, fmt.Errorf("segment %s starts at %q: %w", s.Name, s.Start, err)
			}
			if !from.Contain(start) {
				return segs, false, &Gap{Before: s.Name, From: fromText, To: s.Start}, nil
			}
		} else if gaps := Chain([]Segment{segs[len(segs)-1], s}, ""); len(gaps) > 0 {
			return segs, false, &gaps[0], nil
		}
		segs = append(segs, s)
		if reached != nil && reached(s, end) {
			return segs, true, nil, nil
		}
	}
	return segs, false, nil, nil
}

func lastEnd(segs []Segment, def string) string {
	if n := len(segs); n > 0 {
		return segs[n-1].End
	}
	return def
}

// pipe runs producer | consumer, failing if either fails; both are killed when ctx ends.
func pipe(ctx context.Context, producer, consumer []string, stderr io.Writer) error {
	p := exec.CommandContext(ctx, producer[0], producer[1:]...)
	c := exec.CommandContext(ctx, consumer[0], consumer[1:]...)
	p.Env = append(os.Environ(), "TZ=UTC")
	for _, cmd := range []*exec.Cmd{p, c} {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	pTail, cTail := &tail{}, &tail{}
	p.Stderr, c.Stderr, c.Stdout = multi(pTail, stderr), multi(cTail, stderr), multi(cTail, stderr)
	out, err := p.StdoutPipe()
	if err != nil {
		return err
	}
	c.Stdin = out
	if err := p.Start(); err != nil {
		return fmt.Errorf("failed to start %s: %w", producer[0], err)
	}
	if err := c.Start(); err != nil {
		_ = p.Process.Kill()
		_ = p.Wait()
		return fmt.Errorf("failed to start %s: %w", consumer[0], err)
	}
	cErr := c.Wait()
	if cErr != nil {
		_ = p.Process.Kill()
	}
	pErr := p.Wait()
	switch {
	case pErr != nil && cErr == nil:
		return fmt.Errorf("%s failed: %w: %s", filepath.Base(producer[0]), pErr, pTail)
	case cErr != nil:
		return fmt.Errorf("%s failed: %w: %s", filepath.Base(consumer[0]), cErr, cTail)
	}
	return nil
}

func multi(a io.Writer, b io.Writer) io.Writer {
	if b == nil {
		return a
	}
	return io.MultiWriter(a, b)
}

// tail keeps the last bytes written to it, for an error message.
type tail struct{ b []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 2048 {
		t.b = t.b[len(t.b)-2048:]
	}
	return len(p), nil
}

func (t *tail) String() string { return string(t.b) }
