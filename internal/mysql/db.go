package mysql

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	driver "github.com/go-sql-driver/mysql"
)

// DB is what flavors run statements on. NewDB adapts a *sql.DB; tests record statements with their own DB.
type DB interface {
	// Exec runs a statement that returns no rows. Every statement that changes a server goes through Exec,
	// never Query: a Guard relies on it.
	Exec(ctx context.Context, query string, args ...any) error
	// Query runs a statement that only reads (or waits) and returns all its rows.
	Query(ctx context.Context, query string, args ...any) ([]Row, error)
	// Session runs fn on one connection, for statements that depend on session state (SET SESSION ...).
	Session(ctx context.Context, fn func(DB) error) error
}

// Guard is asked before every statement that changes a server. It refuses the statement with an error, or
// returns the moment after which the statement must no longer run (zero for none), which becomes the deadline
// of the statement's context. The member controller's guard is its leader election lease: a controller that
// may have lost its Lease sends nothing more (see controllers/member).
type Guard func() (until time.Time, err error)

// guardedDB is a DB that asks its guard before every Exec. Queries only read and go through unasked.
type guardedDB struct {
	DB
	guard Guard
}

func (d guardedDB) Exec(ctx context.Context, query string, args ...any) error {
	until, err := d.guard()
	if err != nil {
		return err
	}
	if !until.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, until)
		defer cancel()
	}
	return d.DB.Exec(ctx, query, args...)
}

func (d guardedDB) Session(ctx context.Context, fn func(DB) error) error {
	return d.DB.Session(ctx, func(db DB) error { return fn(guardedDB{DB: db, guard: d.guard}) })
}

// Row is one result row by column name; SQL NULL is an invalid NullString.
type Row map[string]sql.NullString

// String is the column's value, "" for NULL or a missing column.
func (r Row) String(col string) string { return r[col].String }

// Bool reads a column holding 1/0, ON/OFF or Yes/No.
func (r Row) Bool(col string) bool { return isOn(r[col].String) }

func isOn(s string) bool {
	switch strings.ToUpper(s) {
	case "1", "ON", "YES", "TRUE":
		return true
	}
	return false
}

// Int reads an integer column; 0 for NULL or a missing column.
func (r Row) Int(col string) (int64, error) {
	v := r[col]
	if !v.Valid || v.String == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v.String, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("column %s holds %q, not an integer: %w", col, v.String, err)
	}
	return n, nil
}

type sqlRunner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

type sqlDB struct {
	pool *sql.DB
	run  sqlRunner
}

// NewDB adapts a database/sql pool to DB.
func NewDB(pool *sql.DB) DB { return &sqlDB{pool: pool, run: pool} }

func (d *sqlDB) Exec(ctx context.Context, query string, args ...any) error {
	_, err := d.run.ExecContext(ctx, query, args...)
	return err
}

func (d *sqlDB) Query(ctx context.Context, query string, args ...any) ([]Row, error) {
	rows, err := d.run.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []Row
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make(Row, len(cols))
		for i, c := range cols {
			row[c] = vals[i]
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

func (d *sqlDB) Session(ctx context.Context, fn func(DB) error) error {
	if d.pool == nil {
		return fn(d)
	}
	conn, err := d.pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	// The session may hold state fn set (sql_log_bin=0): never hand it back to the pool. Returning
	// ErrBadConn from Raw makes database/sql close the connection instead.
	defer func() { _ = conn.Raw(func(any) error { return sqldriver.ErrBadConn }) }()
	return fn(&sqlDB{run: conn})
}

// queryOne runs a query that returns at most one row; nil when it returns none.
func queryOne(ctx context.Context, db DB, query string, args ...any) (Row, error) {
	rows, err := db.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	switch len(rows) {
	case 0:
		return nil, nil
	case 1:
		return rows[0], nil
	}
	return nil, fmt.Errorf("%q returned %d rows, expected one", query, len(rows))
}

// variables reads name/value rows (SHOW VARIABLES, SHOW STATUS) into a map.
func variables(ctx context.Context, db DB, query string) (map[string]string, error) {
	rows, err := db.Query(ctx, query)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(rows))
	for _, r := range rows {
		out[strings.ToLower(r.String("Variable_name"))] = r.String("Value")
	}
	return out, nil
}

// quoteString makes a single-quoted SQL string literal. Quotes are doubled and backslashes escaped, which is
// exact under the default sql_mode and still cannot end the literal under NO_BACKSLASH_ESCAPES. Used where
// the grammar takes no placeholder (IDENTIFIED BY, CHANGE ... TO).
func quoteString(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch r {
		case '\'':
			b.WriteString("''")
		case '\\':
			b.WriteString(`\\`)
		case 0:
			b.WriteString(`\0`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case 0x1a:
			b.WriteString(`\Z`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// quoteIdent makes a backquoted identifier.
func quoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// account is 'user'@'host'.
func account(user, host string) string {
	return quoteString(user) + "@" + quoteString(orDefault(host, "%"))
}

// milliseconds renders a duration for variables in milliseconds, rounding up so that a short positive
// duration never becomes 0 (which means "do not wait" to both engines).
func milliseconds(d time.Duration) string {
	ms := (d + time.Millisecond - 1) / time.Millisecond
	return strconv.FormatInt(int64(ms), 10)
}

// seconds renders a timeout for WAIT_FOR_EXECUTED_GTID_SET and MASTER_GTID_WAIT, which take fractions.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(max(d, time.Millisecond).Seconds(), 'f', 3, 64)
}

// Error numbers shared by both engines.
const (
	errOptionPreventsStatement = 1290 // ER_OPTION_PREVENTS_STATEMENT: --read-only and friends
	errReadOnlyTransaction     = 1792 // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
	errNoSuchThread            = 1094 // ER_NO_SUCH_THREAD: KILL of a connection that is gone
)

// IsReadOnlyError tells whether err is the server refusing a write because it is read-only.
func IsReadOnlyError(err error) bool {
	var me *driver.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	return me.Number == errOptionPreventsStatement || me.Number == errReadOnlyTransaction
}

func errorNumber(err error) uint16 {
	var me *driver.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}
