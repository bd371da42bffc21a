package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/backup"
)

// The report fits a termination message whatever the retention: the backup taken always, the retained backups
// as many as fit, newest first; an error is shortened.
func TestReportFitsATerminationMessage(t *testing.T) {
	p := filepath.Join(t.TempDir(), "termination-log")
	m := &backup.Manifest{Name: "20261124T000000000Z", SHA256: strings.Repeat("a", 64), GTIDPosition: "0-1001-42"}
	var kept []backup.Manifest
	for i := range 100 {
		kept = append(kept, backup.Manifest{Name: "20261124T0000000" + strings.Repeat("0", 2) + string(rune('0'+i%10)) + "Z",
			EndTime: time.Unix(int64(i), 0).UTC(), Size: int64(i), GTIDPosition: "0-1001-" + strings.Repeat("9", 5)})
	}
	if err := writeReport(p, report{Backup: m, Retained: kept}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > terminationMessageSize {
		t.Fatalf("the report holds %d bytes, more than a termination message's %d", len(b), terminationMessageSize)
	}
	var got struct {
		Backup   *backup.Manifest  `json:"backup"`
		Retained []json.RawMessage `json:"retained"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("the report is not JSON: %v\n%s", err, b)
	}
	if got.Backup == nil || got.Backup.Name != m.Name {
		t.Fatalf("the report lost the backup: %s", b)
	}
	if len(got.Retained) == 0 || len(got.Retained) == 100 {
		t.Fatalf("%d retained backups in the report, want as many as fit", len(got.Retained))
	}

	if err := writeReport(p, report{Error: strings.Repeat("x", 10000)}); err != nil {
		t.Fatal(err)
	}
	if b, _ = os.ReadFile(p); len(b) > terminationMessageSize {
		t.Fatalf("an error report of %d bytes", len(b))
	}
}
