// Command mysqlfleet-backup takes, lists, prunes and restores backups of a MySQL or MariaDB server (package
// internal/backup). It is a static binary that the backup Job's init container copies from the mysqlfleet image
// into the database image, where it runs that image's dump tool and client.
//
// Usage:
//
//	mysqlfleet-backup backup  [flags]   dump the server into the target, then keep the newest --retention
//	mysqlfleet-backup restore [flags]   load a backup (--name, default the newest) into the server
//	mysqlfleet-backup list    [flags]   print the complete backups, newest first (--output table|json)
//	mysqlfleet-backup prune   [flags]   keep the newest --retention backups, delete the others
//	mysqlfleet-backup seed    [flags]   load an empty replica (--target-host) with a dump of --host (see seed.go)
//	mysqlfleet-backup agent   [flags]   serve physical backups of the server beside it (--listen), as the sidecar
//	                                    of a database Pod; a backup Job asks it with --agents (see agent.go)
//	mysqlfleet-backup archive [flags]   keep the binary log of --host in the target's binlog/, following the
//	                                    primary through failovers (see archive.go)
//	mysqlfleet-backup replay  [flags]   roll a server forward with that archive, to a GTID or a time
//	mysqlfleet-backup restore-points [flags]  print, per backup, the times and the GTID position a restore from
//	                                    it and the archive can reach, and where a gap cuts it (--output table|json)
//	mysqlfleet-backup install PATH      copy this binary to PATH (a Job's init container, from the manager's
//	                                    image, which has no shell, into a volume the database image mounts)
//
// Every flag has an environment variable, which the flag overrides:
//
//	--engine      BACKUP_ENGINE      MySQL or MariaDB (required by backup and restore)
//	--host        MYSQL_HOST         server address (host, or host:port), or several separated by commas: backup
//	                                 dumps the first that
//	                                 answers (a Job lists <name>-replicas before <name>-primary); --port MYSQL_PORT
//	                                 (default 3306)
//	--socket      MYSQL_SOCKET       Unix socket, instead of host and port
//	--user        MYSQL_USER         (default root)
//	              MYSQL_PWD          the password, or --password-file MYSQL_PASSWORD_FILE naming a file with it;
//	                                 handed to the tool in a private option file, never on its command line
//	--tool        BACKUP_TOOL        the dump tool (backup) or client (restore); default the engine's on PATH
//	--target      BACKUP_TARGET      dir, s3, gcs or azblob
//	--dir         BACKUP_DIR         directory of the dir target (the backup PVC's mount)
//	--bucket      BACKUP_BUCKET      S3 or GCS bucket; --container BACKUP_CONTAINER for Azure
//	--prefix      BACKUP_PREFIX      key prefix in the bucket or container (member/namespace/name)
//	--endpoint    BACKUP_ENDPOINT    S3-compatible service URL, GCS emulator URL, or Azure account URL
//	--gcs-anonymous BACKUP_GCS_ANONYMOUS  send no credentials (an emulator)
//	--cluster     BACKUP_NAME        MySQLCluster recorded in the manifest; --namespace POD_NAMESPACE
//	--member      BACKUP_MEMBER      member cluster recorded in the manifest
//	--pod         BACKUP_SOURCE_POD  the database Pod dumped (not the Job's own Pod), recorded in the manifest;
//	                                 default the server's @@hostname, which is its Pod's name
//	--retention   BACKUP_RETENTION   backups to keep (backup, prune); 0 with backup keeps all
//	--max-run-duration BACKUP_MAX_RUN_DURATION  the longest a backup may take (default 24h): backup writes no
//	                                 manifest past it, and prune deletes data without a manifest only once it is
//	                                 older (see backup.Prune); every runner on one store needs the same
//	--method      BACKUP_METHOD      logical (default) or physical (MariaDB: mariadb-backup, which must run where
//	                                 the server's data directory is; --tool names it) (backup, restore)
//	--datadir     BACKUP_DATADIR     the empty data directory a physical restore fills, for a server that is not
//	                                 running (restore --method physical); --work-dir BACKUP_WORK_DIR where the copy
//	                                 is extracted and prepared (default the system's temporary directory; on the
//	                                 data volume the move is a rename); --server-version BACKUP_SERVER_VERSION the
//	                                 version of the mariadbd that will run on it (default: mariadbd --version)
//	--agents      BACKUP_AGENTS      backup agents to ask for a physical copy, host:port separated by commas, in
//	                                 order (a Job lists <name>-replicas before <name>-primary) (backup --method
//	                                 physical, where the Job's container has no data directory)
//	--name        BACKUP_RESTORE_NAME backup to restore (restore)
//	--new-cluster BACKUP_NEW_CLUSTER  restore as a new set's own history (see internal/backup) (restore)
//	--wait        BACKUP_WAIT        wait this long for the server to answer before restoring (restore)
//	--report-file BACKUP_REPORT_FILE write the outcome there as JSON (the backup's manifest, or the error): a
//	                                 Job sets its container's terminationMessagePath, the member controller reads it
//	--output      BACKUP_OUTPUT      table or json (list, restore-points)
//
// Store credentials are read by the clouds' SDKs from the environment or files; see internal/backup.
//
// backup prints the new backup's manifest as JSON on standard output; the exit status is 0 only when the
// manifest was written (and, with --retention, the prune succeeded).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/mysqlfleet/mysqlfleet/internal/archive"
	"github.com/mysqlfleet/mysqlfleet/internal/backup"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		_, _ = fmt.Fprintln(os.Stderr, "mysqlfleet-backup:", err)
		os.Exit(1)
	}
}

const usage = "usage: mysqlfleet-backup backup|restore|list|prune|restore-points|seed|agent|archive|replay [flags] (-h for the flags)"

type options struct {
	engine, host, socket, user, passwordFile, tool string
	port                                           int
	store                                          backup.StoreConfig
	cluster, namespace, member, pod                string
	retention                                      int
	maxRunDuration                                 time.Duration
	name, output                                   string
	newCluster                                     bool
	wait                                           time.Duration
	reportFile                                     string
	method, dataDir, workDir, serverVersion        string
	agents                                         string
}

func env(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

func envInt(key string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(key)); err == nil {
		return v
	}
	return def
}

func (o *options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.engine, "engine", env("BACKUP_ENGINE", ""), "MySQL or MariaDB (backup, restore)")
	fs.StringVar(&o.host, "host", env("MYSQL_HOST", ""), "server address")
	fs.IntVar(&o.port, "port", envInt("MYSQL_PORT", 3306), "server port")
	fs.StringVar(&o.socket, "socket", env("MYSQL_SOCKET", ""), "server Unix socket, instead of host and port")
	fs.StringVar(&o.user, "user", env("MYSQL_USER", "root"), "database user")
	fs.StringVar(&o.passwordFile, "password-file", env("MYSQL_PASSWORD_FILE", ""), "file holding the password (else $MYSQL_PWD)")
	fs.StringVar(&o.tool, "tool", env("BACKUP_TOOL", ""), "dump tool or client binary (default: the engine's on PATH)")
	fs.StringVar(&o.store.Target, "target", env("BACKUP_TARGET", ""), "dir, s3, gcs or azblob")
	fs.StringVar(&o.store.Dir, "dir", env("BACKUP_DIR", ""), "directory of the dir target")
	fs.StringVar(&o.store.Bucket, "bucket", env("BACKUP_BUCKET", ""), "S3 or GCS bucket")
	fs.StringVar(&o.store.Container, "container", env("BACKUP_CONTAINER", ""), "Azure Blob container")
	fs.StringVar(&o.store.Prefix, "prefix", env("BACKUP_PREFIX", ""), "key prefix in the bucket or container")
	fs.StringVar(&o.store.Endpoint, "endpoint", env("BACKUP_ENDPOINT", ""), "service URL override")
	fs.BoolVar(&o.store.GCS.Anonymous, "gcs-anonymous", env("BACKUP_GCS_ANONYMOUS", "") == "true", "send no credentials to GCS (an emulator)")
	fs.StringVar(&o.cluster, "cluster", env("BACKUP_NAME", ""), "MySQLCluster, recorded in the manifest")
	fs.StringVar(&o.namespace, "namespace", env("POD_NAMESPACE", ""), "namespace, recorded in the manifest")
	fs.StringVar(&o.member, "member", env("BACKUP_MEMBER", ""), "member cluster, recorded in the manifest")
	fs.StringVar(&o.pod, "pod", env("BACKUP_SOURCE_POD", ""), "the dumped database Pod, recorded in the manifest")
	fs.IntVar(&o.retention, "retention", envInt("BACKUP_RETENTION", 0), "backups to keep")
	maxRun, _ := time.ParseDuration(env("BACKUP_MAX_RUN_DURATION", backup.DefaultMaxRunDuration.String()))
	fs.DurationVar(&o.maxRunDuration, "max-run-duration", maxRun, "the longest a backup may take (backup, prune)")
	fs.StringVar(&o.name, "name", env("BACKUP_RESTORE_NAME", ""), "backup to restore (default: the newest)")
	fs.StringVar(&o.output, "output", env("BACKUP_OUTPUT", "table"), "table or json")
	fs.BoolVar(&o.newCluster, "new-cluster", env("BACKUP_NEW_CLUSTER", "") == "true", "restore as a new set's own history")
	wait, _ := time.ParseDuration(env("BACKUP_WAIT", "0s"))
	fs.DurationVar(&o.wait, "wait", wait, "wait this long for the server to answer (restore)")
	fs.StringVar(&o.reportFile, "report-file", env("BACKUP_REPORT_FILE", ""), "write the outcome there as JSON")
	fs.StringVar(&o.method, "method", env("BACKUP_METHOD", string(backup.Logical)), "logical or physical (backup, restore)")
	fs.StringVar(&o.dataDir, "datadir", env("BACKUP_DATADIR", ""), "empty data directory to fill (restore --method physical)")
	fs.StringVar(&o.workDir, "work-dir", env("BACKUP_WORK_DIR", ""), "where a physical restore extracts and prepares")
	fs.StringVar(&o.serverVersion, "server-version", env("BACKUP_SERVER_VERSION", ""), "version of the mariadbd that will run on --datadir")
	fs.StringVar(&o.agents, "agents", env("BACKUP_AGENTS", ""), "backup agents to ask for a physical copy (host:port,...)")
}

// hosts are the addresses --host lists.
func (o *options) hosts() []string { return list(o.host) }

// list is the non-empty items of a comma-separated list.
func list(s string) []string {
	var out []string
	for _, h := range strings.Split(s, ",") {
		if h = strings.TrimSpace(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

// password is $MYSQL_PWD, or the content of --password-file.
func (o *options) password() (string, error) {
	if o.passwordFile == "" {
		return os.Getenv("MYSQL_PWD"), nil
	}
	b, err := os.ReadFile(o.passwordFile)
	if err != nil {
		return "", fmt.Errorf("failed to read the password: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

func (o *options) source() (backup.Source, error) {
	f, err := mysql.FlavorFor(mysql.Engine(o.engine))
	if err != nil {
		return backup.Source{}, err
	}
	password, err := o.password()
	if err != nil {
		return backup.Source{}, err
	}
	conn := mysql.DumpOptions{Path: o.tool, User: o.user, Socket: o.socket}
	if o.socket == "" {
		hosts := o.hosts()
		if len(hosts) == 0 {
			return backup.Source{}, errors.New("no server: set --host (MYSQL_HOST) or --socket (MYSQL_SOCKET)")
		}
		conn.Host, conn.Port = hosts[0], o.port
		if host, port, err := net.SplitHostPort(hosts[0]); err == nil {
			if p, err := strconv.Atoi(port); err == nil {
				conn.Host, conn.Port = host, p
			}
		}
	}
	return backup.Source{Flavor: f, Conn: conn, Password: password}, nil
}

func (o *options) azure() {
	o.store.Azure.ConnectionString = os.Getenv("AZURE_STORAGE_CONNECTION_STRING")
	o.store.Azure.AccountName = os.Getenv("AZURE_STORAGE_ACCOUNT")
	o.store.Azure.AccountKey = os.Getenv("AZURE_STORAGE_KEY")
	o.store.Azure.SASToken = os.Getenv("AZURE_STORAGE_SAS_TOKEN")
}

// report is what --report-file receives: the backup taken or restored, or why it failed, and after a backup the
// backups the store keeps. It fits a Pod's termination message (4096 bytes): the error is shortened, and the
// retained backups (newest first) are cut to what fits, in a short form.
type report struct {
	Backup   *backup.Manifest  `json:"backup,omitempty"`
	Retained []backup.Manifest `json:"-"`
	Error    string            `json:"error,omitempty"`
	Warning  string            `json:"warning,omitempty"`
}

// retainedEntry is a retained backup in the report.
type retainedEntry struct {
	Name         string    `json:"name"`
	EndTime      time.Time `json:"endTime"`
	Size         int64     `json:"size"`
	GTIDPosition string    `json:"gtidPosition,omitempty"`
	Pod          string    `json:"pod,omitempty"`
	Method       string    `json:"method,omitempty"`
}

const terminationMessageSize = 4096

func writeReport(path string, r report) error {
	if path == "" {
		return nil
	}
	if len(r.Error) > 2000 {
		r.Error = r.Error[:1000] + " … " + r.Error[len(r.Error)-1000:]
	}
	var retained []retainedEntry
	for _, m := range r.Retained {
		retained = append(retained, retainedEntry{Name: m.Name, EndTime: m.EndTime, Size: m.Size,
			GTIDPosition: m.GTIDPosition, Pod: m.Pod, Method: string(m.Method)})
	}
	for n := len(retained); ; n-- {
		b, err := json.Marshal(struct {
			report
			Retained []retainedEntry `json:"retained,omitempty"`
		}{r, retained[:n]})
		if err != nil {
			return err
		}
		if len(b) <= terminationMessageSize || n == 0 {
			return os.WriteFile(path, b, 0o644)
		}
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	cmd := args[0]
	if cmd == "install" {
		if len(args) != 2 {
			return errors.New("usage: mysqlfleet-backup install PATH")
		}
		return install(args[1])
	}
	if cmd == "seed" {
		return runSeed(ctx, args[1:], stdout, stderr)
	}
	switch cmd {
	case "agent":
		return runAgent(ctx, args[1:], stderr)
	case "archive":
		return runArchive(ctx, args[1:], stderr)
	case "replay":
		return runReplay(ctx, args[1:], stderr)
	}
	fs := flag.NewFlagSet("mysqlfleet-backup "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	o.register(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %v; %s", fs.Args(), usage)
	}
	switch cmd {
	case "backup", "restore", "list", "prune", "restore-points":
	default:
		return fmt.Errorf("unknown command %q; %s", cmd, usage)
	}
	o.azure()
	store, closer, err := backup.OpenStore(ctx, o.store)
	if err != nil {
		return err
	}
	defer func() { _ = closer.Close() }()

	switch cmd {
	case "backup":
		m, err := takeBackup(ctx, &o, store, stderr)
		if err != nil {
			if rerr := writeReport(o.reportFile, report{Error: err.Error()}); rerr != nil {
				_, _ = fmt.Fprintln(stderr, "Failed to write the report:", rerr)
			}
			return err
		}
		_, _ = fmt.Fprintf(stderr, "Backup %s stored in %s: %d bytes, GTID position %s, %s\n", m.Name, store, m.Size,
			m.GTIDPosition, time.Duration(m.DurationSeconds*float64(time.Second)).Round(time.Millisecond))
		if err := printJSON(stdout, m); err != nil {
			return err
		}
		r := report{Backup: m}
		// A prune that fails leaves more backups than the retention, which the next backup prunes again: the
		// backup taken stands, and the Job is not retried for it (a retry would take another).
		if o.retention > 0 {
			if err := prune(ctx, store, &o, stderr); err != nil {
				r.Warning = "the backup is stored, but pruning older backups failed: " + err.Error()
				_, _ = fmt.Fprintln(stderr, r.Warning)
			}
		}
		if kept, err := backup.List(ctx, store); err == nil {
			r.Retained = kept
		}
		if err := writeReport(o.reportFile, r); err != nil {
			_, _ = fmt.Fprintln(stderr, "Failed to write the report:", err)
		}
		return nil
	case "restore":
		m, err := restore(ctx, &o, store, stderr)
		r := report{Backup: m}
		if err != nil {
			r.Error = err.Error()
		}
		if rerr := writeReport(o.reportFile, r); rerr != nil {
			_, _ = fmt.Fprintln(stderr, "Failed to write the report:", rerr)
		}
		if err != nil {
			return err
		}
		_, _ = fmt.Fprintf(stderr, "Restored backup %s from %s (GTID position %s)\n", m.Name, store, m.GTIDPosition)
		return nil
	case "list":
		backups, err := backup.List(ctx, store)
		if err != nil && len(backups) == 0 {
			return err
		}
		if err != nil {
			_, _ = fmt.Fprintln(stderr, "Some manifests could not be read:", err)
		}
		if o.output == "json" {
			if backups == nil {
				backups = []backup.Manifest{}
			}
			return printJSON(stdout, backups)
		}
		w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		_, _ = fmt.Fprintln(w, "NAME\tMETHOD\tTIME\tMEMBER\tPOD\tSIZE\tDURATION\tGTID")
		for _, m := range backups {
			_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t%.1fs\t%s\n", m.Name, firstNonEmpty(string(m.Method),
				string(backup.Logical)), m.StartTime.Format(time.RFC3339), m.Member, m.Pod, m.Size, m.DurationSeconds,
				m.GTIDPosition)
		}
		return w.Flush()
	case "restore-points":
		return restorePoints(ctx, store, o.output, stdout)
	default: // prune
		if o.retention < 1 {
			return errors.New("prune needs --retention (BACKUP_RETENTION) of at least 1")
		}
		return prune(ctx, store, &o, stderr)
	}
}

// takeBackup dumps the first of the listed servers that answers, recording its Pod; or, physical with
// --agents, has the first agent that answers copy its server.
func takeBackup(ctx context.Context, o *options, store backup.Store, stderr io.Writer) (*backup.Manifest, error) {
	if agents := list(o.agents); len(agents) > 0 {
		if backup.Method(o.method) != backup.Physical {
			return nil, fmt.Errorf("--agents take physical backups, not %s ones", o.method)
		}
		f, err := mysql.FlavorFor(mysql.Engine(o.engine))
		if err != nil {
			return nil, err
		}
		password, err := o.password()
		if err != nil {
			return nil, err
		}
		_, _ = fmt.Fprintf(stderr, "Backing up through the backup agent of %s, physical\n", strings.Join(agents, " or "))
		return backup.Run(ctx, backup.Options{Source: backup.Source{Flavor: f}, Store: store, Cluster: o.cluster,
			Namespace: o.namespace, Member: o.member, Pod: o.pod, Stderr: stderr, MaxRunDuration: o.maxRunDuration,
			Method: backup.Physical, Agents: &backup.Agents{Addrs: agents, Token: backup.AgentToken(password)}})
	}
	src, err := o.source()
	if err != nil {
		return nil, err
	}
	var hosts []string
	if o.socket == "" {
		hosts = o.hosts()
	}
	src, hostname, err := backup.ChooseSource(ctx, src, hosts, 5*time.Second)
	if err != nil {
		return nil, err
	}
	pod := o.pod
	if pod == "" {
		pod = hostname
	}
	_, _ = fmt.Fprintf(stderr, "Backing up %s (%s), %s\n", pod, firstNonEmpty(src.Conn.Host, src.Conn.Socket), o.method)
	return backup.Run(ctx, backup.Options{Source: src, Store: store, Cluster: o.cluster,
		Namespace: o.namespace, Member: o.member, Pod: pod, Stderr: stderr, MaxRunDuration: o.maxRunDuration,
		Method: backup.Method(o.method)})
}

// restore loads a backup into the server, once it answers; or, physical, fills an empty data directory for a
// server that is not running.
func restore(ctx context.Context, o *options, store backup.Store, stderr io.Writer) (*backup.Manifest, error) {
	switch backup.Method(o.method) {
	case backup.Logical:
	case backup.Physical:
		if o.dataDir == "" {
			return nil, errors.New("restore --method physical needs --datadir (BACKUP_DATADIR)")
		}
		return backup.RestorePhysical(ctx, backup.PhysicalRestoreOptions{Store: store, Name: o.name,
			DataDir: o.dataDir, WorkDir: o.workDir, ServerVersion: o.serverVersion, MariaDBBackup: o.tool,
			Stdout: stderr})
	default:
		return nil, fmt.Errorf("unknown method %q: use %s or %s", o.method, backup.Logical, backup.Physical)
	}
	src, err := o.source()
	if err != nil {
		return nil, err
	}
	if o.wait > 0 {
		if err := backup.WaitForServer(ctx, src, o.wait); err != nil {
			return nil, err
		}
	}
	return backup.Restore(ctx, backup.RestoreOptions{Target: src, Store: store, Name: o.name, Stdout: stderr,
		NewCluster: o.newCluster})
}

// install copies the running executable to dst, executable by everyone (the Job's containers run as
// different users), through a temporary file renamed into place.
func install(dst string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	in, err := os.Open(self)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return fmt.Errorf("failed to install the runner: %w", err)
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("failed to install the runner: %w", err)
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, dst)
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func prune(ctx context.Context, store backup.Store, o *options, log io.Writer) error {
	deleted, err := backup.Prune(ctx, store, backup.PruneOptions{Keep: o.retention, MaxRunDuration: o.maxRunDuration})
	for _, m := range deleted {
		_, _ = fmt.Fprintf(log, "Deleted backup %s\n", m.Name)
	}
	if err != nil {
		return err
	}
	// The binary-log archive goes with the backups it rolls forward: a segment every retained backup holds is
	// never replayed again (archive.Prune).
	kept, err := backup.List(ctx, store)
	if err != nil {
		return err
	}
	segs, err := archive.Prune(ctx, store, archive.Positions(kept))
	for _, s := range segs {
		_, _ = fmt.Fprintf(log, "Deleted binary-log segment %s (%s to %s)\n", s.Name, s.Start, s.End)
	}
	return err
}

// restorePoints prints each backup's window (archive.Recoverable), newest backup first: a restore from it, rolled
// forward with the archive, can stop at any time from FROM to TO or at any GTID position up to UNTIL.
func restorePoints(ctx context.Context, store backup.Store, output string, stdout io.Writer) error {
	backups, err := backup.List(ctx, store)
	if err != nil {
		return err
	}
	segs, err := archive.List(ctx, store)
	if err != nil {
		return err
	}
	windows := make([]archive.Window, 0, len(backups))
	for _, b := range backups {
		w, err := archive.Recoverable(b, segs)
		if err != nil {
			return err
		}
		windows = append(windows, w)
	}
	if output == "json" {
		return printJSON(stdout, windows)
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	_, _ = fmt.Fprintln(w, "BACKUP\tFROM\tTO\tUNTIL\tGAP")
	for _, win := range windows {
		gap := ""
		if win.Gap != nil {
			gap = win.Gap.String()
		}
		// RFC 3339 to the second: FROM rounded up, so that the time printed is inside the window.
		from := win.From.Truncate(time.Second)
		if from.Before(win.From) {
			from = from.Add(time.Second)
		}
		to := win.To.UTC().Format(time.RFC3339)
		if !win.To.After(win.From) {
			to = "(the backup only)"
		}
		_, _ = fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", win.Backup, from.UTC().Format(time.RFC3339), to, win.Until, gap)
	}
	return w.Flush()
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
