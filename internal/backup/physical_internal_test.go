package backup

import (
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/mysqlfleet/mysqlfleet/internal/mysql"
)

// mariadb-backup 10.11's log, trimmed: what backupLog reads from it.
const backupLogText = `[00] 2026-11-29 03:03:03 Connecting to MariaDB server host: localhost, user: root, password: not set, port: not set, socket: /tmp/s.sock
[00] 2026-11-29 03:03:03 Using server version 10.11.19-MariaDB-0+deb12u1-log
mariadb-backup based on MariaDB server 10.11.19-MariaDB debian-linux-gnu (x86_64)
[00] 2026-11-29 03:03:03 Streaming ./d/t.ibd
[00] 2026-11-29 03:03:04 Starting BACKUP STAGE BLOCK_COMMIT
[00] 2026-11-29 03:03:05 Streaming xtrabackup_binlog_info
[00] 2026-11-29 03:03:05 Executing BACKUP STAGE END
[00] 2026-11-29 03:03:05 MySQL binlog position: filename 'mysql-bin.000001', position '2129965', GTID of the last change '0-7-6,1-9-12'
[00] 2026-11-29 03:03:05 completed OK!
`

func TestBackupLog(t *testing.T) {
	for name, tt := range map[string]struct {
		log                       string
		completed                 bool
		position, version, errHas string
	}{
		"complete": {log: backupLogText, completed: true, position: "0-7-6,1-9-12",
			version: "10.11.19-MariaDB-0+deb12u1-log"},
		"no GTID yet": {log: strings.Replace(backupLogText, ", GTID of the last change '0-7-6,1-9-12'", "", 1),
			completed: true, version: "10.11.19-MariaDB-0+deb12u1-log"},
		"cut before its end": {log: backupLogText[:strings.Index(backupLogText, "[00] 2026-11-29 03:03:05 MySQL")],
			errHas: "no binary log position"},
		"no binary log": {log: strings.Replace(backupLogText, "MySQL binlog position", "Nothing", 1),
			completed: true, errHas: "no binary log position"},
		"no version": {log: strings.Replace(backupLogText, "Using server version", "Using", 1),
			completed: true, errHas: "version"},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			l := &backupLog{}
			// In pieces that cut lines anywhere, as a pipe delivers them.
			for s := tt.log; s != ""; s = s[min(len(s), 7):] {
				_, _ = l.Write([]byte(s[:min(len(s), 7)]))
			}
			g.Expect(l.completed()).To(Equal(tt.completed))
			pos, version, err := l.result(mysql.MariaDBFlavor{})
			if tt.errHas != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.errHas)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pos).To(Equal(tt.position))
			g.Expect(version).To(Equal(tt.version))
		})
	}
}

// A physical backup restores only into a server of its major.minor version, and only as a physical backup.
func TestCheckPhysical(t *testing.T) {
	physical := func(version string) *Manifest {
		return &Manifest{Name: "b", Method: Physical, Engine: mysql.MariaDB, Compression: compressionZstd,
			ServerVersion: version}
	}
	for name, tt := range map[string]struct {
		m       *Manifest
		target  string
		refused error
	}{
		"same version":        {m: physical("10.11.19-MariaDB-0+deb12u1-log"), target: "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)"},
		"newer patch release": {m: physical("10.11.6-MariaDB-log"), target: "10.11.19-MariaDB"},
		"older patch release": {m: physical("10.11.19-MariaDB-log"), target: "10.11.6-MariaDB"},
		"newer minor":         {m: physical("10.11.19-MariaDB-log"), target: "mariadbd  Ver 11.4.5-MariaDB for debian-linux-gnu", refused: ErrVersionMismatch},
		"older minor":         {m: physical("11.4.5-MariaDB-log"), target: "10.11.19-MariaDB", refused: ErrVersionMismatch},
		"10.6 into 10.11":     {m: physical("10.6.20-MariaDB"), target: "10.11.19-MariaDB", refused: ErrVersionMismatch},
		"no recorded version": {m: physical(""), target: "10.11.19-MariaDB", refused: ErrVersionMismatch},
		"unreadable target":   {m: physical("10.11.19-MariaDB"), target: "mariadbd", refused: ErrVersionMismatch},
		"a logical backup": {m: &Manifest{Name: "b", Engine: mysql.MariaDB, Compression: compressionGzip,
			ServerVersion: "10.11.19-MariaDB"}, target: "10.11.19-MariaDB", refused: errors.New("not a physical")},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			err := checkPhysical(tt.m, tt.target)
			switch {
			case tt.refused == nil:
				g.Expect(err).NotTo(HaveOccurred())
			case errors.Is(tt.refused, ErrVersionMismatch):
				g.Expect(err).To(MatchError(ErrVersionMismatch))
			default:
				g.Expect(err).To(MatchError(ContainSubstring(tt.refused.Error())))
			}
		})
	}
}

// Manifests of both methods validate; old ones without a method are logical; mixes are refused.
func TestManifestMethods(t *testing.T) {
	sha := strings.Repeat("a", 64)
	for name, tt := range map[string]struct {
		m  Manifest
		ok bool
		is Method
	}{
		"logical, format 1, no method (older runners)": {m: Manifest{FormatVersion: 1, Name: "n", Object: "n.sql.gz",
			SHA256: sha, Compression: "gzip"}, ok: true, is: Logical},
		"logical": {m: Manifest{FormatVersion: 1, Method: Logical, Name: "n", Object: "n.sql.gz", SHA256: sha,
			Compression: "gzip"}, ok: true, is: Logical},
		"physical": {m: Manifest{FormatVersion: 2, Method: Physical, Name: "n", Object: "n.xb.zst", SHA256: sha,
			Compression: "zstd"}, ok: true, is: Physical},
		"physical in format 1": {m: Manifest{FormatVersion: 1, Method: Physical, Name: "n", Object: "n.xb.zst",
			SHA256: sha, Compression: "zstd"}},
		"logical with zstd": {m: Manifest{FormatVersion: 2, Name: "n", Object: "n.sql.gz", SHA256: sha,
			Compression: "zstd"}},
		"unknown method": {m: Manifest{FormatVersion: 2, Method: "snapshot", Name: "n", Object: "n", SHA256: sha,
			Compression: "zstd"}},
		"format 3": {m: Manifest{FormatVersion: 3, Method: Physical, Name: "n", Object: "n.xb.zst", SHA256: sha,
			Compression: "zstd"}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			err := tt.m.validate()
			if !tt.ok {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(tt.m.method()).To(Equal(tt.is))
		})
	}
}
