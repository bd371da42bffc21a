// Package archive keeps a MariaDB server's binary log in a backup store as it is written, so that a restore can
// roll a backup forward to any transaction since (point-in-time recovery), and what was committed survives the
// loss of every server of a member.
//
// # How
//
// An Archiver reads the binary log of the set's primary as a replication client does (go-mysql's BinlogSyncer,
// COM_BINLOG_DUMP_GTID from a GTID position) and writes it into the store in segments: each a well-formed binary
// log file (the magic number, the server's format description event, then whole transactions, as the server sent
// them), zstd-compressed, with a manifest written after it (Segment: the GTID position before its first
// transaction and after its last, the times of its events, its size and SHA-256). A segment is closed at a
// transaction boundary once MaxSize bytes are in it or MaxAge after its first transaction arrived, whichever
// comes first, also when no other transaction follows: the archive lags the server by at most about MaxAge plus
// an upload, whether writes are frequent or rare (the recovery point is bounded by time, not by traffic).
//
// Segments are named by a sequence number, so that the store's listing orders them. The archive is continuous
// when every segment starts at the position its predecessor ended at; Chain says where it is not (a segment
// deleted, or a server that resumed the archive from elsewhere), by GTID position, never by file names.
//
// Run resumes where the store's newest segment ends, from whichever server it is pointed at: after a failover the
// caller points it at the new primary, which continues the same GTID history (the member controller promotes only
// a replica holding every acknowledged transaction, and MariaDB's sequence numbers continue across servers of a
// domain). A server that does not hold that position refuses it (error 1236), and Run returns the error rather
// than archiving a history that does not continue the archive's. A Keeper does this for a caller that follows
// the primary: it runs Archivers one after another, on whichever server it is told, and reports how the archive
// keeps up (Status).
//
// The segments are replayed with the server's own mariadb-binlog (see the tests); only MariaDB is implemented:
// MySQL's equivalent (COM_BINLOG_DUMP_GTID with its GTID sets, replayed by mysqlbinlog) has not run here.
package archive

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"github.com/klauspost/compress/zstd"

	"github.com/mysqlfleet/mysqlfleet/internal/backup"
)

const (
	// Prefix is where segments go in a backup store, apart from the backups (whose retention deletes only
	// backup objects, none under a "/").
	Prefix = "binlog/"
	// DefaultMaxAge is how long a segment stays open after its first transaction arrived, at most.
	DefaultMaxAge = 5 * time.Second
	// DefaultMaxSize closes a segment once it holds this many bytes of binary log, uncompressed.
	DefaultMaxSize = 64 << 20

	segmentSuffix  = ".binlog.zst"
	manifestSuffix = ".segment.json"
	formatVersion  = 1
	// tick is how often an idle stream is checked for a segment that is due.
	tick = 100 * time.Millisecond
)

// Segment is the manifest of one segment.
type Segment struct {
	FormatVersion int `json:"formatVersion"`
	// Name orders the segments: a zero-padded sequence number.
	Name   string `json:"name"`
	Object string `json:"object"`
	// Start is the GTID position (MariaDB notation, one GTID per domain) before the segment's first
	// transaction; End the position after its last.
	Start string `json:"start"`
	End   string `json:"end"`
	// Transactions counts the GTID groups in the segment.
	Transactions int `json:"transactions"`
	// FirstEventTime and LastEventTime are the server's timestamps of the segment's first and last events
	// (whole seconds, as the binary log has them); ClosedTime is when the archiver closed it.
	FirstEventTime time.Time `json:"firstEventTime"`
	LastEventTime  time.Time `json:"lastEventTime"`
	ClosedTime     time.Time `json:"closedTime"`
	// Source is the server read (host:port) and its server_id.
	Source         string `json:"source"`
	SourceServerID uint32 `json:"sourceServerID"`
	// Size is the stored (compressed) size, LogSize the binary log's; SHA256 is of the stored object.
	Size    int64  `json:"size"`
	LogSize int64  `json:"logSize"`
	SHA256  string `json:"sha256"`
}

// Source is the server whose binary log is archived: a replication account (REPLICATION SLAVE) on it.
type Source struct {
	Host     string
	Port     int
	User     string
	Password string
}

// Archiver archives one server's binary log into Store.
type Archiver struct {
	Store  backup.Store
	Source Source
	// ServerID is the archiver's server_id as a replication client: unique among the servers of the set.
	ServerID uint32
	// From is where to start when the store holds no segment yet (the GTID position of the newest backup, say);
	// empty means the server's whole binary log.
	From string
	// MaxAge and MaxSize close a segment (DefaultMaxAge, DefaultMaxSize when zero).
	MaxAge  time.Duration
	MaxSize int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Guard, when set, is called before every object the archive stores; its error stops the write and Run.
	// A caller that archives only while it holds a lease says there that the lease lapsed: another process may be
	// archiving by now, and two writers would interleave their segments.
	Guard func() error
	// Log receives a line per segment and per connection; may be nil.
	Log io.Writer

	// progress, when set (by a Keeper), is told what the stream delivers and what is stored.
	progress *progress
}

func (a *Archiver) logf(format string, args ...any) {
	if a.Log != nil {
		_, _ = fmt.Fprintf(a.Log, format+"\n", args...)
	}
}

func (a *Archiver) now() time.Time {
	if a.Now != nil {
		return a.Now()
	}
	return time.Now()
}

// Run archives until ctx ends (it returns nil then, after closing a segment whose transactions are complete) or
// the stream fails (it returns the error; the caller runs it again, perhaps on another server). It resumes where
// the store's newest segment ends.
func (a *Archiver) Run(ctx context.Context) error {
	segs, err := List(ctx, a.Store)
	if err != nil {
		return err
	}
	return a.run(ctx, segs)
}

// run is Run after the store's segments were listed (segs, oldest first).
func (a *Archiver) run(ctx context.Context, segs []Segment) error {
	var err error
	from, seq := a.From, 0
	if n := len(segs); n > 0 {
		last := segs[n-1]
		from = last.End
		if seq, err = strconv.Atoi(last.Name); err != nil {
			return fmt.Errorf("segment %s: its name is not a sequence number", last.Name)
		}
	}
	pos, err := gomysql.ParseMariadbGTIDSet(from)
	if err != nil {
		return fmt.Errorf("archive position %q: %w", from, err)
	}
	syncer := replication.NewBinlogSyncer(replication.BinlogSyncerConfig{
		ServerID: a.ServerID, Flavor: gomysql.MariaDBFlavor, Host: a.Source.Host, Port: uint16(a.Source.Port),
		User: a.Source.User, Password: a.Source.Password, RawModeEnabled: true,
		// Heartbeats keep an idle connection known to be alive; a silent one is given up on.
		HeartbeatPeriod: time.Second, ReadTimeout: 10 * time.Second, DisableRetrySync: true,
		Logger: slog.New(slog.DiscardHandler),
	})
	// Closing kills the server's dump thread from a new connection, which a server that stopped answering holds
	// for ReadTimeout: that goes on in the background, after the last write, so that a caller moving to another
	// server (a failover away from a hung primary) is not held up.
	defer func() { go syncer.Close() }()
	streamer, err := syncer.StartSyncGTID(pos)
	if err != nil {
		return fmt.Errorf("failed to read the binary log of %s:%d from %q: %w", a.Source.Host, a.Source.Port, from, err)
	}
	a.logf("Archiving the binary log of %s:%d from %q", a.Source.Host, a.Source.Port, from)
	w := &writer{a: a, seq: seq, pos: pos.(*gomysql.MariadbGTIDSet)}
	a.progress.reached(w.pos)
	for {
		ectx, cancel := context.WithTimeout(ctx, tick)
		ev, err := streamer.GetEvent(ectx)
		cancel()
		switch {
		case ctx.Err() != nil:
			return w.closeIfComplete(context.WithoutCancel(ctx))
		case errors.Is(err, context.DeadlineExceeded):
			if err := w.closeIfDue(ctx); err != nil {
				return err
			}
			continue
		case err != nil:
			return errors.Join(fmt.Errorf("the binary log stream of %s:%d: %w", a.Source.Host, a.Source.Port, err),
				w.closeIfComplete(ctx))
		}
		a.progress.hear(a.now())
		if err := w.event(ctx, ev); err != nil {
			return err
		}
	}
}

// writer assembles segments from the stream's events.
type writer struct {
	a   *Archiver
	seq int
	// pos is the position after the last transaction seen (complete or not).
	pos *gomysql.MariadbGTIDSet
	// fde is the server's format description event, which every segment starts with; crc tells whether
	// events carry a CRC32 checksum at their end.
	fde []byte
	crc bool

	// The open segment (open is true once its first GTID event arrived): its events, where it started, when
	// its first transaction arrived.
	open         bool
	buf          bytes.Buffer
	start        string
	opened       time.Time
	transactions int
	first, last  time.Time
	// inGroup is true between a GTID event and the end of its transaction; standalone marks a group of one
	// statement (DDL) that ends with its first query event.
	inGroup, standalone bool
}

func (w *writer) event(ctx context.Context, ev *replication.BinlogEvent) error {
	h := ev.Header
	switch h.EventType {
	case replication.FORMAT_DESCRIPTION_EVENT:
		w.fde = slices.Clone(ev.RawData)
		if fde, ok := ev.Event.(*replication.FormatDescriptionEvent); ok {
			w.crc = fde.ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32
		}
		return nil
	case replication.ROTATE_EVENT, replication.HEARTBEAT_EVENT, replication.HEARTBEAT_LOG_EVENT_V2,
		replication.MARIADB_GTID_LIST_EVENT, replication.MARIADB_BINLOG_CHECKPOINT_EVENT,
		replication.STOP_EVENT:
		// Of the log files, not of transactions.
		return nil
	case replication.MARIADB_GTID_EVENT:
		if w.inGroup {
			return fmt.Errorf("a GTID event at %d before the end of the transaction before it", h.LogPos)
		}
		var g replication.MariadbGTIDEvent
		if err := g.Decode(w.body(ev.RawData)); err != nil {
			return fmt.Errorf("a GTID event at %d: %w", h.LogPos, err)
		}
		g.GTID.ServerID = h.ServerID
		// Its arrival, before a segment that is due is stored: the recovery point counts from when it came.
		arrived := w.a.now()
		if err := w.closeIfDue(ctx); err != nil {
			return err
		}
		if !w.open {
			w.open = true
			w.start, w.opened, w.first = w.pos.String(), arrived, time.Unix(int64(h.Timestamp), 0).UTC()
			w.a.progress.opening(w.opened)
		}
		if err := w.pos.AddSet(&g.GTID); err != nil {
			return err
		}
		w.a.progress.reached(w.pos)
		w.inGroup, w.standalone = true, g.IsStandalone()
		w.transactions++
	case replication.XID_EVENT:
		w.inGroup = false
	case replication.QUERY_EVENT:
		if w.standalone || w.isCommit(ev.RawData) {
			w.inGroup = false
		}
	}
	if !w.open {
		// An event outside a transaction (none is expected between them): not worth a segment of its own.
		return nil
	}
	w.buf.Write(ev.RawData)
	w.last = time.Unix(int64(h.Timestamp), 0).UTC()
	if !w.inGroup {
		return w.closeIfDue(ctx)
	}
	return nil
}

// body is an event's data after its header, without its checksum.
func (w *writer) body(raw []byte) []byte {
	b := raw[replication.EventHeaderSize:]
	if w.crc && len(b) >= replication.BinlogChecksumLength {
		b = b[:len(b)-replication.BinlogChecksumLength]
	}
	return b
}

// isCommit tells whether a query event is the COMMIT that ends a transaction.
func (w *writer) isCommit(raw []byte) bool {
	var q replication.QueryEvent
	if err := q.Decode(w.body(raw)); err != nil {
		return false
	}
	s := strings.ToUpper(strings.TrimSpace(string(q.Query)))
	return s == "COMMIT" || strings.HasPrefix(s, "XA COMMIT") || s == "ROLLBACK"
}

func (w *writer) closeIfDue(ctx context.Context) error {
	if !w.open || w.inGroup {
		return nil
	}
	maxAge, maxSize := cmp.Or(w.a.MaxAge, DefaultMaxAge), cmp.Or(w.a.MaxSize, DefaultMaxSize)
	if w.a.now().Sub(w.opened) < maxAge && int64(w.buf.Len()) < maxSize {
		return nil
	}
	return w.close(ctx)
}

func (w *writer) closeIfComplete(ctx context.Context) error {
	if !w.open || w.inGroup {
		return nil
	}
	return w.close(ctx)
}

// close stores the open segment, then its manifest.
func (w *writer) close(ctx context.Context) error {
	if len(w.fde) == 0 {
		return errors.New("the stream sent transactions before its format description event")
	}
	var log bytes.Buffer
	log.Write(replication.BinLogFileHeader)
	log.Write(w.fde)
	log.Write(w.buf.Bytes())
	var stored bytes.Buffer
	enc, err := zstd.NewWriter(&stored, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		return err
	}
	if _, err := enc.Write(log.Bytes()); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	sum := sha256.Sum256(stored.Bytes())
	name := fmt.Sprintf("%012d", w.seq+1)
	s := Segment{FormatVersion: formatVersion, Name: name, Object: Prefix + name + segmentSuffix, Start: w.start,
		End: w.pos.String(), Transactions: w.transactions, FirstEventTime: w.first, LastEventTime: w.last,
		ClosedTime: w.a.now().UTC(), Source: w.a.Source.hostPort(),
		SourceServerID: w.serverID(), Size: int64(stored.Len()), LogSize: int64(log.Len()),
		SHA256: hex.EncodeToString(sum[:])}
	if err := w.put(ctx, s.Object, stored.Bytes()); err != nil {
		return fmt.Errorf("failed to store segment %s: %w", name, err)
	}
	m, err := json.Marshal(s)
	if err != nil {
		return err
	}
	// The manifest last: a segment whose manifest is missing is not in the archive (List reads manifests).
	if err := w.put(ctx, Prefix+name+manifestSuffix, m); err != nil {
		return fmt.Errorf("failed to store the manifest of segment %s: %w", name, err)
	}
	w.a.logf("Archived segment %s: %d transactions, %s to %s", name, s.Transactions, s.Start, s.End)
	w.a.progress.stored(s)
	w.seq++
	w.open = false
	w.buf.Reset()
	w.transactions = 0
	return nil
}

// put stores one object, if Guard allows it.
func (w *writer) put(ctx context.Context, key string, data []byte) error {
	if w.a.Guard != nil {
		if err := w.a.Guard(); err != nil {
			return fmt.Errorf("not storing %s: %w", key, err)
		}
	}
	return w.a.Store.Put(ctx, key, bytes.NewReader(data))
}

// serverID is the server_id in the format description event's header: the server that sent the stream.
func (w *writer) serverID() uint32 {
	if len(w.fde) < replication.EventHeaderSize {
		return 0
	}
	var h replication.EventHeader
	if err := h.Decode(w.fde); err != nil {
		return 0
	}
	return h.ServerID
}

// List returns the segments of a store, oldest first: those whose manifest was written.
func List(ctx context.Context, s backup.Store) ([]Segment, error) {
	return listCached(ctx, s, nil)
}

// listCached is List that reads only the manifests cache does not hold, and keeps in cache those listed: a
// manifest never changes once stored, and an archive that checks itself every minute would otherwise read
// every manifest of the day each time. A nil cache reads them all.
func listCached(ctx context.Context, s backup.Store, cache map[string]Segment) ([]Segment, error) {
	objs, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []Segment
	seen := map[string]bool{}
	for _, o := range objs {
		if !strings.HasPrefix(o.Key, Prefix) || !strings.HasSuffix(o.Key, manifestSuffix) {
			continue
		}
		seen[o.Key] = true
		if seg, ok := cache[o.Key]; ok {
			out = append(out, seg)
			continue
		}
		seg, err := readSegment(ctx, s, o.Key)
		if err != nil {
			return nil, err
		}
		if cache != nil {
			cache[o.Key] = *seg
		}
		out = append(out, *seg)
	}
	for key := range cache {
		if !seen[key] {
			delete(cache, key) // pruned, or deleted
		}
	}
	slices.SortFunc(out, func(a, b Segment) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func readSegment(ctx context.Context, s backup.Store, key string) (*Segment, error) {
	r, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	var seg Segment
	if err := json.NewDecoder(io.LimitReader(r, 1<<20)).Decode(&seg); err != nil {
		return nil, fmt.Errorf("segment manifest %s: %w", key, err)
	}
	if seg.FormatVersion != formatVersion {
		return nil, fmt.Errorf("segment manifest %s: format %d, not %d", key, seg.FormatVersion, formatVersion)
	}
	return &seg, nil
}

// Gap is where the archive is not continuous: between two segments (After ends where Before does not start),
// or before the first one when it does not start where asked.
type Gap struct {
	// After is the segment before the gap ("" before the first), Before the one after it.
	After, Before string
	// From is the position the archive reached, To where it goes on.
	From, To string
	// Reached is the time of the last event before the gap, as its server logged it (zero before the first
	// segment): a restore rolls forward no further.
	Reached time.Time
}

func (g Gap) String() string {
	return fmt.Sprintf("between segments %q and %q: from %s to %s", g.After, g.Before, g.From, g.To)
}

// Chain checks that the segments follow each other by GTID position: each starts where the one before it ended.
// from, when not empty, is where the first must start (a backup's position).
func Chain(segs []Segment, from string) []Gap {
	var gaps []Gap
	prev, at := "", from
	var reached time.Time
	for i, s := range segs {
		if (i > 0 || from != "") && !samePosition(s.Start, at) {
			gaps = append(gaps, Gap{After: prev, Before: s.Name, From: at, To: s.Start, Reached: reached})
		}
		prev, at, reached = s.Name, s.End, s.LastEventTime
	}
	return gaps
}

func samePosition(a, b string) bool {
	sa, errA := gomysql.ParseMariadbGTIDSet(a)
	sb, errB := gomysql.ParseMariadbGTIDSet(b)
	return errA == nil && errB == nil && sa.Equal(sb)
}

// Open returns a segment's binary log, decompressed, after checking the stored object against its manifest.
func Open(ctx context.Context, s backup.Store, seg Segment) ([]byte, error) {
	r, err := s.Get(ctx, seg.Object)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	stored, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(stored); hex.EncodeToString(sum[:]) != seg.SHA256 || int64(len(stored)) != seg.Size {
		return nil, fmt.Errorf("segment %s: %w", seg.Name, backup.ErrChecksumMismatch)
	}
	dec, err := zstd.NewReader(bytes.NewReader(stored))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	return io.ReadAll(dec)
}
