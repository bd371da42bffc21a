package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/mysqlfleet/mysqlfleet/internal/backup"
)

// putSegments stores segments as the archiver does (object, then manifest), one per position step: segment i
// goes from ends[i-1] (empty for the first) to ends[i].
func putSegments(t *testing.T, s backup.Store, ends ...string) {
	t.Helper()
	ctx := context.Background()
	start := ""
	for i, end := range ends {
		name := fmt.Sprintf("%012d", i+1)
		seg := Segment{FormatVersion: formatVersion, Name: name, Object: Prefix + name + segmentSuffix, Start: start, End: end}
		m, err := json.Marshal(seg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, seg.Object, bytes.NewReader([]byte("binlog"))); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, Prefix+name+manifestSuffix, bytes.NewReader(m)); err != nil {
			t.Fatal(err)
		}
		start = end
	}
}

func names(segs []Segment) []string {
	var out []string
	for _, s := range segs {
		out = append(out, s.Name)
	}
	return out
}

// keys lists a store's objects, sorted.
func keys(t *testing.T, s backup.Store) []string {
	t.Helper()
	objs, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range objs {
		out = append(out, o.Key)
	}
	slices.Sort(out)
	return out
}

// Prune deletes, object and manifest, exactly the segments that every retained backup holds, except the newest;
// what is left still replays from each retained backup.
func TestPruneKeepsWhatABackupCanRollForwardWith(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		ends    []string
		keep    []string
		deleted []string
	}{
		{name: "no backup: the archive may be all there is", ends: []string{"0-1-10", "0-1-20", "0-1-30"}},
		{name: "segments before the oldest backup", ends: []string{"0-1-10", "0-1-20", "0-1-30", "0-1-40"},
			keep: []string{"0-1-35", "0-1-25"}, deleted: []string{"000000000001", "000000000002"}},
		{name: "a backup inside a segment keeps it", ends: []string{"0-1-10", "0-1-20", "0-1-30"},
			keep: []string{"0-1-15"}, deleted: []string{"000000000001"}},
		{name: "the newest stays, for the archiver to resume from", ends: []string{"0-1-10", "0-1-20", "0-1-30"},
			keep: []string{"0-1-30"}, deleted: []string{"000000000001", "000000000002"}},
		{name: "every domain must be held", ends: []string{"0-1-10,1-2-7", "0-1-20,1-2-9"},
			keep: []string{"0-1-25,1-2-5"}},
		{name: "a backup that holds no GTID keeps everything", ends: []string{"0-1-10", "0-1-20"}, keep: []string{""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := backup.DirStore{Dir: t.TempDir()}
			putSegments(t, s, tc.ends...)
			before := keys(t, s)
			deleted, err := Prune(ctx, s, tc.keep)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(deleted); !slices.Equal(got, tc.deleted) {
				t.Fatalf("deleted %v, want %v", got, tc.deleted)
			}
			var want []string
			for _, k := range before {
				gone := false
				for _, d := range tc.deleted {
					gone = gone || k == Prefix+d+segmentSuffix || k == Prefix+d+manifestSuffix
				}
				if !gone {
					want = append(want, k)
				}
			}
			if got := keys(t, s); !slices.Equal(got, want) {
				t.Errorf("left %v, want %v", got, want)
			}
			left, err := List(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			for _, from := range tc.keep {
				if _, err := choose(left, ReplayOptions{From: from, UntilGTID: tc.ends[len(tc.ends)-1]}); err != nil && from != "" {
					t.Errorf("after the prune, a replay from the backup at %s: %v", from, err)
				}
			}
		})
	}
}

// A position Prune cannot read deletes nothing: it would not know what that backup holds. A segment object
// without its manifest (an upload cut short) is not Prune's to delete.
func TestPruneRefusesWhatItCannotRead(t *testing.T) {
	ctx := context.Background()
	s := backup.DirStore{Dir: t.TempDir()}
	putSegments(t, s, "0-1-10", "0-1-20", "0-1-30")
	orphan := Prefix + "000000000000" + segmentSuffix
	if err := s.Put(ctx, orphan, bytes.NewReader([]byte("cut short"))); err != nil {
		t.Fatal(err)
	}
	before := keys(t, s)
	if _, err := Prune(ctx, s, []string{"0-1-25", "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5"}); err == nil {
		t.Error("a MySQL GTID set was taken for a MariaDB position")
	}
	if got := keys(t, s); !slices.Equal(got, before) {
		t.Errorf("a refused prune deleted %v", slices.DeleteFunc(before, func(k string) bool { return slices.Contains(got, k) }))
	}
	if _, err := Prune(ctx, s, []string{"0-1-25"}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(keys(t, s), orphan) {
		t.Error("the segment object without a manifest was deleted")
	}
}
