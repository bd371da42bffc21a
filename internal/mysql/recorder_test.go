package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"
)

// recorder is a DB that records every statement and answers queries from a script. It checks what SQL a
// flavor sends, not what a server would do with it.
type recorder struct {
	mu sync.Mutex
	// log holds every statement in order: "exec: ..." or "query: ...", with arguments appended as [a b].
	log []string
	// answer returns the rows for a query; nil answers no rows.
	answer func(query string, args []any) ([]Row, error)
	// fail makes an Exec fail when it returns an error for the statement.
	fail func(stmt string) error
}

func render(query string, args []any) string {
	if len(args) == 0 {
		return query
	}
	return fmt.Sprintf("%s %v", query, args)
}

func (r *recorder) Exec(_ context.Context, query string, args ...any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.log = append(r.log, "exec: "+render(query, args))
	if r.fail != nil {
		return r.fail(query)
	}
	return nil
}

func (r *recorder) Query(_ context.Context, query string, args ...any) ([]Row, error) {
	r.mu.Lock()
	r.log = append(r.log, "query: "+render(query, args))
	answer := r.answer
	r.mu.Unlock()
	if answer == nil {
		return nil, nil
	}
	return answer(query, args)
}

func (r *recorder) Session(_ context.Context, fn func(DB) error) error {
	r.mu.Lock()
	r.log = append(r.log, "session")
	r.mu.Unlock()
	err := fn(r)
	r.mu.Lock()
	r.log = append(r.log, "end session")
	r.mu.Unlock()
	return err
}

// execs is the executed statements alone, in order.
func (r *recorder) execs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, l := range r.log {
		if s, ok := strings.CutPrefix(l, "exec: "); ok {
			out = append(out, s)
		}
	}
	return out
}

// row builds a Row from column/value pairs; a nil value is SQL NULL.
func row(pairs ...any) Row {
	r := Row{}
	for i := 0; i < len(pairs); i += 2 {
		col := pairs[i].(string)
		if pairs[i+1] == nil {
			r[col] = sql.NullString{}
			continue
		}
		r[col] = sql.NullString{String: fmt.Sprint(pairs[i+1]), Valid: true}
	}
	return r
}

// variableRows builds SHOW VARIABLES/STATUS rows.
func variableRows(pairs ...string) []Row {
	var out []Row
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, row("Variable_name", pairs[i], "Value", pairs[i+1]))
	}
	return out
}
