package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mysqlfleet/mysqlfleet/api/v1alpha1"
	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// BackupsOptions name the MySQLCluster whose backups to list; its namespace is -n or the hub context's.
type BackupsOptions struct {
	Name   string
	Output string
}

// BackupView is one backup of a MySQLCluster in one member.
type BackupView struct {
	Member string `json:"member"`
	v1alpha1.BackupRecord
}

// BackupsView lists a MySQLCluster's backups across its members, newest first, and each member's last failure
// when it is newer than its last backup.
type BackupsView struct {
	Namespace string                            `json:"namespace"`
	Name      string                            `json:"name"`
	Backups   []BackupView                      `json:"backups"`
	Failures  map[string]v1alpha1.BackupFailure `json:"failures,omitempty"`
	// Archives are the members' binary-log archives (spec.backup.archive): how far a backup can be rolled
	// forward there.
	Archives map[string]v1alpha1.MemberArchive `json:"archives,omitempty"`
}

// ListBackups reads what the manager reports of a MySQLCluster's backups: per member, the backups its store kept
// after the last successful backup (from the runner's report of that backup's Job), and the last failure.
func ListBackups(ctx context.Context, hub Hub, opts BackupsOptions) (*BackupsView, error) {
	c, err := getCluster(ctx, hub, opts.Name)
	if err != nil {
		return nil, err
	}
	v := &BackupsView{Namespace: c.Namespace, Name: c.Name, Backups: []BackupView{}}
	for _, m := range c.Status.Members {
		if m.Archive != nil {
			if v.Archives == nil {
				v.Archives = map[string]v1alpha1.MemberArchive{}
			}
			v.Archives[m.Name] = *m.Archive
		}
		b := m.Backups
		if b == nil {
			continue
		}
		retained := b.Retained
		if len(retained) == 0 && b.LastSuccessful != nil {
			retained = []v1alpha1.BackupRecord{*b.LastSuccessful}
		}
		for _, r := range retained {
			v.Backups = append(v.Backups, BackupView{Member: m.Name, BackupRecord: r})
		}
		if b.LastFailure != nil {
			if v.Failures == nil {
				v.Failures = map[string]v1alpha1.BackupFailure{}
			}
			v.Failures[m.Name] = *b.LastFailure
		}
	}
	sort.SliceStable(v.Backups, func(i, j int) bool {
		if !v.Backups[i].Time.Equal(&v.Backups[j].Time) {
			return v.Backups[j].Time.Before(&v.Backups[i].Time)
		}
		return v.Backups[i].Member < v.Backups[j].Member
	})
	return v, nil
}

// Backups prints a MySQLCluster's backups: TIME MEMBER BACKUP METHOD SIZE DURATION POD GTID, newest first.
func Backups(ctx context.Context, hub Hub, opts BackupsOptions, streams genericiooptions.IOStreams) error {
	if err := ValidateOutput(opts.Output); err != nil {
		return err
	}
	v, err := ListBackups(ctx, hub, opts)
	if err != nil {
		return err
	}
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		column("Time", false), column("Member", false), column("Backup", false), column("Method", false),
		column("Size", false), column("Duration", false), column("Pod", false), column("GTID", false),
	}}
	for _, b := range v.Backups {
		// A record from before the method was recorded is of a logical backup: there were no others.
		method := cmp.Or(b.Method, v1alpha1.BackupLogical)
		table.Rows = append(table.Rows, row(b.Time.UTC().Format(time.RFC3339), b.Member, b.Name, string(method), size(b.Size),
			(time.Duration(b.DurationMilliseconds)*time.Millisecond).Round(100*time.Millisecond).String(),
			orDash(b.Pod), orDash(b.GTIDPosition)))
	}
	if opts.Output == OutputTable || opts.Output == OutputWide {
		for _, m := range sortedKeys(v.Failures) {
			f := v.Failures[m]
			say(errOut(streams), "member %s: the last backup Job failed %s ago: %s\n", m, age(&f.Time), f.Reason)
		}
		for _, m := range sortedKeys(v.Archives) {
			say(errOut(streams), "member %s: %s\n", m, archiveLine(v.Archives[m]))
		}
	}
	return printView(streams, opts.Output, v, table, "No backups of "+v.Namespace+"/"+v.Name+" reported.")
}

// archiveLine says how far a member's binary-log archive reaches.
func archiveLine(a v1alpha1.MemberArchive) string {
	line := "binary log " + string(a.State)
	if a.Source != "" {
		line += " from " + a.Source
	}
	if a.LatestTime != nil {
		line += ", newest stored transaction " + a.LatestTime.UTC().Format(time.RFC3339) + " (" + a.LatestPosition + ")"
	} else {
		line += ", nothing stored yet"
	}
	if n := len(a.Gaps); n > 0 {
		line += fmt.Sprintf("; %d gap(s), see restore-points", n)
	}
	if a.Error != "" {
		line += "; " + a.Error
	}
	return line
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// RestorePointsOptions name the MySQLCluster whose restore points to list.
type RestorePointsOptions struct {
	Name   string
	Output string
}

// RestorePoint is how far a restore from one backup can reach in its member: from the backup to the end of its
// window, rolled forward with the member's binary-log archive.
type RestorePoint struct {
	Member string `json:"member"`
	Backup string `json:"backup"`
	// From is when the backup was complete: a restore from it reaches no earlier point.
	From metav1.Time `json:"from"`
	// To is the newest time a restore from it can reach: the archive's newest stored transaction, or the last
	// one before the first gap after the backup; From when the member keeps no archive.
	To metav1.Time `json:"to"`
	// ToPosition is the GTID position at To.
	ToPosition string `json:"toPosition"`
	// Note says what bounds To when it is not the archive's newest transaction.
	Note string `json:"note,omitempty"`
}

// ListRestorePoints reads, from what the manager reports, each retained backup's window: a backup rolled forward
// with its member's archive up to its newest stored transaction, or up to the first gap after the backup (a gap
// that the backup's position holds the far side of does not stop it). Newest backup first.
func ListRestorePoints(ctx context.Context, hub Hub, opts RestorePointsOptions) ([]RestorePoint, error) {
	v, err := ListBackups(ctx, hub, BackupsOptions{Name: opts.Name})
	if err != nil {
		return nil, err
	}
	points := []RestorePoint{}
	for _, b := range v.Backups {
		p := RestorePoint{Member: b.Member, Backup: b.Name, From: b.Time, To: b.Time, ToPosition: b.GTIDPosition,
			Note: "no archive: the backup as it was taken"}
		if a, ok := v.Archives[b.Member]; ok {
			windowOf(&p, a, b.GTIDPosition)
		}
		points = append(points, p)
	}
	return points, nil
}

// windowOf ends p's window where the member's archive a takes a restore from a backup at pos.
func windowOf(p *RestorePoint, a v1alpha1.MemberArchive, pos string) {
	for _, g := range a.Gaps {
		if mysql.TextContains(mysql.MariaDBFlavor{}, pos, g.To) {
			continue // behind the backup
		}
		p.Note = "a gap in the archive from " + g.From + " to " + g.To
		if g.Reached != nil && g.Reached.After(p.From.Time) {
			p.To, p.ToPosition = *g.Reached, g.From
		}
		return
	}
	if a.LatestTime == nil || !a.LatestTime.After(p.From.Time) {
		p.Note = "nothing archived after the backup yet"
		return
	}
	p.To, p.ToPosition, p.Note = *a.LatestTime, a.LatestPosition, ""
	if a.State != v1alpha1.ArchiveArchiving {
		p.Note = "the archive is " + string(a.State)
	}
}

// RestorePoints prints each retained backup's window: MEMBER BACKUP FROM TO POSITION NOTE, newest backup first.
func RestorePoints(ctx context.Context, hub Hub, opts RestorePointsOptions, streams genericiooptions.IOStreams) error {
	if err := ValidateOutput(opts.Output); err != nil {
		return err
	}
	points, err := ListRestorePoints(ctx, hub, opts)
	if err != nil {
		return err
	}
	table := &metav1.Table{ColumnDefinitions: []metav1.TableColumnDefinition{
		column("Member", false), column("Backup", false), column("From", false), column("To", false),
		column("Position", false), column("Note", false),
	}}
	for _, p := range points {
		table.Rows = append(table.Rows, row(p.Member, p.Backup, p.From.UTC().Format(time.RFC3339),
			p.To.UTC().Format(time.RFC3339), orDash(p.ToPosition), orDash(p.Note)))
	}
	return printView(streams, opts.Output, points, table, "No backups of "+opts.Name+" reported.")
}

// size is a byte count in binary units.
func size(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%dB", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// BackupNowOptions ask for a backup of a MySQLCluster in one member now.
type BackupNowOptions struct {
	Name   string
	Member string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// BackupNow asks the manager for a backup of a MySQLCluster in a member now: it records the request in the
// MySQLCluster's annotation v1alpha1.BackupNowAnnotation, from which the manager runs a Job of the member's
// backup CronJob once (until the member reports a backup or a failure newer than the request).
func BackupNow(ctx context.Context, hub Hub, opts BackupNowOptions, out io.Writer) error {
	if opts.Member == "" {
		return errors.New("name the member with --member")
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	c, err := getCluster(ctx, hub, opts.Name)
	if err != nil {
		return err
	}
	if c.Spec.Backup == nil {
		return fmt.Errorf("%s/%s has no spec.backup", c.Namespace, c.Name)
	}
	var member *v1alpha1.MemberStatus
	for i := range c.Status.Members {
		if c.Status.Members[i].Name == opts.Member {
			member = &c.Status.Members[i]
		}
	}
	if member == nil {
		return fmt.Errorf("%s/%s is not placed on member %s", c.Namespace, c.Name, opts.Member)
	}
	requests := v1alpha1.BackupRequests(c.Annotations[v1alpha1.BackupNowAnnotation])
	// The request is done once the member reports an outcome at or after it, to the second: it must come
	// after the last outcome reported, or it would count as done already.
	at := metav1.NewTime(now().UTC().Truncate(time.Second))
	if b := member.Backups; b != nil {
		for _, t := range []*metav1.Time{recordTime(b.LastSuccessful), failedAt(b.LastFailure)} {
			if t != nil && !at.After(t.Time) {
				at = metav1.NewTime(t.Add(time.Second))
			}
		}
	}
	requests[opts.Member] = at
	hc, err := hub.connect()
	if err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, v1alpha1.BackupNowAnnotation,
		v1alpha1.FormatBackupRequests(requests))
	obj := &v1alpha1.MySQLCluster{}
	obj.Namespace, obj.Name = c.Namespace, c.Name
	if err := hc.cl.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		return explainHubError(err)
	}
	say(out, "Asked for a backup of %s/%s in member %s at %s; `mysqlfleet backups %s -n %s` shows it when done\n",
		c.Namespace, c.Name, opts.Member, at.Format(time.RFC3339), c.Name, c.Namespace)
	return nil
}

func getCluster(ctx context.Context, hub Hub, name string) (*v1alpha1.MySQLCluster, error) {
	if strings.TrimSpace(name) == "" {
		return nil, errors.New("name the MySQLCluster")
	}
	hc, err := hub.connect()
	if err != nil {
		return nil, err
	}
	ns, err := hub.defaultNamespace()
	if err != nil {
		return nil, err
	}
	var c v1alpha1.MySQLCluster
	if err := hc.cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &c); err != nil {
		return nil, explainHubError(err)
	}
	return &c, nil
}

func recordTime(r *v1alpha1.BackupRecord) *metav1.Time {
	if r == nil {
		return nil
	}
	return &r.Time
}

func failedAt(f *v1alpha1.BackupFailure) *metav1.Time {
	if f == nil {
		return nil
	}
	return &f.Time
}
