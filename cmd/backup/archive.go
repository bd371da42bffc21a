package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/archive"
	"github.com/mysqlfleet/mysqlfleet/internal/backup"
)

// archive keeps the binary log of --host in the target's binlog/ (internal/archive), as a replication client
// with --user and MYSQL_PWD (an account with REPLICATION SLAVE), until it is stopped (SIGTERM). When the stream
// ends (the primary failed over, restarted, the connection broke) it starts again after --retry, from where the
// store's archive ends, on whichever server --host names then: pointed at <name>-primary, it follows the
// primary. Also:
//
//	--server-id   BACKUP_ARCHIVE_SERVER_ID  its server_id as a replication client (required; unique in the set)
//	--from        BACKUP_ARCHIVE_FROM       where to start when the store holds no segment (default: the server's
//	                                        whole binary log)
//	--max-age     BACKUP_ARCHIVE_MAX_AGE    how long a segment stays open after its first transaction (5s)
//	--retry       BACKUP_ARCHIVE_RETRY      how long to wait before reading again after the stream ended (1s)
//
// replay rolls a server forward with the archive: from --from (the position the server stands at, such as a
// restored backup's) to --until-gtid (inclusive), --until-time (RFC 3339; exclusive) or the archive's end, with
// mariadb-binlog into the server at --socket (or --host) as --user and MYSQL_PWD. It refuses a gap before the
// target, and a target past the archive's end.
func runArchive(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("mysqlfleet-backup archive", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	o.register(fs)
	var serverID uint
	var from string
	var maxAge, retry time.Duration
	fs.UintVar(&serverID, "server-id", uint(envInt("BACKUP_ARCHIVE_SERVER_ID", 0)), "server_id as a replication client")
	fs.StringVar(&from, "from", env("BACKUP_ARCHIVE_FROM", ""), "where to start in an empty store")
	fs.DurationVar(&maxAge, "max-age", envDuration("BACKUP_ARCHIVE_MAX_AGE", archive.DefaultMaxAge), "segment age")
	fs.DurationVar(&retry, "retry", envDuration("BACKUP_ARCHIVE_RETRY", time.Second), "wait before reading again")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v; %s", fs.Args(), usage)
	}
	if serverID == 0 || serverID > 1<<32-1 {
		return errors.New("archive needs --server-id (BACKUP_ARCHIVE_SERVER_ID): 1 to 4294967295, unique in the set")
	}
	src, err := o.source()
	if err != nil {
		return err
	}
	o.azure()
	store, closer, err := backup.OpenStore(ctx, o.store)
	if err != nil {
		return err
	}
	defer func() { _ = closer.Close() }()
	a := &archive.Archiver{Store: store, ServerID: uint32(serverID), From: from, MaxAge: maxAge, Log: stderr,
		Source: archive.Source{Host: src.Conn.Host, Port: src.Conn.Port, User: src.Conn.User, Password: src.Password}}
	for {
		err := a.Run(ctx)
		if ctx.Err() != nil {
			return nil
		}
		_, _ = fmt.Fprintf(stderr, "Archiving stopped, again in %s: %v\n", retry, err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(retry):
		}
	}
}

func runReplay(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("mysqlfleet-backup replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	o.register(fs)
	var from, untilGTID, untilTime, client string
	fs.StringVar(&from, "from", env("BACKUP_REPLAY_FROM", ""), "the GTID position the server stands at")
	fs.StringVar(&untilGTID, "until-gtid", env("BACKUP_REPLAY_UNTIL_GTID", ""), "replay up to this GTID, inclusive")
	fs.StringVar(&untilTime, "until-time", env("BACKUP_REPLAY_UNTIL_TIME", ""), "replay what was logged before this time (RFC 3339)")
	fs.StringVar(&client, "client", env("BACKUP_REPLAY_CLIENT", "mariadb"), "the client that loads the replay")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v; %s", fs.Args(), usage)
	}
	ro := archive.ReplayOptions{From: from, UntilGTID: untilGTID, Binlog: o.tool, Stderr: stderr,
		WorkDir: o.workDir}
	if untilTime != "" {
		t, err := time.Parse(time.RFC3339, untilTime)
		if err != nil {
			return fmt.Errorf("--until-time %q: %w", untilTime, err)
		}
		ro.UntilTime = t
	}
	// The client takes MYSQL_PWD from the environment, as the runner does.
	ro.Client = []string{client, "--no-defaults", "--user=" + o.user}
	if o.socket != "" {
		ro.Client = append(ro.Client, "--socket="+o.socket)
	} else {
		ro.Client = append(ro.Client, "--host="+o.host, "--port="+strconv.Itoa(o.port))
	}
	o.azure()
	store, closer, err := backup.OpenStore(ctx, o.store)
	if err != nil {
		return err
	}
	defer func() { _ = closer.Close() }()
	ro.Store = store
	segs, err := archive.Replay(ctx, ro)
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(stderr, "Replayed %d segments from %q\n", len(segs), from)
	return nil
}

func envDuration(key string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(env(key, "")); err == nil {
		return d
	}
	return def
}
