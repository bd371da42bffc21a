package backup_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/backup"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

// heldManifests holds a run between its data and its manifest: Put of a manifest says so on stored, then waits
// for release.
type heldManifests struct {
	backup.Store
	stored, release chan struct{}
}

func (h *heldManifests) Put(ctx context.Context, key string, r io.Reader) error {
	if strings.HasSuffix(key, ".manifest.json") {
		close(h.stored)
		select {
		case <-h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h.Store.Put(ctx, key, r)
}

// Two runs overlap on one S3 store, as a backup-now Job and the CronJob's Job can (the CronJob's Forbid policy
// sees only its own Jobs): the older run has stored its data but not yet its manifest when the newer run
// finishes and prunes, as the runner does after every backup. Both backups must then be listed, with their
// data, and restore.
func TestConcurrentRunsKeepEachOthersData(t *testing.T) {
	ctx := context.Background()
	src := startSource(t)
	store := startS3(t).store(t, "eu-1/shop/orders", 0)

	wantOlder := state(t, src.db)
	held := &heldManifests{Store: store, stored: make(chan struct{}), release: make(chan struct{})}
	type result struct {
		m   *backup.Manifest
		err error
	}
	olderDone := make(chan result, 1)
	go func() {
		m, err := backup.Run(ctx, backup.Options{Source: src.conn(), Store: held})
		olderDone <- result{m, err}
	}()
	select {
	case <-held.stored:
	case r := <-olderDone:
		t.Fatalf("the older run ended before its manifest: %v", r.err)
	}

	// The older run's data is in the store, its manifest is not: the newer run starts, ends and prunes.
	src.exec(t, "INSERT INTO stock.items VALUES ('newer', 1)")
	wantNewer := state(t, src.db)
	newer, err := backup.Run(ctx, backup.Options{Source: src.conn(), Store: store})
	if err != nil {
		t.Fatal(err)
	}
	// As the runner prunes after its backup: the default retention and bound.
	if _, err := backup.Prune(ctx, store, backup.PruneOptions{Keep: 7}); err != nil {
		t.Fatal(err)
	}
	close(held.release)
	r := <-olderDone
	if r.err != nil {
		t.Fatal(r.err)
	}
	older := r.m
	if older.Name >= newer.Name {
		t.Fatalf("the older run is named %s, the newer %s: the newer must sort after", older.Name, newer.Name)
	}

	listed, err := backup.List(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(listed); len(got) != 2 || got[0] != newer.Name || got[1] != older.Name {
		t.Fatalf("listed %v, want %s and %s", got, newer.Name, older.Name)
	}
	for _, m := range listed {
		obj, err := store.Get(ctx, m.Object)
		if errors.Is(err, backup.ErrNotFound) {
			t.Errorf("backup %s is listed, its data %s is gone", m.Name, m.Object)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		_ = obj.Close()
	}
	if t.Failed() {
		return
	}

	// Each restores what the source held when it started; the second restore replaces what the first loaded.
	fresh := mysqltest.Start(t)
	freshDB := fresh.OpenRoot()
	for _, c := range []struct {
		m    *backup.Manifest
		want map[string]string
	}{{older, wantOlder}, {newer, wantNewer}} {
		if _, err := backup.Restore(ctx, backup.RestoreOptions{Store: store, Name: c.m.Name,
			Target: backup.Source{Flavor: flavor, Conn: mysql.DumpOptions{Socket: fresh.Socket, User: "root"}}}); err != nil {
			t.Fatalf("restore of %s: %v", c.m.Name, err)
		}
		if got := state(t, freshDB); !mapsEqual(got, c.want) {
			t.Errorf("restored %s: %v, the source held %v", c.m.Name, got, c.want)
		}
	}
}

// lateData stores the data object whole, then returns only once the run's context has ended: an upload that
// ends past the run's bound.
type lateData struct{ backup.Store }

func (l lateData) Put(ctx context.Context, key string, r io.Reader) error {
	if strings.HasSuffix(key, ".manifest.json") {
		return l.Store.Put(ctx, key, r)
	}
	if err := l.Store.Put(context.WithoutCancel(ctx), key, r); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// Prune relies on it: a run writes no manifest past its bound, even when its data is stored.
func TestRunWritesNoManifestPastItsBound(t *testing.T) {
	ctx := context.Background()
	src := startSource(t)
	store := backup.DirStore{Dir: t.TempDir()}
	// Long enough for the dump of the small shop, which lateData stores before it waits.
	_, err := backup.Run(ctx, backup.Options{Source: src.conn(), Store: lateData{store}, MaxRunDuration: 5 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "reached its bound of 5s") {
		t.Fatalf("a run past its bound: %v", err)
	}
	objs, err := store.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(objs); len(got) != 1 || !strings.HasSuffix(got[0], ".sql.gz") {
		t.Errorf("the store holds %v, want the data alone", got)
	}
}
