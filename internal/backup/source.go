package backup

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	driver "github.com/go-sql-driver/mysql"
)

// dsn is a go-sql-driver DSN for the source's connection: the same account and address the tools use.
func (s Source) dsn(timeout time.Duration) string {
	cfg := driver.NewConfig()
	cfg.User, cfg.Passwd = s.Conn.User, s.Password
	if s.Conn.Socket != "" {
		cfg.Net, cfg.Addr = "unix", s.Conn.Socket
	} else {
		port := s.Conn.Port
		if port == 0 {
			port = 3306
		}
		cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(s.Conn.Host, strconv.Itoa(port))
	}
	cfg.Timeout = timeout
	return cfg.FormatDSN()
}

// hostname asks the server its name: @@report_host, which mysqlfleet sets to the Pod's name, else @@hostname,
// which in a Kubernetes Pod is the Pod's name too.
func (s Source) hostname(ctx context.Context, timeout time.Duration) (string, error) {
	db, err := sql.Open("mysql", s.dsn(timeout))
	if err != nil {
		return "", err
	}
	defer func() { _ = db.Close() }()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var name string
	if err := db.QueryRowContext(ctx, "SELECT COALESCE(NULLIF(@@report_host, ''), @@hostname)").Scan(&name); err != nil {
		return "", err
	}
	return name, nil
}

// ChooseSource returns the first of hosts (host or host:port) whose server answers a login, with its @@hostname (the Pod's name): a
// backup Job lists the replicas' Service before the primary's, so that the dump is taken from a replica when
// one is in sync and from the primary otherwise. An empty list keeps src's own address.
func ChooseSource(ctx context.Context, src Source, hosts []string, timeout time.Duration) (Source, string, error) {
	if len(hosts) == 0 {
		name, err := src.hostname(ctx, timeout)
		return src, name, err
	}
	var errs []error
	for _, h := range hosts {
		s := src
		s.Conn.Host, s.Conn.Socket = h, ""
		// host:port names a port of its own.
		if host, port, err := net.SplitHostPort(h); err == nil {
			if p, err := strconv.Atoi(port); err == nil {
				s.Conn.Host, s.Conn.Port = host, p
			}
		}
		name, err := s.hostname(ctx, timeout)
		if err == nil {
			return s, name, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", h, err))
	}
	return src, "", fmt.Errorf("no server answers: %w", errors.Join(errs...))
}

// WaitForServer waits, at most d, until the server answers a login: a restore Job may start before the server
// it loads.
func WaitForServer(ctx context.Context, s Source, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		_, err := s.hostname(ctx, 3*time.Second)
		if err == nil {
			return nil
		}
		// A server that refuses the login is up: waiting will not change its mind.
		var me *driver.MySQLError
		if errors.As(err, &me) && me.Number == 1045 {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the server did not answer within %s: %w", d, err)
		case <-time.After(time.Second):
		}
	}
}
