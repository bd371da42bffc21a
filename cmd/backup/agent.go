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
// It runs until it is stopped (SIGTERM), and then lets a running copy end with its caller.
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
	if e := mysql.Engine(o.engine); e != mysql.MariaDB {
		return fmt.Errorf("the backup agent copies MariaDB servers (mariadb-backup), not %q", o.engine)
	}
	src, err := o.source()
	if err != nil {
		return err
	}
	if src.Password == "" {
		return errors.New("the backup agent needs the admin account's password (MYSQL_PWD): its token is made from it")
	}
	a := &backup.Agent{Source: src, Token: backup.AgentToken(src.Password), Pod: env("POD_NAME", ""), Log: stderr}
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: a, ReadHeaderTimeout: 10 * time.Second}
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
