package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
	"os"
	"path/filepath"
	"testing"
)

// TestSeedRefusesATargetThatHoldsTransactions runs the seed subcommand as the member controller's seed Job would,
// against real servers: a target that has executed a transaction is refused before anything is loaded, and the
// report says why. (The seed itself is tested in internal/backup and, as a Job, in controllers.)
func TestSeedRefusesATargetThatHoldsTransactions(t *testing.T) {
	ctx := context.Background()
	servers := mysqltest.StartN(t, 2)
	src, target := servers[0], servers[1]
	// root over TCP, as the Job logs in; made with the binary log on, so that the target holds a transaction.
	for _, q := range []string{"CREATE OR REPLACE USER 'root'@'127.0.0.1' IDENTIFIED BY 'pw'",
		"GRANT ALL PRIVILEGES ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION"} {
		if _, err := target.OpenRoot().Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	report := filepath.Join(t.TempDir(), "termination-log")
	t.Setenv("BACKUP_ENGINE", "MariaDB")
	t.Setenv("MYSQL_PWD", "")
	t.Setenv("SEED_TARGET_PWD", "pw")
	var out, errOut bytes.Buffer
	err := run(ctx, []string{"seed", "--socket=" + src.Socket, fmt.Sprintf("--target-host=127.0.0.1:%d", target.Port),
		"--report-file=" + report}, &out, &errOut)
	if err == nil {
		t.Fatalf("seeding a server that holds transactions succeeded: %s", errOut.String())
	}
	b, rerr := os.ReadFile(report)
	if rerr != nil {
		t.Fatal(rerr)
	}
	var r seedReport
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("the report %q: %v", b, err)
	}
	if r.Seed != nil || !bytes.Contains([]byte(r.Error), []byte("the server holds transactions")) {
		t.Fatalf("the report says %+v, want the refusal", r)
	}

	if err := run(ctx, []string{"seed", "--socket=" + src.Socket}, &out, &errOut); err == nil ||
		err.Error() != "no server to seed: set --target-host (SEED_TARGET_HOST)" {
		t.Fatalf("without a target: %v", err)
	}
}
