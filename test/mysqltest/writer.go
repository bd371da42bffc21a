package mysqltest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	driver "github.com/go-sql-driver/mysql"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Writer is an application under test: it commits one row at a time into the table orders (id INT PRIMARY KEY,
// server INT) of its pool's database, each with a new id, on the server its target names, and retries a failed
// write (same id) until it succeeds. Acked holds the ids whose commit returned success: what the application
// was told is committed, which a failover must not lose.
type Writer struct {
	target func() (*sql.DB, int)
	stop   chan struct{}
	done   chan struct{}

	mu     sync.Mutex
	acked  []int
	ackAt  []time.Time
	where  []int
	failed int
	dupes  int
}

// StartWriter starts a writer with ids from first; it stops when the test ends, at the latest. target returns
// the pool to write through and a number naming its server (recorded with each acknowledgement), or a nil pool
// while there is nowhere to write. Each write is bounded by 2 s, as a client's would be.
func StartWriter(t testing.TB, first int, target func() (*sql.DB, int)) *Writer {
	w := &Writer{target: target, stop: make(chan struct{}), done: make(chan struct{})}
	go w.run(first)
	t.Cleanup(w.Stop)
	return w
}

func (w *Writer) run(id int) {
	defer close(w.done)
	for ; ; id++ {
		for {
			select {
			case <-w.stop:
				return
			default:
			}
			db, where := w.target()
			if db == nil {
				time.Sleep(20 * time.Millisecond)
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err := db.ExecContext(ctx, "INSERT INTO orders (id, server) VALUES (?, ?)", id, where)
			cancel()
			if err == nil {
				w.mu.Lock()
				w.acked, w.ackAt, w.where = append(w.acked, id), append(w.ackAt, time.Now()), append(w.where, where)
				w.mu.Unlock()
				break
			}
			var me *driver.MySQLError
			if errors.As(err, &me) && me.Number == 1062 {
				// An earlier attempt, whose outcome the writer did not learn, committed: not acknowledged.
				w.mu.Lock()
				w.dupes++
				w.mu.Unlock()
				break
			}
			w.mu.Lock()
			w.failed++
			w.mu.Unlock()
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// Stop stops the writer and waits for it.
func (w *Writer) Stop() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// Acked returns the acknowledged ids.
func (w *Writer) Acked() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.acked)
}

// FirstAckAfter is when the first write after t was acknowledged, and by which server; zero and -1 if none.
func (w *Writer) FirstAckAfter(t time.Time) (time.Time, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, at := range w.ackAt {
		if at.After(t) {
			return at, w.where[k]
		}
	}
	return time.Time{}, -1
}

// LongestGap is the longest time in [from, to] during which the writer got no acknowledgement: between two
// consecutive ones, or from from to the first or from the last to to. It measures how long a backup stalled
// the application's commits; zero when from is not before to.
func (w *Writer) LongestGap(from, to time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var longest time.Duration
	last := from
	for _, at := range w.ackAt {
		if at.Before(from) {
			continue
		}
		if at.After(to) {
			break
		}
		longest = max(longest, at.Sub(last))
		last = at
	}
	return max(longest, to.Sub(last))
}

// AcksBetween is how many acknowledgements the writer got in [from, to].
func (w *Writer) AcksBetween(from, to time.Time) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, at := range w.ackAt {
		if !at.Before(from) && !at.After(to) {
			n++
		}
	}
	return n
}

// WaitAcks waits, at most timeout, until the writer has n more acknowledgements than it had when called.
func (w *Writer) WaitAcks(n int, timeout time.Duration) error {
	start := len(w.Acked())
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, timeout, true,
		func(context.Context) (bool, error) { return len(w.Acked()) >= start+n, nil })
	if err != nil {
		return fmt.Errorf("the writer got %d of %d acknowledgements in %s (%s)", len(w.Acked())-start, n, timeout, w)
	}
	return nil
}

func (w *Writer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%d acknowledged, %d failed attempts, %d found committed on retry", len(w.acked), w.failed,
		w.dupes)
}

// IDs reads the ids of the orders a Writer wrote, as the pool's server holds them.
func IDs(db *sql.DB) (map[int]bool, error) {
	rows, err := db.Query("SELECT id FROM orders")
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	out := map[int]bool{}
	for rows.Next() {
		var id int
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out[id] = true
	}
	return out, rows.Err()
}
