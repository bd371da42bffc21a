package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/mysqlfleet/mysqlfleet/internal/backup"
)

// seed loads an empty replica with a dump of a server of its set (internal/backup.Seed): the member
// controller's seed Job runs it. The source is given as for backup (--host, --user, MYSQL_PWD: the admin
// account); the target by its own flags:
//
//	--target-host SEED_TARGET_HOST  the empty server (host, or host:port); --target-port SEED_TARGET_PORT (3306)
//	--target-user SEED_TARGET_USER  (default root)
//	              SEED_TARGET_PWD   its password, or --target-password-file SEED_TARGET_PASSWORD_FILE
//	--wait        BACKUP_WAIT       wait this long for both servers to answer first
//
// Its report (--report-file) is {"seed": {gtidPosition, executed, dumpSize, durationSeconds}} or {"error": ...}.
type seedOptions struct {
	options
	targetHost, targetUser, targetPasswordFile string
	targetPort                                 int
}

type seedReport struct {
	Seed  *backup.SeedResult `json:"seed,omitempty"`
	Error string             `json:"error,omitempty"`
}

func runSeed(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mysqlfleet-backup seed", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o seedOptions
	o.register(fs)
	fs.StringVar(&o.targetHost, "target-host", env("SEED_TARGET_HOST", ""), "the empty server to seed")
	fs.IntVar(&o.targetPort, "target-port", envInt("SEED_TARGET_PORT", 3306), "its port")
	fs.StringVar(&o.targetUser, "target-user", env("SEED_TARGET_USER", "root"), "the account that loads the dump")
	fs.StringVar(&o.targetPasswordFile, "target-password-file", env("SEED_TARGET_PASSWORD_FILE", ""),
		"file holding its password (else $SEED_TARGET_PWD)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v; %s", fs.Args(), usage)
	}
	res, err := seed(ctx, &o, stderr)
	r := seedReport{Seed: res}
	if err != nil {
		r.Error = err.Error()
	}
	if o.reportFile != "" {
		if len(r.Error) > 2000 {
			r.Error = r.Error[:1000] + " … " + r.Error[len(r.Error)-1000:]
		}
		b, jerr := json.Marshal(r)
		if jerr == nil {
			jerr = os.WriteFile(o.reportFile, b, 0o644)
		}
		if jerr != nil {
			_, _ = fmt.Fprintln(stderr, "Failed to write the report:", jerr)
		}
	}
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintf(stderr, "Seeded %s from %s: %d bytes, GTID position %s\n", o.targetHost, o.host, res.DumpSize,
		res.Position)
	return printJSON(stdout, res)
}

func seed(ctx context.Context, o *seedOptions, stderr io.Writer) (*backup.SeedResult, error) {
	if o.socket == "" && len(o.hosts()) != 1 {
		return nil, errors.New("seed dumps one server: set --host (MYSQL_HOST) to it")
	}
	if o.targetHost == "" {
		return nil, errors.New("no server to seed: set --target-host (SEED_TARGET_HOST)")
	}
	src, err := o.source()
	if err != nil {
		return nil, err
	}
	target := o.options
	target.host, target.port, target.user, target.passwordFile, target.socket = o.targetHost, o.targetPort,
		o.targetUser, o.targetPasswordFile, ""
	dst, err := target.source()
	if err != nil {
		return nil, err
	}
	if o.targetPasswordFile == "" {
		dst.Password = os.Getenv("SEED_TARGET_PWD")
	}
	// The client, not the dump tool, loads the target.
	dst.Conn.Path = ""
	if o.wait > 0 {
		for _, s := range []backup.Source{src, dst} {
			if err := backup.WaitForServer(ctx, s, o.wait); err != nil {
				return nil, err
			}
		}
	}
	_, _ = fmt.Fprintf(stderr, "Seeding %s from %s\n", dst.Conn.Host, firstNonEmpty(src.Conn.Host, src.Conn.Socket))
	return backup.Seed(ctx, backup.SeedOptions{Source: src, Target: dst, Stderr: stderr})
}
