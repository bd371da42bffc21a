package member

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/archive"
	"github.com/mysqlfleet/mysqlfleet/internal/backup"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// The binary-log archive (spec.backup.archive) runs here, in the leader, one archive.Keeper per set that asks for
// one (v1alpha1.ArchiveAnnotation), rather than in a Deployment of its own:
//   - at most one process archives a set: the leader, whose Lease already decides who changes the servers, and
//     which checks the same lease before every object it stores (the Keeper's Guard), so that a deposed leader
//     that has not yet stopped cannot interleave its segments with its successor's;
//   - it reads the primary the pass has just established, at its Pod's address, and follows a switchover or a
//     failover in the same pass, with no Service or kube-proxy between;
//   - its state goes into the report the hub already reads, and no new kind, RBAC or Pod is needed in members.
//
// The price: the store's credentials are read by this controller from the target's credentials Secret (which it
// may already get, as it gets the database's own), as static keys (backup.StoreCredentials); a pod identity
// (IRSA, workload identity) serves the backup Jobs only. And the archives of every set share this process: each
// holds at most archiveMaxSize of binary log in memory.
const (
	// archiverServerID is the server_id the archive reads the binary log with. A server ends any other dump
	// thread of the same server_id, so it must be no server's of the set: theirs are 1000+ordinal (data
	// directories of an early release) or random from 65536 up (render.ServerIDScript).
	archiverServerID = 65535
	// archiveMaxSize closes a segment at 16 MiB of binary log (archive.DefaultMaxSize is 64 MiB): kept in memory
	// per set until stored.
	archiveMaxSize = 16 << 20
	// archiveLatestEvery is how far the newest archived transaction must have moved before the report says so
	// again while the state stays the same: a busy set would otherwise rewrite its report every segment.
	archiveLatestEvery = time.Minute
	// archiveQuietAfter is how long after the last segment closed the newest archived transaction is said
	// whatever it moved by: writes have paused, and the report should say where the archive stands.
	archiveQuietAfter = 15 * time.Second
	// archiveGapsReported is how many gaps the report names (MemberArchive.Gaps).
	archiveGapsReported = 5
)

var (
	archiveRecoveryPointAge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mysqlfleet_archive_recovery_point_age_seconds",
		Help: "Age of the oldest transaction of the set's primary that the binary-log archive may not have stored yet " +
			"(0 while it has stored everything it read), as of the last pass.",
	}, []string{"namespace", "statefulset"})
	archiveGaps = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mysqlfleet_archive_gaps",
		Help: "Places where the set's stored binary-log archive does not continue by GTID position, after its oldest retained backup.",
	}, []string{"namespace", "statefulset"})
)

func init() { ctrlmetrics.Registry.MustRegister(archiveRecoveryPointAge, archiveGaps) }

// archivers are the archives this process runs, by StatefulSet. It is a manager Runnable that needs the leader
// election: its context is the leader's, and every archive stops when it ends.
type archivers struct {
	mu   sync.Mutex
	ctx  context.Context
	runs map[types.NamespacedName]*archiveRun
	// guard refuses stores once the Lease may have passed to a standby; nil allows them.
	guard func() error
	// started is closed once Start has recorded the context.
	started chan struct{}
	// stopWait bounds how long stop waits for a run to end (archiveStopWait when zero).
	stopWait time.Duration
}

// archiveStopWait is how long stop waits for a run to store what it completed: a store that hangs (a Put that
// never returns) must not hold the pass, and the set's next run, forever. A run not done by then stores nothing
// more (its Guard refuses once it is stopped); a Put already under way may still land, and the archive's
// manifest-last order and checksums keep such a late object from passing for a segment.
const archiveStopWait = 30 * time.Second

// errArchiveStopped is the Guard's refusal once a run was stopped.
var errArchiveStopped = errors.New("the archive was stopped")

// archiveRun is one set's running archive.
type archiveRun struct {
	// identity is what the run was started with: the annotation and the credentials Secret's resourceVersion;
	// a change restarts it.
	identity string
	// stopped is set when the run is stopped: its Guard refuses every store after it.
	stopped atomic.Bool
	maxRPO  time.Duration
	keeper  *archive.Keeper
	since   time.Time
	cancel  context.CancelFunc
	done    chan struct{}
	closer  io.Closer
}

func newArchivers(guard func() error) *archivers {
	return &archivers{runs: map[types.NamespacedName]*archiveRun{}, guard: guard, started: make(chan struct{})}
}

// Start keeps the leader's context for the archives until it ends, then stops them.
func (a *archivers) Start(ctx context.Context) error {
	a.mu.Lock()
	a.ctx = ctx
	a.mu.Unlock()
	close(a.started)
	<-ctx.Done()
	a.mu.Lock()
	keys := make([]types.NamespacedName, 0, len(a.runs))
	for k := range a.runs {
		keys = append(keys, k)
	}
	a.mu.Unlock()
	for _, k := range keys {
		a.stop(k)
	}
	return nil
}

// stop ends key's archive, if one runs, and waits until it has stored what it completed.
func (a *archivers) stop(key types.NamespacedName) {
	a.mu.Lock()
	run := a.runs[key]
	delete(a.runs, key)
	a.mu.Unlock()
	archiveRecoveryPointAge.DeleteLabelValues(key.Namespace, key.Name)
	archiveGaps.DeleteLabelValues(key.Namespace, key.Name)
	if run == nil {
		return
	}
	run.stopped.Store(true)
	run.cancel()
	select {
	case <-run.done:
		_ = run.closer.Close()
	case <-time.After(cmp.Or(a.stopWait, archiveStopWait)):
		go func() {
			<-run.done
			_ = run.closer.Close()
		}()
	}
}

// run returns key's archive as identity asks, starting it (with open) when none runs or the running one was
// started otherwise; nil, nil while the leader's context is not known yet.
func (a *archivers) run(key types.NamespacedName, identity string, open func(context.Context) (*archiveRun, error)) (*archiveRun, error) {
	a.mu.Lock()
	run, ctx := a.runs[key], a.ctx
	a.mu.Unlock()
	if ctx == nil {
		return nil, nil
	}
	if run != nil && run.identity == identity {
		return run, nil
	}
	if run != nil {
		a.stop(key)
	}
	rctx, cancel := context.WithCancel(ctx)
	run, err := open(rctx)
	if err != nil {
		cancel()
		return nil, err
	}
	run.identity, run.cancel, run.done, run.since = identity, cancel, make(chan struct{}), time.Now()
	run.keeper.Guard = func() error {
		if run.stopped.Load() {
			return errArchiveStopped
		}
		if a.guard != nil {
			return a.guard()
		}
		return nil
	}
	go func() {
		defer close(run.done)
		run.keeper.Run(rctx)
	}()
	a.mu.Lock()
	a.runs[key] = run
	a.mu.Unlock()
	return run, nil
}

// archive keeps s's archive as its StatefulSet asks (v1alpha1.ArchiveAnnotation), pointed at primary (the Pod
// labelled primary after this pass, "" for none), and says how it keeps up; nil when the set asks for none.
func (r *Reconciler) archive(ctx context.Context, s *scope, rep *v1alpha1.ReplicationReport, primary string) *v1alpha1.MemberArchive {
	if r.archives == nil {
		return nil
	}
	value := s.sts.Annotations[v1alpha1.ArchiveAnnotation]
	if value == "" {
		r.archives.stop(s.key)
		return nil
	}
	var prev *v1alpha1.MemberArchive
	if s.prev != nil {
		prev = s.prev.Archive
	}
	now := time.Now()
	var req v1alpha1.ArchiveRequest
	if err := json.Unmarshal([]byte(value), &req); err != nil {
		return archiveFailed(prev, fmt.Errorf("the annotation %s cannot be read: %w", v1alpha1.ArchiveAnnotation, err), now)
	}
	maxRPO, err := time.ParseDuration(req.MaxRecoveryPointAge)
	if err != nil {
		return archiveFailed(prev, fmt.Errorf("maxRecoveryPointAge %q: %w", req.MaxRecoveryPointAge, err), now)
	}
	maxAge, err := time.ParseDuration(req.MaxSegmentAge)
	if err != nil {
		return archiveFailed(prev, fmt.Errorf("maxSegmentAge %q: %w", req.MaxSegmentAge, err), now)
	}
	sec := &corev1.Secret{}
	secKey := types.NamespacedName{Namespace: s.key.Namespace, Name: req.CredentialsSecret}
	if err := r.APIReader.Get(ctx, secKey, sec); err != nil {
		return archiveFailed(prev, fmt.Errorf("failed to read the store's credentials Secret %s: %w", secKey, err), now)
	}
	log := ctrl.FromContext(ctx).WithName("archive").WithValues("statefulSet", s.key.String())
	run, err := r.archives.run(s.key, value+"\x00"+sec.ResourceVersion, func(ctx context.Context) (*archiveRun, error) {
		store, closer, err := openArchiveStore(ctx, req, sec.Data)
		if err != nil {
			return nil, err
		}
		log.Info("Archiving the binary log", "store", fmt.Sprint(store))
		return &archiveRun{maxRPO: maxRPO, closer: closer, keeper: &archive.Keeper{Store: store,
			ServerID: archiverServerID, MaxAge: maxAge, MaxSize: archiveMaxSize, Log: logWriter{log}}}, nil
	})
	switch {
	case err != nil:
		return archiveFailed(prev, err, now)
	case run == nil:
		return prev // not leading yet: this pass changes nothing
	}
	run.keeper.SetSource(r.archiveSource(s, primary))
	m, age := archiveReport(prev, run, run.keeper.Status(), primary, oldestBackupPosition(rep), now)
	archiveRecoveryPointAge.WithLabelValues(s.key.Namespace, s.key.Name).Set(age.Seconds())
	archiveGaps.WithLabelValues(s.key.Namespace, s.key.Name).Set(float64(len(m.Gaps)))
	return m
}

// archiveSource is the server the archive reads: primary's, as the replication account; nil without one.
func (r *Reconciler) archiveSource(s *scope, primary string) *archive.Source {
	if primary == "" || s.creds == nil {
		return nil
	}
	for _, pod := range s.pods {
		if pod == nil || pod.Name != primary {
			continue
		}
		addr, err := r.Resolve(pod)
		if err != nil {
			return nil
		}
		return &archive.Source{Host: addr.Host, Port: addr.Port, User: v1alpha1.ReplicationUser,
			Password: s.creds.replication}
	}
	return nil
}

// openArchiveStore opens the store an ArchiveRequest names with the credentials Secret's data.
func openArchiveStore(ctx context.Context, req v1alpha1.ArchiveRequest, data map[string][]byte) (backup.Store, io.Closer, error) {
	cfg := backup.StoreConfig{Target: req.Target, Bucket: req.Bucket, Container: req.Container,
		Endpoint: req.Endpoint, Prefix: req.Prefix}
	if err := backup.StoreCredentials(&cfg, data); err != nil {
		return nil, nil, err
	}
	return backup.OpenStore(ctx, cfg)
}

// archiveReport is the report of a running archive whose Keeper says st, and the recovery point's age: now
// less the time through which everything is stored, counted at the earliest from when this process began to
// archive (a new leader does not know what its predecessor stored before it looked).
func archiveReport(prev *v1alpha1.MemberArchive, run *archiveRun, st archive.Status, primary, backupPos string,
	now time.Time) (*v1alpha1.MemberArchive, time.Duration) {
	through := st.ArchivedThrough
	if through.Before(run.since) {
		through = run.since
	}
	age := max(now.Sub(through), 0)
	state := v1alpha1.ArchiveArchiving
	if age > run.maxRPO {
		state = v1alpha1.ArchiveBehind
	}
	m := &v1alpha1.MemberArchive{State: state, Since: metav1.NewTime(now), Gaps: reportedGaps(st.Gaps, backupPos)}
	if st.Streaming {
		m.Source = primary
	} else {
		m.Error = st.Error
	}
	if st.Latest != nil {
		t := metav1.NewTime(st.Latest.LastEventTime)
		m.LatestTime, m.LatestPosition = &t, st.Latest.End
	}
	if prev != nil && prev.State == state {
		m.Since = prev.Since
		// The newest archived transaction is said again once it moved by archiveLatestEvery, or once writes
		// paused (no segment closed for archiveQuietAfter): then it stays, and saying it costs one write.
		quiet := st.Latest != nil && now.Sub(st.Latest.ClosedTime) >= archiveQuietAfter
		if prev.LatestTime != nil && m.LatestTime != nil && !quiet &&
			m.LatestTime.Sub(prev.LatestTime.Time) < archiveLatestEvery {
			m.LatestTime, m.LatestPosition = prev.LatestTime, prev.LatestPosition
		}
	}
	return m, age
}

// archiveFailed is the report of an archive that could not start: Behind at once, with the reason, since it
// stores nothing.
func archiveFailed(prev *v1alpha1.MemberArchive, err error, now time.Time) *v1alpha1.MemberArchive {
	m := &v1alpha1.MemberArchive{State: v1alpha1.ArchiveBehind, Since: metav1.NewTime(now), Error: err.Error()}
	if prev != nil {
		m.LatestTime, m.LatestPosition = prev.LatestTime, prev.LatestPosition
		if prev.State == m.State {
			m.Since = prev.Since
		}
	}
	return m
}

// reportedGaps are the gaps some restore could meet: those whose far side the oldest retained backup's
// position does not already hold (a restore from any retained backup starts past the others).
func reportedGaps(gaps []archive.Gap, oldestBackupPos string) []v1alpha1.ArchiveGap {
	var out []v1alpha1.ArchiveGap
	for _, g := range gaps {
		if mysql.TextContains(mysql.MariaDBFlavor{}, oldestBackupPos, g.To) {
			continue
		}
		gap := v1alpha1.ArchiveGap{From: g.From, To: g.To}
		if !g.Reached.IsZero() {
			t := metav1.NewTime(g.Reached)
			gap.Reached = &t
		}
		out = append(out, gap)
	}
	return out[:min(len(out), archiveGapsReported)]
}

// oldestBackupPosition is the GTID position of the set's oldest retained backup, "" without one.
func oldestBackupPosition(rep *v1alpha1.ReplicationReport) string {
	b := rep.Backups
	switch {
	case b == nil:
		return ""
	case len(b.Retained) > 0:
		return b.Retained[len(b.Retained)-1].GTIDPosition // newest first
	case b.LastSuccessful != nil:
		return b.LastSuccessful.GTIDPosition
	}
	return ""
}

// logWriter logs each line written to it.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	for line := range bytes.Lines(p) {
		if line = bytes.TrimSpace(line); len(line) > 0 {
			w.log.Info(string(line))
		}
	}
	return len(p), nil
}
