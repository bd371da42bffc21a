package mysql

import (
	"context"
	"maps"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// The statements of seeding, recorded. The MariaDB ones also run against real servers (internal/backup's
// seed test, the member controller's); the MySQL ones have not run against a real MySQL 8.4 here.

// variablesAnswer answers SELECT @@GLOBAL.x AS x queries from vars, and SHOW BINARY LOGS with logs.
func variablesAnswer(vars map[string]string, logs ...string) func(string, []any) ([]Row, error) {
	return func(query string, args []any) ([]Row, error) {
		if query == "SHOW BINARY LOGS" {
			var rows []Row
			for _, l := range logs {
				rows = append(rows, row("Log_name", l, "File_size", 1024))
			}
			return rows, nil
		}
		r := Row{}
		for name, v := range vars {
			if strings.Contains(query, "AS "+name) {
				maps.Copy(r, row(name, v))
			}
		}
		return []Row{r}, nil
	}
}

func TestPurgedGTIDSetStatements(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	rec := &recorder{answer: variablesAnswer(map[string]string{"gtid_purged": uuidA + ":1-5,\n" + uuidB + ":1-2"})}
	set, err := MySQLFlavor{}.PurgedGTIDSet(ctx, rec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(set.String()).To(Equal(mustMySQL(t, uuidA+":1-5,"+uuidB+":1-2").String()))
	g.Expect(rec.log).To(Equal([]string{"query: SELECT @@GLOBAL.gtid_purged AS gtid_purged"}))

	// MariaDB: the state at the start of the oldest binary log.
	rec = &recorder{answer: variablesAnswer(map[string]string{"pos": "0-1-6"}, "binlog.000003", "binlog.000004")}
	set, err = MariaDBFlavor{}.PurgedGTIDSet(ctx, rec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(set.String()).To(Equal("0-1-6"))
	g.Expect(rec.log).To(Equal([]string{"query: SHOW BINARY LOGS",
		"query: SELECT BINLOG_GTID_POS(?, 4) AS pos [binlog.000003]"}))

	// The oldest was purged between the two statements: an error, never an empty (complete) history.
	rec = &recorder{answer: func(q string, _ []any) ([]Row, error) {
		if q == "SHOW BINARY LOGS" {
			return []Row{row("Log_name", "binlog.000001")}, nil
		}
		return []Row{row("pos", nil)}, nil
	}}
	_, err = MariaDBFlavor{}.PurgedGTIDSet(ctx, rec)
	g.Expect(err).To(MatchError(ContainSubstring("binlog.000001: it is gone")))
}

func TestPrepareSeed(t *testing.T) {
	ctx := context.Background()
	t.Run("an empty MySQL server stops replication and lets root write", func(t *testing.T) {
		g := NewWithT(t)
		rec := &recorder{answer: variablesAnswer(map[string]string{"gtid_executed": ""})}
		g.Expect(NewServer(MySQLFlavor{}, rec).PrepareSeed(ctx)).To(Succeed())
		g.Expect(rec.execs()).To(Equal([]string{"STOP REPLICA", "RESET REPLICA ALL",
			"SET GLOBAL super_read_only = OFF"}))
	})
	t.Run("an empty MariaDB server stops replication", func(t *testing.T) {
		g := NewWithT(t)
		rec := &recorder{answer: variablesAnswer(map[string]string{"gtid_binlog_state": "", "gtid_slave_pos": ""})}
		g.Expect(NewServer(MariaDBFlavor{}, rec).PrepareSeed(ctx)).To(Succeed())
		g.Expect(rec.execs()).To(Equal([]string{"STOP SLAVE", "RESET SLAVE ALL"}))
	})
	t.Run("a server holding transactions is refused and left untouched", func(t *testing.T) {
		g := NewWithT(t)
		rec := &recorder{answer: variablesAnswer(map[string]string{"gtid_binlog_state": "0-3-1", "gtid_slave_pos": ""})}
		err := NewServer(MariaDBFlavor{}, rec).PrepareSeed(ctx)
		g.Expect(err).To(MatchError(ErrHoldsTransactions))
		g.Expect(err).To(MatchError(ContainSubstring("0-3-1")))
		g.Expect(rec.execs()).To(BeEmpty())
	})
}

func TestSetGTIDPosition(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name     string
		f        Flavor
		vars     map[string]string
		pos      string
		want     []string
		refusing string
	}{
		{
			name: "MySQL: the dump set gtid_purged already",
			f:    MySQLFlavor{}, vars: map[string]string{"gtid_executed": uuidA + ":1-10"}, pos: uuidA + ":1-10",
			want: []string{"SET GLOBAL super_read_only = ON"},
		},
		{
			name: "MySQL: a load that set no position gets it",
			f:    MySQLFlavor{}, vars: map[string]string{"gtid_executed": ""}, pos: uuidA + ":1-10",
			want: []string{"SET GLOBAL gtid_purged = '" + uuidA + ":1-10'", "SET GLOBAL super_read_only = ON"},
		},
		{
			name: "MySQL: anything else executed is refused",
			f:    MySQLFlavor{}, vars: map[string]string{"gtid_executed": uuidB + ":1"}, pos: uuidA + ":1-10",
			refusing: "executed " + uuidB + ":1 while loading a dump of position " + uuidA + ":1-10",
		},
		{
			name: "MariaDB: a fresh binary log starts with the history, each domain's position last",
			f:    MariaDBFlavor{}, vars: map[string]string{"gtid_binlog_state": ""}, pos: "0-2-150,0-1-100,1-3-5",
			want: []string{"RESET MASTER", "SET GLOBAL gtid_binlog_state = '0-1-100,0-2-150,1-3-5'",
				"SET GLOBAL gtid_slave_pos = '0-2-150,1-3-5'"},
		},
		{
			name: "MariaDB: a binary log the load wrote to is refused",
			f:    MariaDBFlavor{}, vars: map[string]string{"gtid_binlog_state": "0-3-1"}, pos: "0-1-100",
			refusing: "the server's binary log holds transactions (0-3-1)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			pos, err := tt.f.ParseGTIDSet(tt.pos)
			g.Expect(err).NotTo(HaveOccurred())
			rec := &recorder{answer: variablesAnswer(tt.vars)}
			err = tt.f.SetGTIDPosition(ctx, rec, pos)
			if tt.refusing != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.refusing)))
				g.Expect(rec.execs()).To(BeEmpty())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(rec.execs()).To(Equal(tt.want))
		})
	}
}

func TestHistoryAt(t *testing.T) {
	g := NewWithT(t)
	// MySQL sets are exact: the position is the history.
	g.Expect(HistoryAt(mustMySQL(t, uuidA+":1-10"), mustMySQL(t, uuidA+":1-20,"+uuidB+":1-3")).String()).
		To(Equal(uuidA + ":1-10"))
	// MariaDB: the servers that wrote last before the dump's position are kept; those that wrote after it, and
	// domains the position does not name, are left to replication.
	for _, tt := range []struct{ pos, later, want string }{
		{"0-2-150", "0-1-100,0-2-160", "0-1-100,0-2-150"},
		{"0-2-150", "0-1-100,0-3-200,1-3-5", "0-1-100,0-2-150"},
		{"0-2-150,1-3-5", "0-1-150,0-2-150,1-3-9", "0-1-150,0-2-150,1-3-5"},
		{"0-1-7", "0-1-7", "0-1-7"},
		{"", "0-1-7", ""},
	} {
		got := HistoryAt(mustMariaDB(t, tt.pos), mustMariaDB(t, tt.later))
		g.Expect(got.String()).To(Equal(tt.want), "HistoryAt(%s, %s)", tt.pos, tt.later)
		g.Expect(got.Contains(mustMariaDB(t, tt.pos)) && mustMariaDB(t, tt.pos).Contains(got)).To(BeTrue(),
			"the history is at the position")
	}
}
