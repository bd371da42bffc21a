package commitrate

import (
	"os"
	"os/exec"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/mysqlfleet/mysqlfleet/test/mysqltest"
)

// The script against a real server with the real client: every connection commits, and the window's commits
// are the server's own count of what it committed in that window.
func TestScriptCountsWhatTheServerCommittedInTheWindow(t *testing.T) {
	g := NewWithT(t)
	s := mysqltest.Start(t)
	db := s.OpenRoot()
	for _, q := range []string{
		"SET GLOBAL read_only = OFF",
		"CREATE DATABASE bench",
		"CREATE TABLE bench.t (id BIGINT AUTO_INCREMENT PRIMARY KEY, c INT)",
		"CREATE USER app@'%' IDENTIFIED BY 'secret'",
		"GRANT INSERT, SELECT ON bench.* TO app@'%'",
	} {
		_, err := db.Exec(q)
		g.Expect(err).NotTo(HaveOccurred(), q)
	}
	client, err := exec.LookPath("mariadb")
	g.Expect(err).NotTo(HaveOccurred())
	cmd := exec.Command("timeout", "12", "sh", "-c", "client="+client+"\n"+Script(3, 2, 3))
	cmd.Env = append(os.Environ(), "HOST=127.0.0.1", "MYSQL_TCP_PORT="+strconv.Itoa(s.Port), "DB_USER=app",
		"MYSQL_PWD=secret", "SQL=bench.t")
	out, _ := cmd.Output() // timeout ends the writers, which run until killed
	commits, seconds, ok := Parse(string(out))
	g.Expect(ok).To(BeTrue(), "the script's output: %s", out)
	g.Expect(commits).To(BeNumerically(">", 0))
	g.Expect(seconds).To(BeNumerically("~", 3, 1))

	var total, conns int64
	g.Expect(db.QueryRow("SELECT MAX(id), COUNT(DISTINCT c) FROM bench.t").Scan(&total, &conns)).To(Succeed())
	g.Expect(conns).To(BeEquivalentTo(3), "every connection wrote")
	g.Expect(total).To(BeNumerically(">", commits), "the writers ran before and after the window")
}

func TestParseRefusesAnIncompleteOrBackwardWindow(t *testing.T) {
	g := NewWithT(t)
	c, s, ok := Parse("done?\nrate 100 10.5 400 12.5\ndone\n")
	g.Expect(ok).To(BeTrue())
	g.Expect(c).To(BeEquivalentTo(300))
	g.Expect(s).To(BeNumerically("~", 2.0, 1e-9))
	for _, logs := range []string{"", "rate 100 10.5\n", "rate  10.5 400 12.5\n", "rate 400 10.5 100 12.5\n", "rate 100 12.5 400 10.5\n"} {
		_, _, ok := Parse(logs)
		g.Expect(ok).To(BeFalse(), logs)
	}
}

func TestSummarizeComparesMediansPerConnectionCount(t *testing.T) {
	g := NewWithT(t)
	r := Results{Samples: []Sample{
		{Set: HandWired, Connections: 1, PerSecond: 100}, {Set: HandWired, Connections: 1, PerSecond: 120},
		{Set: HandWired, Connections: 1, PerSecond: 110},
		{Set: Operator, Connections: 1, PerSecond: 105}, {Set: Operator, Connections: 1, PerSecond: 1, Error: "cut"},
		{Set: HandWired, Connections: 8, PerSecond: 400}, {Set: Operator, Connections: 8, PerSecond: 300},
		{Set: Operator, Connections: 8, PerSecond: 340},
		{Set: Operator, Connections: 4, PerSecond: 10}, // no hand-wired sample at 4: no ratio
	}}
	r.Summarize()
	g.Expect(r.Ratios).To(Equal([]Ratio{
		{Connections: 1, HandWired: 110, Operator: 105, Ratio: 105.0 / 110, Target: Target, Met: true},
		{Connections: 8, HandWired: 400, Operator: 320, Ratio: 0.8, Target: Target, Met: false},
	}))
}
