package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// SeedOptions of one seed: a replica whose data directory is empty, loaded with a dump of a server of its set,
// so that it can then replicate by GTID auto-positioning where the source's binary logs no longer reach back.
type SeedOptions struct {
	// Source is the server dumped: a replica in sync or the primary, as the admin account (as a backup).
	Source Source
	// Target is the empty server loaded, as its root (the dump recreates accounts, routines and views with their
	// definers, which only root may do). It must have executed no transaction: Seed refuses otherwise.
	Target Source
	// Timeout bounds the connections Seed opens itself (not the dump and the load); 0 means 10 s.
	Timeout time.Duration
	// Stderr receives the tools' standard error as well as being kept for the error message; may be nil.
	Stderr io.Writer
}

// SeedResult is what a seed loaded.
type SeedResult struct {
	// Position is the dump's GTID position, from which the target replicates.
	Position string `json:"gtidPosition"`
	// Executed is what the target has executed once seeded (Position, with MariaDB's history of each server
	// that wrote before it; see mysql.HistoryAt).
	Executed string `json:"executed"`
	// DumpSize is the bytes of SQL loaded.
	DumpSize        int64   `json:"dumpSize"`
	DurationSeconds float64 `json:"durationSeconds"`
}

// Seed streams a consistent dump of the source (the flavor's DumpCommand) straight into the target's client
// (RestoreCommand: out of the target's binary log), without holding more than a pipe's worth plus the dump's
// first and last MiB, where its GTID position is. Before it, the target is checked to hold no transaction
// (mysql.ErrHoldsTransactions otherwise: nothing is loaded) and its replication is stopped and forgotten;
// after it, the dump's position is recorded on the target (mysql.Server.FinishSeed), so that the member
// controller can point it at the primary and GTID auto-positioning resumes right after the dump. A seed that
// fails midway leaves the target with tables but still without any GTID: a later seed may load it again.
func Seed(ctx context.Context, o SeedOptions) (*SeedResult, error) {
	start := time.Now()
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	target, err := mysql.Open(o.Target.Flavor, o.Target.dsn(timeout))
	if err != nil {
		return nil, err
	}
	defer func() { _ = target.Close() }()
	if err := target.PrepareSeed(ctx); err != nil {
		return nil, fmt.Errorf("the target cannot be seeded: %w", err)
	}

	from, cleanFrom, err := withDefaultsFile(o.Source)
	if err != nil {
		return nil, err
	}
	defer cleanFrom()
	into, cleanInto, err := withDefaultsFile(o.Target)
	if err != nil {
		return nil, err
	}
	defer cleanInto()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	dumpArgs, loadArgs := o.Source.Flavor.DumpCommand(from), o.Target.Flavor.RestoreCommand(into)
	dump, dumpErr := toolCommand(ctx, dumpArgs, o.Stderr)
	load, loadOut := toolCommand(ctx, loadArgs, o.Stderr)
	load.Stdout = load.Stderr
	stdin, err := load.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := dump.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := load.Start(); err != nil {
		return nil, fmt.Errorf("failed to start %s: %w", loadArgs[0], err)
	}
	if err := dump.Start(); err != nil {
		cancel()
		_ = load.Wait()
		return nil, fmt.Errorf("failed to start %s: %w", dumpArgs[0], err)
	}
	head := &headBuffer{max: mysql.DumpEdgeSize}
	tail := &tailBuffer{max: mysql.DumpEdgeSize}
	size := &counter{}
	_, copyErr := io.Copy(io.MultiWriter(stdin, head, tail, size), stdout)
	if copyErr != nil {
		cancel() // the client stopped reading: the dump tool would block on its output
	}
	if err := dump.Wait(); err != nil || copyErr != nil {
		// Kill the client before it sees the end of its input: a cut dump must not look complete to it.
		cancel()
		loadErr := load.Wait()
		if copyErr != nil {
			return nil, fmt.Errorf("%s failed: %w: %s", filepath.Base(loadArgs[0]), errors.Join(copyErr, loadErr),
				loadOut.String())
		}
		return nil, fmt.Errorf("%s failed: %w: %s", filepath.Base(dumpArgs[0]), err, dumpErr.String())
	}
	if err := errors.Join(stdin.Close(), load.Wait()); err != nil {
		return nil, fmt.Errorf("%s failed: %w: %s", filepath.Base(loadArgs[0]), err, loadOut.String())
	}

	position, err := o.Source.Flavor.DumpGTIDPosition(head.Bytes(), tail.Bytes())
	if err != nil {
		return nil, err
	}
	source, err := mysql.Open(o.Source.Flavor, o.Source.dsn(timeout))
	if err != nil {
		return nil, err
	}
	defer func() { _ = source.Close() }()
	later, err := source.ExecutedGTIDSet(ctx)
	if err != nil {
		return nil, fmt.Errorf("failed to read what the source has executed since the dump: %w", err)
	}
	executed := mysql.HistoryAt(position, later)
	if err := target.FinishSeed(ctx, executed); err != nil {
		return nil, err
	}
	return &SeedResult{Position: position.String(), Executed: executed.String(), DumpSize: size.n,
		DurationSeconds: time.Since(start).Seconds()}, nil
}

// toolCommand is a dump tool or client run in its own process group, killed with it when ctx ends, its standard
// error kept (the tail) for messages and copied to stderr when given.
func toolCommand(ctx context.Context, args []string, stderr io.Writer) (*exec.Cmd, *tailBuffer) {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out := &tailBuffer{max: messageSize}
	cmd.Stderr = out
	if stderr != nil {
		cmd.Stderr = io.MultiWriter(out, stderr)
	}
	return cmd, out
}
