package member

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

// signal sends sig to the replica: SIGSTOP freezes it as a long GC pause or a frozen VM would, SIGCONT resumes
// it.
func (p *memberProcess) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// exited tells whether the replica's process has ended.
func (p *memberProcess) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// writableWatch reads every server's read_only every 20 ms, as root over its socket, until the test ends.
type writableWatch struct {
	mu sync.Mutex
	// changes are the servers found writable, each time that changed.
	changes []writableChange
	// twice are the rounds that found two servers or more writable at once.
	twice []string
}

type writableChange struct {
	at       time.Time
	writable []string
}

func (c writableChange) String() string {
	return fmt.Sprintf("%s %v", c.at.Format("15:04:05.000"), c.writable)
}

// watchWritable starts watching the servers of a set of n. A round reads every server twice, in order
// (0, 1, .., 0, 1, ..): a server found writable both times was writable when the others were first read (it
// is not made read-only and writable again within milliseconds), so two such servers were writable at once,
// and a round that straddles a switchover (the old primary read before its fence, the new one after its
// promotion) does not count.
func watchWritable(t *testing.T, s *set, n int) *writableWatch {
	ww := &writableWatch{}
	dbs := make([]*sql.DB, n)
	for i := range n {
		db, err := sql.Open("mysql", s.server(i).RootDSN()+"?timeout=1s&readTimeout=1s")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		dbs[i] = db
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
	})
	writable := func(db *sql.DB) bool {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		var ro int
		return db.QueryRowContext(ctx, "SELECT @@GLOBAL.read_only").Scan(&ro) == nil && ro == 0
	}
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		var last []string
		for {
			first := make([]bool, n)
			for i, db := range dbs {
				first[i] = writable(db)
			}
			var both []string
			for i, db := range dbs {
				if writable(db) && first[i] {
					both = append(both, s.pod(i))
				}
			}
			ww.record(time.Now(), both, &last)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return ww
}

func (ww *writableWatch) record(at time.Time, writable []string, last *[]string) {
	ww.mu.Lock()
	defer ww.mu.Unlock()
	c := writableChange{at: at, writable: writable}
	if len(writable) > 1 {
		ww.twice = append(ww.twice, c.String())
	}
	if !slices.Equal(writable, *last) {
		ww.changes = append(ww.changes, c)
		*last = writable
	}
}

// twoAtOnce are the rounds that found two servers or more writable at once.
func (ww *writableWatch) twoAtOnce() []string {
	ww.mu.Lock()
	defer ww.mu.Unlock()
	return slices.Clone(ww.twice)
}

// besides are the moments after since when a server other than primary was writable.
func (ww *writableWatch) besides(primary string, since time.Time) []string {
	ww.mu.Lock()
	defer ww.mu.Unlock()
	var out []string
	for _, c := range ww.changes {
		if c.at.After(since) && slices.ContainsFunc(c.writable, func(p string) bool { return p != primary }) {
			out = append(out, c.String())
		}
	}
	return out
}

// The leading member controller is frozen (SIGSTOP) in the middle of a failover: it has stopped every
// replica's receiver, recorded pause-1 as the new primary and waits, promoting it, until pause-1 has applied
// what it received. The standby takes the Lease over, finishes the failover, and then moves the primary on to
// pause-2 as a switchover requests. The old leader is resumed: it goes on where it stopped, with the rest of
// its promotion of pause-1 (stop replication, forget the source, SET read_only = OFF), which would make pause-1
// writable beside pause-2. Its Lease has passed, so every statement is refused. At no moment are two servers
// writable, none but pause-2 is made writable after the switchover, and no acknowledged write is lost.
func TestFrozenLeaderIsRefusedWhenItResumes(t *testing.T) {
	g := NewWithT(t)
	bin := buildMember(t)
	e, sa := startAPI(t)
	kubeconfig := writeKubeconfig(t, sa)
	s := e.startSet("pause", 3, mysqltest.OnPodIP())
	leader := startMemberProcess(t, bin, kubeconfig, "leader")
	g.Eventually(leader.acquired, convergeWithin, 100*time.Millisecond).Should(BeTrue())
	standby := startMemberProcess(t, bin, kubeconfig, "standby")
	s.waitFormed(g, 0, 1, 2)
	writable := watchWritable(t, s, 3)
	w := s.startWriter(1)
	waitAcks(g, w, 50)

	s.failOverToDelayedReplica(g, w, 10)
	record := func() string {
		cm, _ := e.report("pause")
		if cm == nil {
			return ""
		}
		return cm.Data[v1alpha1.ReplicationRecordKey]
	}
	g.Eventually(record, convergeWithin, 20*time.Millisecond).Should(HavePrefix(`{"primary":1,`))
	g.Expect(record()).To(HaveSuffix(`,"leaseTransitions":0}`), "saved in the leader's term")
	leader.signal(t, syscall.SIGSTOP)
	frozen := time.Now()
	g.Expect(s.readOnly(1)).To(BeTrue(), "the failover finished before the leader could be frozen in its middle")
	t.Logf("froze the leader with pause-1 recorded and still read-only")

	g.Eventually(standby.acquired, convergeWithin, 100*time.Millisecond).Should(BeTrue())
	g.Eventually(s.lastTransition, 2*convergeWithin, 100*time.Millisecond).Should(Equal("Failover pause-0 -> pause-1"))
	s.waitFormed(g, 1, 2)
	waitAcks(g, w, 20)
	patch := client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+v1alpha1.PrimaryAnnotation+`":"2"}}}`))
	g.Expect(e.c.Patch(e.ctx, s.sts.DeepCopy(), patch)).To(Succeed())
	g.Eventually(s.lastTransition, convergeWithin, 100*time.Millisecond).Should(Equal("Switchover pause-1 -> pause-2"))
	g.Expect(record()).To(And(HavePrefix(`{"primary":2,`), HaveSuffix(`,"leaseTransitions":1}`)),
		"saved in the standby's term")
	s.waitFormed(g, 2, 1)
	switched := time.Now()
	waitAcks(g, w, 20)

	leader.signal(t, syscall.SIGCONT)
	t.Logf("resumed the old leader after %s frozen", time.Since(frozen).Round(time.Millisecond))
	// It goes on with its plan at once, and gives up its leadership at its next renewal (it exits).
	g.Eventually(leader.exited, convergeWithin, 100*time.Millisecond).Should(BeTrue())
	g.Expect(writable.besides("pause-2", switched)).To(BeEmpty(), "a server other than the primary made writable")
	g.Expect(writable.twoAtOnce()).To(BeEmpty(), "two servers writable at once")
	var refused []string
	for _, line := range strings.Split(leader.log(), "\n") {
		if strings.Contains(line, ErrLeaseMayHaveExpired.Error()) {
			refused = append(refused, line)
		}
	}
	g.Expect(refused).To(ContainElement(ContainSubstring("failed to promote 1")),
		"the old leader did not try to go on with its promotion, so this test proves nothing")
	t.Logf("the old leader was refused %d times, first: %s", len(refused), refused[0])

	s.waitFormed(g, 2, 1)
	waitAcks(g, w, 20)
	w.Stop()
	t.Logf("writer: %s", w)
	g.Expect(s.missing(g, 2, w.Acked())).To(BeEmpty(), "acknowledged writes lost")
	g.Eventually(func() []int { return s.missing(g, 1, w.Acked()) }, convergeWithin, 100*time.Millisecond).
		Should(BeEmpty())
	g.Eventually(func() string { return s.checksum(g, 1) }, convergeWithin, 100*time.Millisecond).
		Should(Equal(s.checksum(g, 2)))
	g.Expect(writable.besides("pause-2", switched)).To(BeEmpty(), "a server other than the primary made writable")
	g.Expect(writable.twoAtOnce()).To(BeEmpty(), "two servers writable at once")
}

// readOnly reads a Pod's server's read_only as root.
func (s *set) readOnly(i int) bool {
	s.e.t.Helper()
	var ro int
	if err := s.server(i).OpenRoot().QueryRow("SELECT @@GLOBAL.read_only").Scan(&ro); err != nil {
		s.e.t.Fatal(err)
	}
	return ro == 1
}

// checksum is CHECKSUM TABLE shop.orders on a Pod's server.
func (s *set) checksum(g Gomega, i int) string {
	var table, sum string
	g.Expect(s.app(s.pod(i)).QueryRow("CHECKSUM TABLE orders").Scan(&table, &sum)).To(Succeed())
	return sum
}
