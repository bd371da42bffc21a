package archive

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	gomysql "github.com/go-mysql-org/go-mysql/mysql"

	"github.com/mysqlfleet/mysqlfleet/internal/backup"
)

// errNoSource is the Status.Error of a Keeper that has no server to read.
var errNoSource = errors.New("no server to read the binary log from")

// Keeper keeps one archive going: it runs an Archiver on the server SetSource names, again after Retry when the
// stream fails, and at once on the new server when the source changes (a switchover or failover: the new primary
// continues the archive's GTID history). Status says how it keeps up.
type Keeper struct {
	Store backup.Store
	// ServerID, MaxAge and MaxSize are the Archiver's.
	ServerID uint32
	MaxAge   time.Duration
	MaxSize  int64
	// Retry is how long to wait after a stream failed or could not start; default 1 s.
	Retry time.Duration
	// GapCheck is how often the store's segments are listed and chained to find gaps besides each start; default
	// 1 min. Each check lists the store and reads the manifests it has not read before.
	GapCheck time.Duration
	// Guard, when set, is called before every object the archive stores; an error stops the write and the
	// stream (the caller's leader lease has lapsed: another process may be archiving now).
	Guard func() error
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Log receives the Archiver's lines and one per stream that ends; may be nil.
	Log io.Writer

	mu sync.Mutex
	// source is the server to read; changed is signalled when it changes, and stop ends the stream that reads
	// the one before.
	source  *Source
	changed chan struct{}
	stop    context.CancelFunc
	// status is the Status between streams; progress that of the running stream, nil when none runs.
	status   Status
	progress *progress
	// manifests are the segments' manifests read so far, by key (listCached); listMu serialises their use.
	listMu    sync.Mutex
	manifests map[string]Segment
}

// list is List, reading each manifest once.
func (k *Keeper) list(ctx context.Context) ([]Segment, error) {
	k.listMu.Lock()
	defer k.listMu.Unlock()
	if k.manifests == nil {
		k.manifests = map[string]Segment{}
	}
	return listCached(ctx, k.Store, k.manifests)
}

// SetSource names the server to read from now; nil means none (no primary). A different server (by value) ends
// the running stream at once, and the next one reads the new server; the same server changes nothing.
func (k *Keeper) SetSource(s *Source) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s == k.source || s != nil && k.source != nil && *s == *k.source {
		return
	}
	if s != nil {
		c := *s
		s = &c
	}
	k.source = s
	if k.stop != nil {
		k.stop()
	}
	select {
	case k.signal() <- struct{}{}:
	default: // one signal pending is enough
	}
}

// signal is the channel that tells Run the source changed; k.mu must be held.
func (k *Keeper) signal() chan struct{} {
	if k.changed == nil {
		k.changed = make(chan struct{}, 1)
	}
	return k.changed
}

// Status says how the archive keeps up; safe for concurrent use.
func (k *Keeper) Status() Status {
	k.mu.Lock()
	defer k.mu.Unlock()
	st := k.status
	st.Gaps = slices.Clone(st.Gaps)
	if p := k.progress; p != nil {
		began, latest := p.state()
		if latest != nil {
			st.Latest = latest
		}
		if !began.IsZero() {
			st.Streaming, st.Since, st.Error, st.ArchivedThrough = true, began, "", p.through()
		}
	}
	if st.Latest != nil {
		latest := *st.Latest
		st.Latest = &latest
	}
	return st
}

// Run keeps the archive going until ctx ends, and returns once the last stream has stored what it completed. One
// Run at a time: two would write the same segments.
func (k *Keeper) Run(ctx context.Context) {
	var wg sync.WaitGroup
	gctx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); wg.Wait() }()
	wg.Go(func() { k.checkGaps(gctx) })
	for ctx.Err() == nil {
		src, sctx, stop := k.begin(ctx)
		if src == nil {
			k.fail(errNoSource)
			k.wait(ctx, 0)
			continue
		}
		err := k.stream(sctx, *src)
		changed := sctx.Err() != nil
		stop()
		switch {
		case ctx.Err() != nil:
			return
		case changed:
			continue // the source changed: read the new one now
		}
		retry := cmp.Or(k.Retry, time.Second)
		k.logf("Archiving from %s:%d stopped, again in %s: %v", src.Host, src.Port, retry, err)
		k.wait(ctx, retry)
	}
}

// begin returns the source to read and a context that ends with ctx or when the source changes.
func (k *Keeper) begin(ctx context.Context) (*Source, context.Context, context.CancelFunc) {
	k.mu.Lock()
	defer k.mu.Unlock()
	select {
	case <-k.signal(): // a change before now is this one
	default:
	}
	sctx, stop := context.WithCancel(ctx)
	k.stop = stop
	k.status.Source = ""
	if k.source != nil {
		k.status.Source = k.source.hostPort()
	}
	return k.source, sctx, stop
}

// wait returns when ctx ends, the source changes, or after d (never, when d is 0).
func (k *Keeper) wait(ctx context.Context, d time.Duration) {
	k.mu.Lock()
	changed := k.signal()
	k.mu.Unlock()
	var after <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		after = t.C
	}
	select {
	case <-ctx.Done():
	case <-changed:
	case <-after:
	}
}

// stream runs one Archiver on src until it fails or ctx ends; it lists the store first, for Status and to
// resume from the newest segment.
func (k *Keeper) stream(ctx context.Context, src Source) error {
	segs, err := k.list(ctx)
	if err != nil {
		return k.end(ctx, nil, err)
	}
	k.listed(segs)
	var from string
	if len(segs) == 0 {
		if from, err = k.newestBackupPosition(ctx); err != nil {
			return k.end(ctx, nil, err)
		}
	}
	target, err := binlogPosition(ctx, src)
	if err != nil {
		return k.end(ctx, nil, err)
	}
	a := &Archiver{Store: k.Store, Source: src, ServerID: k.ServerID, From: from, MaxAge: k.MaxAge,
		MaxSize: k.MaxSize, Now: k.Now, Guard: k.Guard, Log: k.Log}
	k.mu.Lock()
	a.progress = &progress{base: k.status.ArchivedThrough, target: target}
	k.progress = a.progress
	k.mu.Unlock()
	return k.end(ctx, a.progress, a.run(ctx, segs))
}

// newestBackupPosition is where an archive with no segment starts: the GTID position of the store's newest
// backup, so that a restore from it can be rolled forward; with no backup, the server's whole binary log ("").
//
// When that position cannot be read (the backups cannot be listed, a manifest is unreadable, the position is
// not MariaDB's), the archive does not start: its first segment fixes for good where it begins. After the
// backup, the backup could not be rolled forward; from the whole binary log, it could only while the server
// still holds all of it, which would all be stored. Each retry reads the backups again, so a passing fault costs
// a Retry, and a lasting one shows in Status.Error (and in the recovery point's age).
func (k *Keeper) newestBackupPosition(ctx context.Context) (string, error) {
	backups, err := backup.List(ctx, k.Store)
	if err != nil {
		return "", fmt.Errorf("not starting the archive: the newest backup cannot be known: %w", err)
	}
	if len(backups) == 0 {
		return "", nil
	}
	b := backups[0]
	pos := strings.TrimSpace(b.GTIDPosition)
	if _, err := gomysql.ParseMariadbGTIDSet(pos); err != nil {
		return "", fmt.Errorf("not starting the archive: the position %q of the newest backup %s: %w", pos, b.Name, err)
	}
	return pos, nil
}

// binlogPosition is src's gtid_binlog_pos: a stream that has delivered it has caught up with what src had
// logged when it was read.
func binlogPosition(ctx context.Context, src Source) (gomysql.GTIDSet, error) {
	// The connection is closed when this returns, or at once when ctx ends, even mid-handshake: a change of
	// source must not wait for a server that stopped answering.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dial := func(ctx context.Context, network, address string) (net.Conn, error) {
		conn, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, network, address)
		if err == nil {
			context.AfterFunc(ctx, func() { _ = conn.Close() })
		}
		return conn, err
	}
	addr := net.JoinHostPort(src.Host, strconv.Itoa(src.Port))
	c, err := client.ConnectWithDialer(ctx, "tcp", addr, src.User, src.Password, "", dial,
		func(c *client.Conn) error { c.ReadTimeout, c.WriteTimeout = 10*time.Second, 10*time.Second; return nil })
	if err != nil {
		return nil, fmt.Errorf("failed to connect to %s: %w", addr, err)
	}
	r, err := c.Execute("SELECT @@GLOBAL.gtid_binlog_pos")
	if err != nil {
		return nil, fmt.Errorf("failed to read the binary log position of %s: %w", addr, err)
	}
	pos, err := r.GetString(0, 0)
	if err != nil {
		return nil, fmt.Errorf("the binary log position of %s: %w", addr, err)
	}
	return gomysql.ParseMariadbGTIDSet(pos)
}

// listed records the store's segments as listed: their gaps, and the newest (which a running stream's own
// progress stands in front of in Status).
func (k *Keeper) listed(segs []Segment) {
	gaps := Chain(segs, "")
	k.mu.Lock()
	defer k.mu.Unlock()
	k.status.Gaps = gaps
	if n := len(segs); n > 0 {
		k.status.Latest = &segs[n-1]
	}
}

// end records how a stream ended (p is its progress, nil if it did not start), and returns err.
func (k *Keeper) end(ctx context.Context, p *progress, err error) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.progress = nil
	if p != nil {
		began, latest := p.state()
		if latest != nil {
			k.status.Latest = latest
		}
		if !began.IsZero() {
			k.status.Since, k.status.Error, k.status.ArchivedThrough = k.now(), "", p.through()
		}
	}
	// A stream ended by its context failed for no reason of its own.
	if err != nil && ctx.Err() == nil {
		k.status.Error = err.Error()
	}
	return err
}

// fail records that no stream can start, for err.
func (k *Keeper) fail(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.status.Error = err.Error()
}

// checkGaps chains the store's segments every GapCheck until ctx ends.
func (k *Keeper) checkGaps(ctx context.Context) {
	t := time.NewTicker(cmp.Or(k.GapCheck, time.Minute))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		segs, err := k.list(ctx)
		if err != nil {
			k.logf("Could not check the archive for gaps: %v", err)
			continue
		}
		k.listed(segs)
	}
}

// hostPort is how Status and Segment name a source.
func (s Source) hostPort() string { return fmt.Sprintf("%s:%d", s.Host, s.Port) }

func (k *Keeper) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}

func (k *Keeper) logf(format string, args ...any) {
	if k.Log != nil {
		_, _ = fmt.Fprintf(k.Log, format+"\n", args...)
	}
}
