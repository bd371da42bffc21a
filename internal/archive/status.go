package archive

import (
	"sync"
	"time"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// Status is how a Keeper's archive keeps up, for logs and reports.
type Status struct {
	// Source is the server being read or tried (host:port), "" when there is none.
	Source string `json:"source"`
	// Streaming is true while a stream is open: the server has started sending its binary log.
	Streaming bool `json:"streaming"`
	// Since is when Streaming last changed (zero before it first did).
	Since time.Time `json:"since,omitzero"`
	// ArchivedThrough: every transaction the source committed before it is in the store, as far as the stream
	// shows; now less it is the recovery point's age.
	//   - Streaming, once the stream has caught up (delivered the server's gtid_binlog_pos as of its start): the
	//     arrival of the open segment's first transaction while a segment is open; with none open, when the stream
	//     last delivered anything, an event or the server's heartbeat (sent every second while it has nothing to
	//     send), so it trails now by about a second, and stops on a connection that went silent.
	//   - Streaming but not caught up, or while a segment opened before then is open: the value before this
	//     stream, since what arrives then may have been committed long before (a new stream first re-reads what
	//     the last one could not store).
	//   - Not streaming: the last value a stream reached; zero before the first.
	ArchivedThrough time.Time `json:"archivedThrough,omitzero"`
	// Latest is the newest segment in the store: as listed when a stream starts, then as each is stored.
	Latest *Segment `json:"latest,omitempty"`
	// Gaps are where the archive, from its first segment, is not continuous, as last checked: when a stream
	// starts and every GapCheck.
	Gaps []Gap `json:"gaps,omitempty"`
	// Error is why the last stream ended or could not start; "" once a stream runs again.
	Error string `json:"error,omitempty"`
}

// progress is what one Archiver's stream has done, for its Keeper's Status: written by the Archiver's goroutine,
// read by any. Its methods do nothing on a nil progress (an Archiver run without a Keeper).
type progress struct {
	mu sync.Mutex
	// base is ArchivedThrough before this stream; target the server's position when it began: once the stream
	// has delivered target (live), arrival times stand for commit times.
	base   time.Time
	target gomysql.GTIDSet
	live   bool
	// began is when the stream delivered its first event, heard its last.
	began, heard time.Time
	// open is true while a segment is open; opened is when its first transaction arrived, zero when that was
	// before the stream was live (the segment may hold transactions committed long before).
	open   bool
	opened time.Time
	// latest is the last segment stored.
	latest *Segment
}

func (p *progress) hear(t time.Time) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.began.IsZero() {
		p.began = t
	}
	p.heard = t
}

// reached tells that the stream has delivered every transaction up to pos.
func (p *progress) reached(pos gomysql.GTIDSet) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.live = p.live || pos.Contain(p.target)
}

// opening tells that a segment's first transaction arrived at t.
func (p *progress) opening(t time.Time) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.open, p.opened = true, time.Time{}
	if p.live {
		p.opened = t
	}
}

func (p *progress) stored(s Segment) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.open, p.latest = false, &s
}

// through is ArchivedThrough while the stream is open (see Status); base before it delivered anything.
func (p *progress) through() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case !p.live || p.heard.IsZero() || p.open && p.opened.IsZero():
		return p.base
	case p.open:
		return p.opened
	}
	return p.heard
}

// state is when the stream delivered its first event (zero before) and the last segment stored.
func (p *progress) state() (began time.Time, latest *Segment) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.began, p.latest
}
