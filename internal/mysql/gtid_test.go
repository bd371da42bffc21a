package mysql

import (
	"testing"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
	. "github.com/onsi/gomega"
)

const (
	uuidA = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	uuidB = "b9d1d9b6-9a41-11ee-9d0a-0242ac120002"
)

func mustMySQL(t *testing.T, s string) GTIDSet {
	t.Helper()
	set, err := MySQLFlavor{}.ParseGTIDSet(s)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func mustMariaDB(t *testing.T, s string) GTIDSet {
	t.Helper()
	set, err := MariaDBFlavor{}.ParseGTIDSet(s)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func TestMySQLGTIDSetArithmetic(t *testing.T) {
	tests := []struct {
		name                  string
		a, b                  string
		aContainsB            bool
		union, aMinusB        string
		bMinusA               string
		aWithoutB, aWithoutID string
	}{
		{
			name: "empty sets", a: "", b: "", aContainsB: true, union: "", aMinusB: "", bMinusA: "",
		},
		{
			name: "a ahead of b", a: uuidA + ":1-10", b: uuidA + ":1-7", aContainsB: true,
			union: uuidA + ":1-10", aMinusB: uuidA + ":8-10", bMinusA: "",
		},
		{
			name: "gaps on both sides", a: uuidA + ":1-5:8-10", b: uuidA + ":3-9", aContainsB: false,
			union: uuidA + ":1-10", aMinusB: uuidA + ":1-2:10", bMinusA: uuidA + ":6-7",
		},
		{
			name: "one interval of b spans several of a", a: uuidA + ":1-2:4-5:7-8", b: uuidA + ":2-7",
			union: uuidA + ":1-8", aMinusB: uuidA + ":1:8", bMinusA: uuidA + ":3:6",
		},
		{
			name: "different sources", a: uuidA + ":1-3," + uuidB + ":1", b: uuidA + ":1-3",
			aContainsB: true, union: uuidA + ":1-3," + uuidB + ":1", aMinusB: uuidB + ":1", bMinusA: "",
		},
		{
			name: "tagged GTIDs (MySQL 8.4) are their own intervals", a: uuidA + ":1-3:blue:1-2", b: uuidA + ":1-3",
			aContainsB: true, union: uuidA + ":1-3:blue:1-2", aMinusB: uuidA + ":blue:1-2", bMinusA: "",
		},
		{
			name: "as the server prints it, across lines", a: uuidA + ":1-3,\n" + uuidB + ":1-2", b: uuidB + ":2",
			aContainsB: true, union: uuidA + ":1-3," + uuidB + ":1-2", aMinusB: uuidA + ":1-3," + uuidB + ":1",
			bMinusA: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			a, b := mustMySQL(t, tt.a), mustMySQL(t, tt.b)
			g.Expect(a.Contains(b)).To(Equal(tt.aContainsB), "a ⊇ b")
			g.Expect(a.Union(b).String()).To(Equal(tt.union))
			g.Expect(b.Union(a).String()).To(Equal(tt.union))
			g.Expect(a.Subtract(b).String()).To(Equal(tt.aMinusB))
			g.Expect(b.Subtract(a).String()).To(Equal(tt.bMinusA))
			g.Expect(a.Subtract(b).IsEmpty()).To(Equal(tt.aMinusB == ""))
			// Identities that must hold for any sets.
			g.Expect(a.Union(b).Contains(a)).To(BeTrue())
			g.Expect(b.Union(a.Subtract(b)).Contains(a)).To(BeTrue())
			g.Expect(a.Contains(a.Subtract(b))).To(BeTrue())
			g.Expect(b.Contains(a.Subtract(b)) && !a.Subtract(b).IsEmpty()).To(BeFalse())
			// Operations do not change their operands.
			g.Expect(mustMySQL(t, tt.a).String()).To(Equal(a.String()))
		})
	}
}

func TestMySQLGTIDSetWithout(t *testing.T) {
	g := NewWithT(t)
	set := mustMySQL(t, uuidA+":1-3,"+uuidB+":1-2")
	g.Expect(set.Without(uuidB).String()).To(Equal(uuidA + ":1-3"))
	g.Expect(set.Without(" " + "B9D1D9B6-9A41-11EE-9D0A-0242AC120002").String()).To(Equal(uuidA + ":1-3"))
	g.Expect(set.Without("0-2-3").String()).To(Equal(set.String()))
	g.Expect(set.String()).To(Equal(uuidA + ":1-3," + uuidB + ":1-2"))
}

func TestParseGTIDSetErrors(t *testing.T) {
	g := NewWithT(t)
	_, err := MySQLFlavor{}.ParseGTIDSet("not-a-uuid:1-2")
	g.Expect(err).To(HaveOccurred())
	_, err = MySQLFlavor{}.ParseGTIDSet(uuidA + ":5-2")
	g.Expect(err).To(HaveOccurred())
	_, err = MariaDBFlavor{}.ParseGTIDSet("0-1")
	g.Expect(err).To(HaveOccurred())
	_, err = MariaDBFlavor{}.ParseGTIDSet("0-x-3")
	g.Expect(err).To(HaveOccurred())
}

func TestSubtractIntervals(t *testing.T) {
	iv := func(pairs ...int64) gomysql.IntervalSlice {
		var out gomysql.IntervalSlice
		for i := 0; i < len(pairs); i += 2 {
			out = append(out, gomysql.Interval{Start: pairs[i], Stop: pairs[i+1]})
		}
		return out
	}
	tests := []struct {
		name    string
		a, b    gomysql.IntervalSlice
		want    gomysql.IntervalSlice
		wantNil bool
	}{
		{name: "nothing to take", a: iv(1, 10), b: nil, want: iv(1, 10)},
		{name: "all taken", a: iv(1, 10), b: iv(0, 20), wantNil: true},
		{name: "hole in the middle", a: iv(1, 10), b: iv(4, 6), want: iv(1, 4, 6, 10)},
		{name: "b before and after", a: iv(5, 10), b: iv(1, 3, 12, 15), want: iv(5, 10)},
		{name: "touching edges", a: iv(5, 10), b: iv(1, 5, 10, 12), want: iv(5, 10)},
		{name: "b spans two of a", a: iv(1, 3, 5, 8), b: iv(2, 6), want: iv(1, 2, 6, 8)},
		{name: "several b in one a", a: iv(1, 20), b: iv(2, 3, 5, 7, 19, 25), want: iv(1, 2, 3, 5, 7, 19)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := subtractIntervals(tt.a, tt.b)
			if tt.wantNil {
				NewWithT(t).Expect(got).To(BeEmpty())
				return
			}
			NewWithT(t).Expect(got).To(Equal(tt.want))
		})
	}
}

func TestMariaDBGTIDSetArithmetic(t *testing.T) {
	tests := []struct {
		name           string
		a, b           string
		aContainsB     bool
		bContainsA     bool
		union, aMinusB string
		bMinusA        string
	}{
		{
			name: "a ahead of b in the same history", a: "0-1-10", b: "0-1-7",
			aContainsB: true, bContainsA: false, union: "0-1-10", aMinusB: "0-1-10", bMinusA: "",
		},
		{
			name: "binlog state after a failover from server 1 to 2", a: "0-1-10,0-2-15", b: "0-1-10",
			aContainsB: true, bContainsA: false, union: "0-1-10,0-2-15", aMinusB: "0-2-15", bMinusA: "",
		},
		{
			// A server restored from a dump knows only the dump's position; it has caught up with a by
			// position, and the per-server difference shows what it cannot account for.
			name: "position only (restored from a dump)", a: "0-1-10,0-2-15", b: "0-2-15",
			aContainsB: true, bContainsA: true, union: "0-1-10,0-2-15", aMinusB: "0-1-10", bMinusA: "",
		},
		{
			// Server 3 wrote 0-3-11 on its own; the primary (1) went on to 0-1-20. By position the primary
			// is past 11, but it never had 0-3-11: the difference keeps it.
			name: "diverged in a domain", a: "0-1-10,0-3-11", b: "0-1-20",
			aContainsB: false, bContainsA: true, union: "0-1-20,0-3-11", aMinusB: "0-3-11", bMinusA: "0-1-20",
		},
		{
			name: "two domains", a: "0-1-10,1-1-4", b: "0-1-10",
			aContainsB: true, bContainsA: false, union: "0-1-10,1-1-4", aMinusB: "1-1-4", bMinusA: "",
		},
		{
			name: "empty", a: "", b: "0-1-1", aContainsB: false, bContainsA: true, union: "0-1-1", aMinusB: "",
			bMinusA: "0-1-1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			a, b := mustMariaDB(t, tt.a), mustMariaDB(t, tt.b)
			g.Expect(a.Contains(b)).To(Equal(tt.aContainsB), "a has caught up with b")
			g.Expect(b.Contains(a)).To(Equal(tt.bContainsA), "b has caught up with a")
			g.Expect(a.Union(b).String()).To(Equal(tt.union))
			g.Expect(b.Union(a).String()).To(Equal(tt.union))
			g.Expect(a.Subtract(b).String()).To(Equal(tt.aMinusB))
			g.Expect(b.Subtract(a).String()).To(Equal(tt.bMinusA))
			g.Expect(a.Union(b).Contains(a)).To(BeTrue())
			g.Expect(mustMariaDB(t, tt.a).String()).To(Equal(a.String()))
		})
	}
}

func TestMariaDBGTIDSetKeepsTheHighestPerServer(t *testing.T) {
	g := NewWithT(t)
	set := mustMariaDB(t, "0-1-7, 0-1-5,0-2-3,\n1-1-2")
	g.Expect(set.String()).To(Equal("0-1-7,0-2-3,1-1-2"))
	g.Expect(mariadbPosition(set)).To(Equal("0-1-7,1-1-2"))
	g.Expect(set.Without("1").String()).To(Equal("0-2-3"))
	g.Expect(set.Without(uuidA).String()).To(Equal(set.String()))
}

func TestErrantTransactions(t *testing.T) {
	tests := []struct {
		name            string
		flavor          Flavor
		replica         string
		primary         string
		primarySourceID string
		errant          string
	}{
		{
			name: "MySQL: replica in step", flavor: MySQLFlavor{},
			replica: uuidA + ":1-10", primary: uuidA + ":1-10", primarySourceID: uuidA, errant: "",
		},
		{
			name: "MySQL: replica behind", flavor: MySQLFlavor{},
			replica: uuidA + ":1-5", primary: uuidA + ":1-10", primarySourceID: uuidA, errant: "",
		},
		{
			// Read after the primary: it holds the primary's newer transactions; not errant (MOCO #419).
			name: "MySQL: only the primary's own newer transactions", flavor: MySQLFlavor{},
			replica: uuidA + ":1-12", primary: uuidA + ":1-10", primarySourceID: uuidA, errant: "",
		},
		{
			name: "MySQL: written on the replica", flavor: MySQLFlavor{},
			replica: uuidA + ":1-10," + uuidB + ":1", primary: uuidA + ":1-10", primarySourceID: uuidA,
			errant: uuidB + ":1",
		},
		{
			name: "MySQL: old primary kept a transaction the new primary never got", flavor: MySQLFlavor{},
			replica: uuidA + ":1-11", primary: uuidA + ":1-10," + uuidB + ":1-5", primarySourceID: uuidB,
			errant: uuidA + ":11",
		},
		{
			name: "MariaDB: replica in step", flavor: MariaDBFlavor{},
			replica: "0-1-10", primary: "0-1-10", primarySourceID: "1", errant: "",
		},
		{
			name: "MariaDB: only the primary's own newer transactions", flavor: MariaDBFlavor{},
			replica: "0-1-12", primary: "0-1-10", primarySourceID: "1", errant: "",
		},
		{
			name: "MariaDB: written on the replica (server 3)", flavor: MariaDBFlavor{},
			replica: "0-1-10,0-3-11", primary: "0-1-10", primarySourceID: "1", errant: "0-3-11",
		},
		{
			name: "MariaDB: written on the replica, primary since gone past it", flavor: MariaDBFlavor{},
			replica: "0-1-10,0-3-11", primary: "0-1-30", primarySourceID: "1", errant: "0-3-11",
		},
		{
			// AFTER_SYNC: the old primary (1) crashed with 0-1-11 in its binlog, unacknowledged; server 2
			// took over from 0-1-10.
			name: "MariaDB: old primary's in-doubt commit", flavor: MariaDBFlavor{},
			replica: "0-1-11", primary: "0-1-10,0-2-20", primarySourceID: "2", errant: "0-1-11",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			replica, err := tt.flavor.ParseGTIDSet(tt.replica)
			g.Expect(err).NotTo(HaveOccurred())
			primary, err := tt.flavor.ParseGTIDSet(tt.primary)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(ErrantTransactions(replica, primary, tt.primarySourceID).String()).To(Equal(tt.errant))
			g.Expect(IsErrant(replica, primary, tt.primarySourceID)).To(Equal(tt.errant != ""))
		})
	}
}

func TestMixingEnginesPanics(t *testing.T) {
	g := NewWithT(t)
	my, maria := mustMySQL(t, uuidA+":1"), mustMariaDB(t, "0-1-1")
	g.Expect(func() { my.Contains(maria) }).To(PanicWith(ContainSubstring("different engines")))
	g.Expect(func() { maria.Subtract(my) }).To(PanicWith(ContainSubstring("different engines")))
	g.Expect(func() { my.Union(maria) }).To(PanicWith(ContainSubstring("different engines")))
}

// TextContains never takes an empty or unreadable position for one that holds everything.
func TestTextContains(t *testing.T) {
	f := MariaDBFlavor{}
	for _, tc := range []struct {
		set, other string
		want       bool
	}{
		{"0-1-10", "0-1-8", true},
		{"0-1-10", "0-1-10", true},
		{"0-1-10", "0-1-11", false},
		{"0-1-10,1-2-3", "1-2-4", false},
		{"", "0-1-1", false},
		{"", "", false},
		{"3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5", "0-1-1", false},
		{"0-1-10", "not a position", false},
	} {
		if got := TextContains(f, tc.set, tc.other); got != tc.want {
			t.Errorf("TextContains(%q, %q) = %v, want %v", tc.set, tc.other, got, tc.want)
		}
	}
}
