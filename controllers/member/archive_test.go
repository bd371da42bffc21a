package member

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/archive"
	"github.com/mysqlfleet/mysqlfleet/internal/backup"
	"github.com/mysqlfleet/mysqlfleet/test/backuptest"
)

// The leader archives the primary's binary log into the store the StatefulSet names (real versitygw), with the
// credentials of the Secret it names, and follows a switchover: the report says Archiving from the primary of
// the moment, and the archive holds, with no gap, everything both primaries logged. An idle archived set
// costs no report write. Credentials the store refuses make the archive Behind, with the store's reason, once
// maxRecoveryPointAge has passed without anything stored, and it recovers when they are put right.
func TestArchiveFollowsThePrimaryAndSaysWhenItFallsBehind(t *testing.T) {
	g := NewWithT(t)
	e := startEnv(t)
	s3 := backuptest.StartS3(t)
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "store"}, StringData: s3.Env()}
	g.Expect(e.c.Create(e.ctx, sec)).To(Succeed())
	s := e.startSet("arch", 2)
	s.waitFormed(g, 0, 1)

	req := v1alpha1.ArchiveRequest{Target: "s3", Bucket: backuptest.Bucket, Endpoint: s3.Endpoint,
		Prefix: "eu1/" + testNS + "/arch", CredentialsSecret: "store", MaxSegmentAge: "1s", MaxRecoveryPointAge: "10s"}
	value, err := json.Marshal(req)
	g.Expect(err).NotTo(HaveOccurred())
	annotate := func(key, value string) {
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: value}}})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(e.c.Patch(e.ctx, s.sts.DeepCopy(), client.RawPatch(types.MergePatchType, patch))).To(Succeed())
	}
	annotate(v1alpha1.ArchiveAnnotation, string(value))
	archived := func() *v1alpha1.MemberArchive {
		if rep := s.report(); rep != nil {
			return rep.Archive
		}
		return nil
	}
	g.Eventually(archived, convergeWithin, 100*time.Millisecond).Should(And(Not(BeNil()),
		HaveField("State", v1alpha1.ArchiveArchiving), HaveField("Source", "arch-0")))

	ws := s.startWriters(2)
	waitEachAcks(g, ws, 20)
	annotate(v1alpha1.PrimaryAnnotation, "1")
	s.waitFormed(g, 1, 0)
	g.Eventually(archived, convergeWithin, 100*time.Millisecond).Should(HaveField("Source", "arch-1"))
	waitEachAcks(g, ws, 60)
	stopWriters(t, ws)

	ctx := context.Background()
	data := map[string][]byte{}
	for k, v := range s3.Env() {
		data[k] = []byte(v)
	}
	store, closer, err := openArchiveStore(ctx, req, data)
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = closer.Close() }()
	var executed string
	g.Expect(s.server(1).OpenRoot().QueryRow("SELECT @@gtid_binlog_pos").Scan(&executed)).To(Succeed())
	var segs []archive.Segment
	g.Eventually(func() string {
		segs, err = archive.List(ctx, store)
		g.Expect(err).NotTo(HaveOccurred())
		if len(segs) == 0 {
			return ""
		}
		return segs[len(segs)-1].End
	}, convergeWithin, 200*time.Millisecond).Should(Equal(executed), "the archive's end, against the new primary's binary log")
	g.Expect(archive.Chain(segs, "")).To(BeEmpty())
	sources := map[string]bool{}
	for _, seg := range segs {
		sources[seg.Source] = true
	}
	g.Expect(sources).To(HaveKey(adminOf(s.server(0)).String()))
	g.Expect(sources).To(HaveKey(adminOf(s.server(1)).String()))

	// Idle: the report is not written again.
	g.Eventually(archived, convergeWithin, 100*time.Millisecond).Should(HaveField("LatestPosition", executed))
	cm, _ := e.report("arch")
	waitPasses(t, e.r, client.ObjectKeyFromObject(s.sts), 10)
	after, _ := e.report("arch")
	g.Expect(after.ResourceVersion).To(Equal(cm.ResourceVersion), "an idle archived set's report was written")

	// Credentials the store refuses.
	g.Expect(e.c.Get(ctx, client.ObjectKeyFromObject(sec), sec)).To(Succeed())
	sec.StringData = nil
	sec.Data["AWS_SECRET_ACCESS_KEY"] = []byte("not-the-key")
	g.Expect(e.c.Update(ctx, sec)).To(Succeed())
	g.Eventually(archived, 30*time.Second, 200*time.Millisecond).Should(And(
		HaveField("State", v1alpha1.ArchiveBehind), HaveField("Error", Not(BeEmpty()))))
	sec.Data["AWS_SECRET_ACCESS_KEY"] = []byte(backuptest.S3SecretKey)
	g.Expect(e.c.Update(ctx, sec)).To(Succeed())
	g.Eventually(archived, 30*time.Second, 200*time.Millisecond).Should(And(
		HaveField("State", v1alpha1.ArchiveArchiving), HaveField("Source", "arch-1"), HaveField("Error", "")))

	// The annotation gone, so is the archive's report.
	g.Expect(e.c.Patch(e.ctx, s.sts.DeepCopy(), client.RawPatch(types.MergePatchType,
		[]byte(`{"metadata":{"annotations":{"`+v1alpha1.ArchiveAnnotation+`":null}}}`)))).To(Succeed())
	g.Eventually(archived, convergeWithin, 100*time.Millisecond).Should(BeNil())
}

// The report of a running archive: Archiving while what is stored is recent enough, Behind past the bound, the
// age counted from the run's start when the archive has said nothing newer; the newest transaction said again
// only once it moved by a minute or writes paused; gaps that the oldest retained backup already covers left out.
func TestArchiveReport(t *testing.T) {
	g := NewWithT(t)
	start := time.Date(2026, 12, 8, 2, 0, 0, 0, time.UTC)
	run := &archiveRun{maxRPO: 10 * time.Second, since: start}
	seg := func(end string, last time.Time) *archive.Segment {
		return &archive.Segment{End: end, LastEventTime: last, ClosedTime: last.Add(time.Second)}
	}

	m, age := archiveReport(nil, run, archive.Status{}, "db-0", "", start.Add(5*time.Second))
	g.Expect(age).To(Equal(5 * time.Second))
	g.Expect(m.State).To(Equal(v1alpha1.ArchiveArchiving))
	g.Expect(m.Source).To(BeEmpty(), "not streaming")

	m, age = archiveReport(m, run, archive.Status{Error: "connection refused"}, "db-0", "", start.Add(11*time.Second))
	g.Expect(age).To(Equal(11 * time.Second))
	g.Expect(m).To(And(HaveField("State", v1alpha1.ArchiveBehind), HaveField("Error", "connection refused"),
		HaveField("Since.Time", start.Add(11*time.Second))))

	st := archive.Status{Streaming: true, ArchivedThrough: start.Add(20 * time.Second),
		Latest: seg("0-1-10", start.Add(19*time.Second))}
	m, age = archiveReport(m, run, st, "db-0", "", start.Add(21*time.Second))
	g.Expect(age).To(Equal(time.Second))
	g.Expect(m).To(And(HaveField("State", v1alpha1.ArchiveArchiving), HaveField("Source", "db-0"),
		HaveField("LatestPosition", "0-1-10"), HaveField("Error", "")))
	first := m.Since

	st.Latest = seg("0-1-20", start.Add(70*time.Second))
	st.ArchivedThrough = start.Add(75 * time.Second)
	m, _ = archiveReport(m, run, st, "db-0", "", start.Add(76*time.Second))
	g.Expect(m.LatestPosition).To(Equal("0-1-10"), "moved by less than a minute")
	g.Expect(m.Since).To(Equal(first))
	st.Latest = seg("0-1-30", start.Add(80*time.Second))
	m, _ = archiveReport(m, run, st, "db-0", "", start.Add(82*time.Second))
	g.Expect(m.LatestPosition).To(Equal("0-1-30"))
	st.Latest, st.ArchivedThrough = seg("0-1-31", start.Add(90*time.Second)), start.Add(91*time.Second)
	m, _ = archiveReport(m, run, st, "db-0", "", start.Add(92*time.Second))
	g.Expect(m.LatestPosition).To(Equal("0-1-30"), "moved by less than a minute, writes going on")
	st.ArchivedThrough = start.Add(105 * time.Second) // heartbeats
	m, _ = archiveReport(m, run, st, "db-0", "", start.Add(106*time.Second))
	g.Expect(m.LatestPosition).To(Equal("0-1-31"), "writes paused for 15s")

	reached := start.Add(time.Minute)
	gaps := []archive.Gap{{After: "000000000002", Before: "000000000004", From: "0-1-20", To: "0-1-25", Reached: reached},
		{After: "000000000006", Before: "000000000008", From: "0-1-40", To: "0-1-45"}}
	g.Expect(reportedGaps(gaps, "")).To(HaveLen(2))
	g.Expect(reportedGaps(gaps, "")[0].Reached.Time).To(BeTemporally("==", reached))
	g.Expect(reportedGaps(gaps, "0-1-30")).To(Equal([]v1alpha1.ArchiveGap{{From: "0-1-40", To: "0-1-45"}}))
	g.Expect(reportedGaps(gaps, "0-1-50")).To(BeEmpty())
}

// hangingStore is a store whose every call waits until release is closed, whatever its context says: a store
// that stopped answering.
type hangingStore struct {
	backup.DirStore
	listing chan struct{}
	once    sync.Once
	release chan struct{}
}

func (h *hangingStore) List(context.Context) ([]backup.Object, error) {
	h.once.Do(func() { close(h.listing) })
	<-h.release
	return nil, errors.New("released")
}

func (h *hangingStore) Put(context.Context, string, io.Reader) error {
	<-h.release
	return errors.New("released")
}

// Stopping an archive whose store hangs returns after its bound, without waiting for the store, and the stopped
// run stores nothing more: its Guard refuses, whatever the lease says.
func TestArchiveStopDoesNotWaitForAHangingStore(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	a := newArchivers(nil)
	a.stopWait = 100 * time.Millisecond
	started := make(chan error, 1)
	go func() { started <- a.Start(ctx) }()
	<-a.started

	store := &hangingStore{listing: make(chan struct{}), release: make(chan struct{})}
	defer close(store.release)
	key := types.NamespacedName{Namespace: "ns", Name: "db"}
	run, err := a.run(key, "one", func(context.Context) (*archiveRun, error) {
		return &archiveRun{maxRPO: time.Minute, closer: io.NopCloser(nil), keeper: &archive.Keeper{Store: store}}, nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(run.keeper.Guard()).To(Succeed())
	run.keeper.SetSource(&archive.Source{Host: "127.0.0.1", Port: 1})
	<-store.listing // the run is inside the store now

	stopped := make(chan struct{})
	go func() {
		a.stop(key)
		close(stopped)
	}()
	g.Eventually(stopped, convergeWithin).Should(BeClosed(), "stop waited for the hanging store")
	g.Expect(run.keeper.Guard()).To(MatchError(errArchiveStopped))
	cancel()
	g.Expect(<-started).To(Succeed())
}
