package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/backup"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// agent serves physical backups of the server beside it (internal/backup.Agent): the sidecar of a database Pod
// runs it, and a backup Job asks it (backup --method physical --agents). The server is given as for backup
// (--host 127.0.0.1 --port <admin port>, --user and MYSQL_PWD: the admin account); mariadb-backup is --tool or on
// PATH, and its scratch directory is under $TMPDIR. Also:
//
//	--listen      BACKUP_AGENT_LISTEN  where to listen (default :33064)
//	              POD_NAME             the Pod it runs in, told to callers for their manifest
//
// It runs until it is stopped (SIGTERM), and then lets a running copy end with its caller. A configuration it
// cannot work with (no password, another engine) does not end it: it answers every request with the reason
// (503), so that the Pod, which counts a sidecar that keeps restarting as not ready, stays in its Services
// and only the backups fail, saying why.
func runAgent(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("mysqlfleet-backup agent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	o.register(fs)
	var listen string
	fs.StringVar(&listen, "listen", env("BACKUP_AGENT_LISTEN", ":33064"), "where to listen")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v; %s", fs.Args(), usage)
	}
	var handler http.Handler
	src, srcErr := agentSource(&o)
	if srcErr != nil {
		reason := "the backup agent cannot take backups: " + srcErr.Error()
		_, _ = fmt.Fprintln(stderr, reason)
		handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, reason, http.StatusServiceUnavailable)
		})
	} else {
		handler = &backup.Agent{Source: src, Token: backup.AgentToken(src.Password), Pod: env("POD_NAME", ""),
			Log: stderr}
	}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	_, _ = fmt.Fprintf(stderr, "Backup agent of %s listening on %s\n", firstNonEmpty(src.Conn.Host, src.Conn.Socket),
		l.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	// The Pod is stopping: take no new request, and end a running copy at most when the server is stopped too.
	shutdown, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdown)
	return nil
}

// agentSource is the server the agent copies, from the flags; an error says why it cannot copy one.
func agentSource(o *options) (backup.Source, error) {
	if e := mysql.Engine(o.engine); e != mysql.MariaDB {
		return backup.Source{}, fmt.Errorf("it copies MariaDB servers (mariadb-backup), not %q", o.engine)
	}
	src, err := o.source()
	if err != nil {
		return src, err
	}
	if src.Password == "" {
		return src, errors.New("it needs the admin account's password (MYSQL_PWD): its token is made from it")
	}
	return src, nil
}
