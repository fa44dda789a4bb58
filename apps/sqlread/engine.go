package sqlread

import (
	"context"
	"errors"
	"slices"
	"strings"
)

// The dialects Dialect reports.
const (
	SQLite     = "SQLite"
	PostgreSQL = "PostgreSQL"
)

// Validator is a Database that checks a query on its own engine without
// running it: the engine's parser and planner see it, so unknown tables
// and columns, type errors and syntax errors are reported as the engine
// words them. SQLiteDB and PostgresDB are Validators.
type Validator interface {
	// Validate returns the engine's plan for query, or the engine's error.
	// A statement that could write is refused (an error wrapping
	// ErrNotReadOnly) before the engine sees it.
	Validate(ctx context.Context, query string) (plan string, err error)
}

// Dialect returns the SQL dialect of db (SQLite or PostgreSQL): db's own
// Dialect method when it has one, else SQLite.
func Dialect(db Database) string {
	if d, ok := db.(interface{ Dialect() string }); ok {
		return d.Dialect()
	}
	return SQLite
}

// ErrExplain is returned by Validate for a query that starts with EXPLAIN:
// the validator adds it.
var ErrExplain = errors.New("send the query itself, without EXPLAIN: the validator adds it")

// Validate asks db's engine to check query (see Validator). A db that is
// no Validator is checked as SQLite: EXPLAIN QUERY PLAN through its Query.
func Validate(ctx context.Context, db Database, query string) (string, error) {
	if err := CheckReadOnly(query); err != nil {
		return "", err
	}
	if strings.HasPrefix(strings.ToUpper(strings.TrimSpace(query)), "EXPLAIN") {
		return "", ErrExplain
	}
	if v, ok := db.(Validator); ok {
		return v.Validate(ctx, query)
	}
	return explainSQLite(ctx, db, query)
}

// Dialect reports SQLite.
func (d *SQLiteDB) Dialect() string { return SQLite }

// Validate asks SQLite for the query plan (EXPLAIN QUERY PLAN), which
// fails on unknown tables or columns and on syntax errors.
func (d *SQLiteDB) Validate(ctx context.Context, query string) (string, error) {
	if err := CheckReadOnly(query); err != nil {
		return "", err
	}
	return explainSQLite(ctx, d, query)
}

func explainSQLite(ctx context.Context, db Database, query string) (string, error) {
	rows, err := db.Query(ctx, "EXPLAIN QUERY PLAN "+query, 100)
	if err != nil {
		return "", err
	}
	var plan []string
	if i := slices.Index(rows.Columns, "detail"); i >= 0 {
		for _, r := range rows.Rows {
			if r[i] != nil {
				plan = append(plan, "- "+*r[i])
			}
		}
	}
	return strings.Join(plan, "\n"), nil
}
