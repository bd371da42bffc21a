package mysql

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	gomysql "github.com/go-mysql-org/go-mysql/mysql"
)

// GTIDSet is a set of transactions identified by global transaction IDs, in one engine's notation. Get one from
// Flavor.ParseGTIDSet or from a Server; the arithmetic is done here in Go, on go-mysql's parsed types, never on
// strings and never by asking a server (MariaDB has no GTID_SUBSET or GTID_SUBTRACT).
//
// Sets of different engines never meet in one cluster; passing a set of the other engine to a method is a
// programming error and panics.
type GTIDSet interface {
	// Engine is the engine whose notation the set uses.
	Engine() Engine
	// String is the set in the engine's own notation, in a canonical order, so equal sets print the same.
	String() string
	// IsEmpty reports whether the set holds no transaction.
	IsEmpty() bool
	// Contains reports whether a server holding s has applied everything in other, i.e. whether other ⊆ s
	// for MySQL. For MariaDB it compares positions per replication domain (see MariaDB's set below).
	Contains(other GTIDSet) bool
	// Union is s ∪ other.
	Union(other GTIDSet) GTIDSet
	// Subtract is s \ other: what s holds that other does not.
	Subtract(other GTIDSet) GTIDSet
	// Without is s minus every transaction that originated on source (a MySQL server_uuid or a MariaDB
	// server_id in decimal; see Status.SourceID).
	Without(source string) GTIDSet
}

// TextContains reports whether the set set, in f's notation, contains other; false when either cannot be parsed
// (a position recorded by another engine, or none), so that a caller never takes an unreadable position for one
// that holds everything.
func TextContains(f Flavor, set, other string) bool {
	s, err := f.ParseGTIDSet(set)
	if err != nil || set == "" {
		return false
	}
	o, err := f.ParseGTIDSet(other)
	return err == nil && s.Contains(o)
}

// ErrantTransactions returns the transactions of a replica that its primary does not have, leaving out those
// that originated on the primary itself. A non-empty result means the replica was written to directly (or kept
// transactions of an old primary that the new one never got) and must not be promoted or re-attached without a
// human or a rebuild.
//
// Leaving out the primary's own transactions matters because the two sets are read at different moments: a
// replica read after the primary can hold the primary's newest transactions, which are not errant (MOCO
// lost every replica to this mistake, cybozu-go/moco#419, fixed in #491).
func ErrantTransactions(replica, primary GTIDSet, primarySourceID string) GTIDSet {
	return replica.Subtract(primary).Without(primarySourceID)
}

// IsErrant reports whether ErrantTransactions is non-empty.
func IsErrant(replica, primary GTIDSet, primarySourceID string) bool {
	return !ErrantTransactions(replica, primary, primarySourceID).IsEmpty()
}

func mismatch(a, b GTIDSet) {
	panic(fmt.Sprintf("mysql: GTID sets of different engines: %s and %s", a.Engine(), b.Engine()))
}

// MySQL sets.

type mysqlGTIDSet struct {
	set *gomysql.MysqlGTIDSet
}

func parseMySQLGTIDSet(s string) (GTIDSet, error) {
	// Servers print long sets across lines ("uuid:1-5,\nuuid:1-3").
	s = strings.Join(strings.Fields(s), "")
	parsed, err := gomysql.ParseMysqlGTIDSet(s)
	if err != nil {
		return nil, fmt.Errorf("failed to parse MySQL GTID set %q: %w", s, err)
	}
	set := parsed.(*gomysql.MysqlGTIDSet)
	return &mysqlGTIDSet{set: set}, nil
}

func (s *mysqlGTIDSet) other(o GTIDSet) *gomysql.MysqlGTIDSet {
	m, ok := o.(*mysqlGTIDSet)
	if !ok {
		mismatch(s, o)
	}
	return m.set
}

func (s *mysqlGTIDSet) Engine() Engine { return MySQL }
func (s *mysqlGTIDSet) String() string { return s.set.String() }
func (s *mysqlGTIDSet) IsEmpty() bool  { return s.set.IsEmpty() }

func (s *mysqlGTIDSet) Contains(o GTIDSet) bool {
	return s.set.Contain(s.other(o))
}

func (s *mysqlGTIDSet) Union(o GTIDSet) GTIDSet {
	out := s.set.Clone().(*gomysql.MysqlGTIDSet)
	for sid, tags := range *s.other(o) {
		if (*out)[sid] == nil {
			(*out)[sid] = make(map[gomysql.Tag]gomysql.IntervalSlice, len(tags))
		}
		for tag, intervals := range tags {
			merged := append(slices.Clone((*out)[sid][tag]), intervals...)
			(*out)[sid][tag] = merged.Normalize()
		}
	}
	return &mysqlGTIDSet{set: out}
}

func (s *mysqlGTIDSet) Subtract(o GTIDSet) GTIDSet {
	other := s.other(o)
	out := gomysql.NewMysqlGTIDSet()
	for sid, tags := range *s.set {
		for tag, intervals := range tags {
			rest := subtractIntervals(intervals, (*other)[sid][tag])
			if len(rest) == 0 {
				continue
			}
			if out[sid] == nil {
				out[sid] = make(map[gomysql.Tag]gomysql.IntervalSlice)
			}
			out[sid][tag] = rest
		}
	}
	return &mysqlGTIDSet{set: &out}
}

func (s *mysqlGTIDSet) Without(source string) GTIDSet {
	out := s.set.Clone().(*gomysql.MysqlGTIDSet)
	for sid := range *out {
		if strings.EqualFold(sid.String(), strings.TrimSpace(source)) {
			delete(*out, sid)
		}
	}
	return &mysqlGTIDSet{set: out}
}

// subtractIntervals returns a \ b for normalized interval lists ([Start, Stop), sorted, not overlapping), as
// go-mysql keeps them.
func subtractIntervals(a, b gomysql.IntervalSlice) gomysql.IntervalSlice {
	var out gomysql.IntervalSlice
	j := 0
	for _, in := range a {
		start := in.Start
		// b[j] ends before this interval starts; it cannot touch this or any later interval of a.
		for j < len(b) && b[j].Stop <= start {
			j++
		}
		for k := j; k < len(b) && b[k].Start < in.Stop && start < in.Stop; k++ {
			if b[k].Start > start {
				out = append(out, gomysql.Interval{Start: start, Stop: b[k].Start})
			}
			start = max(start, b[k].Stop)
		}
		if start < in.Stop {
			out = append(out, gomysql.Interval{Start: start, Stop: in.Stop})
		}
	}
	return out
}

// MariaDB sets.
//
// MariaDB names transactions domain-server-sequence and keeps positions, not sets: @@gtid_slave_pos and
// @@gtid_current_pos hold one GTID per replication domain (the last one applied); @@gtid_binlog_state holds, per
// domain, the last GTID of each server_id that wrote in it. With gtid_strict_mode sequence numbers grow
// strictly within a domain, so a position stands for every earlier transaction of the same history.
//
// This type keeps what a binlog state keeps: for each (domain, server_id) the highest sequence number, held as
// one go-mysql MariadbGTIDSet per server_id. Its operations mean:
//   - Contains: per domain, the highest sequence number of s is at least that of other, whatever server wrote
//     it. This is MariaDB's own notion of "has caught up" (what MASTER_GTID_WAIT and replication use), and it
//     is the only one that holds for a server restored from a dump, which knows only the dump's position.
//   - Subtract: the (domain, server_id) entries of s that other does not cover with the same server_id. Two
//     histories that diverged in a domain show up here even when other is further ahead in that domain, which
//     a position comparison would miss; this is what errant-transaction detection needs. Each entry of the
//     result is the last GTID of the missing run (a position cannot name the first); a server that knows less
//     history than it holds (restored from a dump) can make a difference look larger, never smaller.
type mariadbGTIDSet struct {
	byServer map[uint32]*gomysql.MariadbGTIDSet
}

func newMariaDBGTIDSet() *mariadbGTIDSet {
	return &mariadbGTIDSet{byServer: map[uint32]*gomysql.MariadbGTIDSet{}}
}

func parseMariaDBGTIDSet(s string) (GTIDSet, error) {
	out := newMariaDBGTIDSet()
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		gtid, err := gomysql.ParseMariadbGTID(part)
		if err != nil {
			return nil, fmt.Errorf("failed to parse MariaDB GTID %q in %q: %w", part, s, err)
		}
		out.add(gtid)
	}
	return out, nil
}

// add keeps the higher of gtid and what s holds for gtid's (domain, server_id).
func (s *mariadbGTIDSet) add(gtid *gomysql.MariadbGTID) {
	if gtid.SequenceNumber == 0 {
		return
	}
	set := s.byServer[gtid.ServerID]
	if set == nil {
		set = &gomysql.MariadbGTIDSet{Sets: map[uint32]*gomysql.MariadbGTID{}}
		s.byServer[gtid.ServerID] = set
	}
	if have := set.Sets[gtid.DomainID]; have != nil && have.Contain(gtid) {
		return
	}
	set.Sets[gtid.DomainID] = gtid.Clone()
}

func (s *mariadbGTIDSet) each(fn func(*gomysql.MariadbGTID)) {
	for _, set := range s.byServer {
		for _, gtid := range set.Sets {
			fn(gtid)
		}
	}
}

func (s *mariadbGTIDSet) other(o GTIDSet) *mariadbGTIDSet {
	m, ok := o.(*mariadbGTIDSet)
	if !ok {
		mismatch(s, o)
	}
	return m
}

func (s *mariadbGTIDSet) Engine() Engine { return MariaDB }

func (s *mariadbGTIDSet) String() string {
	return s.join(func(g *gomysql.MariadbGTID) uint64 { return uint64(g.ServerID) })
}

// join lists the set's GTIDs by domain and, within a domain, by key.
func (s *mariadbGTIDSet) join(key func(*gomysql.MariadbGTID) uint64) string {
	var all []*gomysql.MariadbGTID
	s.each(func(g *gomysql.MariadbGTID) { all = append(all, g) })
	slices.SortFunc(all, func(a, b *gomysql.MariadbGTID) int {
		if c := cmp.Compare(a.DomainID, b.DomainID); c != 0 {
			return c
		}
		return cmp.Compare(key(a), key(b))
	})
	parts := make([]string, len(all))
	for i, g := range all {
		parts[i] = g.String()
	}
	return strings.Join(parts, ",")
}

func (s *mariadbGTIDSet) IsEmpty() bool {
	empty := true
	s.each(func(*gomysql.MariadbGTID) { empty = false })
	return empty
}

// Position is the set as a MariaDB position: per domain, the GTID with the highest sequence number. It is
// what MASTER_GTID_WAIT and gtid_slave_pos take.
func (s *mariadbGTIDSet) Position() *gomysql.MariadbGTIDSet {
	pos := &gomysql.MariadbGTIDSet{Sets: map[uint32]*gomysql.MariadbGTID{}}
	s.each(func(g *gomysql.MariadbGTID) {
		if have := pos.Sets[g.DomainID]; have == nil || !have.Contain(g) {
			pos.Sets[g.DomainID] = g.Clone()
		}
	})
	return pos
}

func (s *mariadbGTIDSet) Contains(o GTIDSet) bool {
	return s.Position().Contain(s.other(o).Position())
}

func (s *mariadbGTIDSet) Union(o GTIDSet) GTIDSet {
	out := newMariaDBGTIDSet()
	s.each(out.add)
	s.other(o).each(out.add)
	return out
}

func (s *mariadbGTIDSet) Subtract(o GTIDSet) GTIDSet {
	other := s.other(o)
	out := newMariaDBGTIDSet()
	s.each(func(g *gomysql.MariadbGTID) {
		if set := other.byServer[g.ServerID]; set != nil {
			if have := set.Sets[g.DomainID]; have != nil && have.Contain(g) {
				return
			}
		}
		out.add(g)
	})
	return out
}

func (s *mariadbGTIDSet) Without(source string) GTIDSet {
	id, err := strconv.ParseUint(strings.TrimSpace(source), 10, 32)
	out := newMariaDBGTIDSet()
	s.each(func(g *gomysql.MariadbGTID) {
		if err == nil && g.ServerID == uint32(id) {
			return
		}
		out.add(g)
	})
	return out
}

// mariadbPosition is the position string of a MariaDB set, for MASTER_GTID_WAIT and gtid_slave_pos.
func mariadbPosition(set GTIDSet) string {
	m, ok := set.(*mariadbGTIDSet)
	if !ok {
		panic(fmt.Sprintf("mysql: a %s GTID set given to the MariaDB flavor", set.Engine()))
	}
	pos := m.Position()
	domains := slices.Sorted(maps.Keys(pos.Sets))
	parts := make([]string, len(domains))
	for i, d := range domains {
		parts[i] = pos.Sets[d].String()
	}
	return strings.Join(parts, ",")
}

// HistoryAt is what a server that loaded a dump at position holds, given later, the executed set of the dumped
// server read after the dump (the same history, further on). MySQL sets are exact: it is position. A MariaDB
// position keeps one GTID per domain, and a server that knew only that would look, as a primary, as if every
// replica held errant transactions of the other servers that wrote in the domain before (see Subtract); so it is
// position plus each (domain, server_id) entry of later whose sequence number is not past the position's in its
// domain: those servers wrote last before the dump. A server that wrote both before and after it is left at
// the position's knowledge; replication brings its later entry.
func HistoryAt(position, later GTIDSet) GTIDSet {
	pos, ok := position.(*mariadbGTIDSet)
	if !ok {
		return position
	}
	at := pos.Position()
	out := newMariaDBGTIDSet()
	pos.each(out.add)
	pos.other(later).each(func(g *gomysql.MariadbGTID) {
		if p := at.Sets[g.DomainID]; p != nil && g.SequenceNumber <= p.SequenceNumber {
			out.add(g)
		}
	})
	return out
}

// mariadbState is a MariaDB set as gtid_binlog_state takes it: ordered by domain and, within a domain, by
// sequence number, because the server takes the last entry of each domain for its position.
func mariadbState(set GTIDSet) string {
	m, ok := set.(*mariadbGTIDSet)
	if !ok {
		panic(fmt.Sprintf("mysql: a %s GTID set given to the MariaDB flavor", set.Engine()))
	}
	return m.join(func(g *gomysql.MariadbGTID) uint64 { return g.SequenceNumber })
}
