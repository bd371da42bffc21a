package backup

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// Manifest describes one complete backup. It is written after the data object, so its presence is what makes a
// backup exist: listing, retention and restore read manifests only.
type Manifest struct {
	// FormatVersion is the manifest's format; readers refuse a newer one.
	FormatVersion int `json:"formatVersion"`
	// Name identifies the backup in its store: the start time, UTC, to the millisecond.
	Name string `json:"name"`
	// Method is how the backup was taken: logical (a SQL dump) or physical (mariadb-backup's copy of the data
	// directory). Manifests written before physical backups existed have none, and are logical.
	Method Method `json:"method,omitempty"`
	// Object is the key of the data object: NAME.sql.gz, a gzip-compressed SQL dump (logical), or NAME.xb.zst,
	// a zstd-compressed xbstream of mariadb-backup (physical).
	Object string `json:"object"`
	// StartTime is when the dump started, EndTime when the data object was stored.
	StartTime time.Time `json:"startTime"`
	EndTime   time.Time `json:"endTime"`
	// DurationSeconds is EndTime - StartTime.
	DurationSeconds float64 `json:"durationSeconds"`
	// Engine is MySQL or MariaDB; ServerVersion the dumped server's version as the dump tool reports it. A
	// physical backup restores only into a server of the same major.minor version.
	Engine        mysql.Engine `json:"engine"`
	ServerVersion string       `json:"serverVersion,omitempty"`
	// GTIDPosition is the GTID set of the dump's snapshot, in the engine's notation: what a server restored
	// from it has applied.
	GTIDPosition string `json:"gtidPosition"`
	// Cluster and Namespace name the MySQLCluster; Member the member cluster; Pod the database Pod dumped from
	// and Host the address the dump tool connected to.
	Cluster   string `json:"cluster,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Member    string `json:"member,omitempty"`
	Pod       string `json:"pod,omitempty"`
	Host      string `json:"host,omitempty"`
	// Size is the data object's size in bytes (compressed), DumpSize the SQL dump's or the xbstream's.
	Size     int64 `json:"size"`
	DumpSize int64 `json:"dumpSize"`
	// SHA256 is the hex SHA-256 of the data object, computed on the stream as it was uploaded.
	SHA256 string `json:"sha256"`
	// Compression is how the data is compressed: gzip (logical), zstd (physical).
	Compression string `json:"compression"`
}

const (
	// formatVersion is that of logical backups' manifests, which readers of format 1 still read right; physical
	// backups' are physicalFormatVersion. A reader reads both.
	formatVersion   = 1
	manifestSuffix  = ".manifest.json"
	dataSuffix      = ".sql.gz"
	nameTimeLayout  = "20060102T150405.000Z"
	compressionGzip = "gzip"
)

// backupName is the name of a backup started at t; names sort as their start times do.
func backupName(t time.Time) string {
	return strings.Replace(t.UTC().Format(nameTimeLayout), ".", "", 1)
}

func manifestKey(name string) string { return name + manifestSuffix }
func dataKey(name string) string     { return name + dataSuffix }

func (m *Manifest) validate() error {
	switch {
	case m.FormatVersion < 1 || m.FormatVersion > physicalFormatVersion:
		return fmt.Errorf("manifest format %d is not one this program reads (1 to %d)", m.FormatVersion,
			physicalFormatVersion)
	case m.Name == "" || m.Object == "":
		return errors.New("manifest without a name or object")
	case len(m.SHA256) != 64:
		return fmt.Errorf("manifest with an invalid sha256 %q", m.SHA256)
	}
	switch m.method() {
	case Logical:
		if m.Compression != compressionGzip {
			return fmt.Errorf("logical backup with unknown compression %q", m.Compression)
		}
	case Physical:
		if m.Compression != compressionZstd || m.FormatVersion < physicalFormatVersion {
			return fmt.Errorf("physical backup with compression %q in manifest format %d", m.Compression,
				m.FormatVersion)
		}
	default:
		return fmt.Errorf("manifest with unknown method %q", m.Method)
	}
	return nil
}

// method is the backup's Method; a manifest without one is logical (older than physical backups).
func (m *Manifest) method() Method { return cmp.Or(m.Method, Logical) }

func writeManifest(ctx context.Context, s Store, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return s.Put(ctx, manifestKey(m.Name), bytes.NewReader(append(b, '\n')))
}

// ReadManifest reads the manifest of the backup name.
func ReadManifest(ctx context.Context, s Store, name string) (*Manifest, error) {
	return readManifest(ctx, s, manifestKey(name))
}

func readManifest(ctx context.Context, s Store, key string) (*Manifest, error) {
	r, err := s.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	var m Manifest
	// A manifest is small; a big one is not ours.
	dec := json.NewDecoder(io.LimitReader(r, 1<<20))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("failed to read manifest %s in %s: %w", key, s, err)
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("manifest %s in %s: %w", key, s, err)
	}
	return &m, nil
}

// choose reads the manifest of the backup name, or of the newest backup of method when name is empty.
func choose(ctx context.Context, s Store, name string, method Method) (*Manifest, error) {
	if name != "" {
		return ReadManifest(ctx, s, name)
	}
	backups, listErr := List(ctx, s)
	for i := range backups {
		if backups[i].method() == method {
			return &backups[i], nil
		}
	}
	return nil, fmt.Errorf("no %s backup in %s: %w", method, s, errors.Join(ErrNotFound, listErr))
}

// List returns the complete backups in a store, newest first: those with a manifest, of both methods. A data object without one
// (an upload cut short, or a backup still running) is not a backup and is not listed.
func List(ctx context.Context, s Store) ([]Manifest, error) {
	objs, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	var out []Manifest
	var errs []error
	for _, o := range objs {
		if !strings.HasSuffix(o.Key, manifestSuffix) || strings.Contains(o.Key, "/") {
			continue
		}
		m, err := readManifest(ctx, s, o.Key)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, *m)
	}
	slices.SortFunc(out, func(a, b Manifest) int {
		if c := b.StartTime.Compare(a.StartTime); c != 0 {
			return c
		}
		return strings.Compare(b.Name, a.Name)
	})
	return out, errors.Join(errs...)
}

// PruneOptions say what Prune keeps.
type PruneOptions struct {
	// Keep is how many of the newest backups to keep, at least 1.
	Keep int
	// MaxRunDuration is the longest a run writing to the store may take (Options.MaxRunDuration); zero means
	// DefaultMaxRunDuration. It must be at least that of every run that writes to the store.
	MaxRunDuration time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// clockSkew is how far the store's clock, which dates objects, may be behind the pruning runner's, and how late
// a manifest upload begun just before its run's bound may land. Prune keeps unmanifested data that much longer.
const clockSkew = time.Hour

// Prune keeps the newest Keep backups and deletes the others, manifest before data, so that a prune cut short
// never leaves a listed backup without data. It returns the backups it deleted. An unreadable manifest stops
// it: it would not know what it deletes.
//
// It also deletes data objects without a manifest, which no one can restore, left by runs that failed or were
// killed. Such an object may also be a run's in progress that has stored its data and is about to write its
// manifest, and that run may have started before the newest backup: runs overlap when a backup-now Job (which
// is not the CronJob's, so its Forbid policy does not see it) meets a scheduled one, or a Pod on a lost node
// runs on after its Job was given up. Deleting its data would leave the manifest written next listing a backup
// without data. So Prune deletes unmanifested data only when its store dates it more than MaxRunDuration plus
// clockSkew ago: every run writes its manifest within MaxRunDuration of its start, which came before its data
// was stored (Run enforces that itself), so the run that wrote it has ended. As before, it keeps unmanifested
// data named after the newest backup, and all of it while no backup is listed; and an object the store does not
// date.
//
// Serialising the Jobs instead would not be enough: a Pod can outlive its Job, and only a bound that the
// runner enforces on itself holds then.
func Prune(ctx context.Context, s Store, o PruneOptions) ([]Manifest, error) {
	if o.Keep < 1 {
		return nil, fmt.Errorf("retention must keep at least one backup, not %d", o.Keep)
	}
	if o.MaxRunDuration < 0 {
		return nil, fmt.Errorf("a run cannot take at most %s", o.MaxRunDuration)
	}
	maxRun := cmp.Or(o.MaxRunDuration, DefaultMaxRunDuration)
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	backups, err := List(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("not pruning %s: %w", s, err)
	}
	// Listed after the manifests were read: data stored and manifested in between is young, and kept.
	objs, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	var deleted []Manifest
	var errs []error
	if len(backups) > o.Keep {
		for _, m := range backups[o.Keep:] {
			if err := s.Delete(ctx, manifestKey(m.Name)); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := s.Delete(ctx, m.Object); err != nil {
				errs = append(errs, err)
			}
			deleted = append(deleted, m)
		}
	}
	if len(backups) > 0 {
		listed := map[string]bool{}
		for _, m := range backups {
			listed[m.Object] = true
		}
		newest := backups[0].Name
		abandonedBefore := now().Add(-maxRun - clockSkew)
		for _, obj := range objs {
			name, ok := strings.CutSuffix(obj.Key, dataSuffix)
			if !ok {
				name, ok = strings.CutSuffix(obj.Key, physicalSuffix)
			}
			if !ok || listed[obj.Key] || strings.Contains(obj.Key, "/") || name >= newest ||
				obj.LastModified.IsZero() || !obj.LastModified.Before(abandonedBefore) {
				continue
			}
			if err := s.Delete(ctx, obj.Key); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return deleted, errors.Join(errs...)
}
