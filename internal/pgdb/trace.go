package pgdb

import (
	"context"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/trellis-agents/trellis/internal/sqltrace"
)

// tracer reports a pool's statements to sqltrace. Connect installs it in
// pools opened while an observer is set. A batch sent outside a
// transaction runs as one implicit transaction, and is reported so; a
// BEGIN or COMMIT inside a batch is reported as the transaction's bound.
// Every statement sent alone counts one round trip, a batch one for all
// its statements.
type tracer struct{}

type traceKey struct{}

type queryTrace struct{ sql string }

func connID(c *pgx.Conn) uint64 {
	if c == nil || c.PgConn() == nil {
		return 0
	}
	return uint64(c.PgConn().PID())
}

func emit(c *pgx.Conn, kind sqltrace.Kind, sql string, changed int64, trips int) {
	sqltrace.Emit(sqltrace.Event{Backend: "postgres", Conn: connID(c), Kind: kind, SQL: sql, Changed: changed, Trips: trips})
}

// changed is how many rows the statement sql, whose command tag is tag,
// wrote, as far as the tag tells.
//
// A tag counts only the outer statement. A data-modifying WITH query
// (WITH u AS (UPDATE ... RETURNING ...) SELECT ...: River completes jobs
// so) has the tag of its outer statement, SELECT n for the usual form, and
// PostgreSQL runs its data-modifying parts to completion whether or not
// the outer statement reads them; how many rows they wrote is in no tag.
// So a statement holding one, once it succeeded, counts as having written
// at least one row (its tag's count when that is more): an upper bound,
// which is what a test that fails when writes go up needs. It counts a
// write that matched no row too (a job already completed), which the
// count's readers are told.
func changed(sql string, tag pgconn.CommandTag) int64 {
	var n int64
	if tag.Insert() || tag.Update() || tag.Delete() || strings.HasPrefix(tag.String(), "MERGE") {
		n = tag.RowsAffected()
	}
	if n == 0 && tag.String() != "" && writesInWith(sql) {
		n = 1
	}
	return n
}

// dataModifying finds, in SQL stripped of comments, literals and quoted
// names and lower-cased, an INSERT, UPDATE, DELETE or MERGE statement
// opening a parenthesis: PostgreSQL allows one there only as the body of
// a WITH query.
var dataModifying = regexp.MustCompile(`\(\s*(insert\s+into\b|update\s+(only\s+)?[a-z_]|delete\s+from\b|merge\s+into\b)`)

// writesInWith reports whether sql is a WITH query with a data-modifying
// part.
func writesInWith(sql string) bool {
	code := strings.ToLower(codeOnly(sql))
	if !strings.HasPrefix(strings.TrimLeft(code, " \t\r\n("), "with") {
		return false
	}
	return dataModifying.MatchString(code)
}

// codeOnly returns sql with its comments, string literals and quoted
// identifiers replaced by a space, so that only keywords and bare names
// are left to match. Dollar-quoted strings are dropped as a whole; an
// unterminated one runs to the end.
func codeOnly(sql string) string {
	var b strings.Builder
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			j := strings.IndexByte(sql[i:], '\n')
			if j < 0 {
				return b.String()
			}
			i += j
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			// Block comments nest in PostgreSQL.
			depth, j := 0, i
			for j < len(sql) {
				if strings.HasPrefix(sql[j:], "/*") {
					depth++
					j += 2
				} else if strings.HasPrefix(sql[j:], "*/") {
					depth--
					j += 2
					if depth == 0 {
						break
					}
				} else {
					j++
				}
			}
			i = j
			b.WriteByte(' ')
		case c == '\'' || c == '"':
			// A doubled quote inside is two quoted runs back to back.
			j := strings.IndexByte(sql[i+1:], c)
			if j < 0 {
				return b.String()
			}
			i += j + 2
			b.WriteByte(' ')
		case c == '$':
			if tag := dollarTag.FindString(sql[i:]); tag != "" {
				j := strings.Index(sql[i+len(tag):], tag)
				if j < 0 {
					return b.String()
				}
				i += len(tag) + j + len(tag)
				b.WriteByte(' ')
				continue
			}
			b.WriteByte(c)
			i++
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// dollarTag is the opening of a dollar-quoted string ($$ or $tag$; $1 is a
// parameter).
var dollarTag = regexp.MustCompile(`^\$([a-zA-Z_][a-zA-Z0-9_]*)?\$`)

func (tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, traceKey{}, queryTrace{sql: data.SQL})
}

func (tracer) TraceQueryEnd(ctx context.Context, c *pgx.Conn, data pgx.TraceQueryEndData) {
	q, _ := ctx.Value(traceKey{}).(queryTrace)
	report(c, q.sql, data.CommandTag, data.Err, 1)
}

// report emits the event of statement sql, which took trips round trips
// and ended with tag or err: a transaction's bound, or a statement.
func report(c *pgx.Conn, sql string, tag pgconn.CommandTag, err error, trips int) {
	word := strings.ToLower(strings.TrimSpace(sql))
	switch {
	case strings.HasPrefix(word, "begin"):
		emit(c, sqltrace.Begin, "", 0, trips)
	case word == "commit":
		if err != nil || tag.String() == "ROLLBACK" {
			emit(c, sqltrace.Rollback, "", 0, trips)
		} else {
			emit(c, sqltrace.Commit, "", -1, trips)
		}
	case word == "rollback":
		emit(c, sqltrace.Rollback, "", 0, trips)
	default:
		emit(c, sqltrace.Statement, sql, changed(sql, tag), trips)
	}
}

func (tracer) TraceBatchStart(ctx context.Context, c *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	if c.PgConn().TxStatus() == 'I' {
		emit(c, sqltrace.Begin, "", 0, 1)
		return context.WithValue(ctx, traceKey{}, queryTrace{sql: "implicit"})
	}
	emit(c, sqltrace.Trip, "", 0, 1)
	return ctx
}

func (tracer) TraceBatchQuery(_ context.Context, c *pgx.Conn, data pgx.TraceBatchQueryData) {
	report(c, data.SQL, data.CommandTag, data.Err, 0)
}

// TraceBatchEnd ends the implicit transaction of a batch sent outside one,
// unless the batch left a transaction of its own open (a BEGIN without a
// COMMIT in it), which a later statement ends.
func (tracer) TraceBatchEnd(ctx context.Context, c *pgx.Conn, data pgx.TraceBatchEndData) {
	if q, _ := ctx.Value(traceKey{}).(queryTrace); q.sql == "implicit" && c.PgConn().TxStatus() == 'I' {
		if data.Err != nil {
			emit(c, sqltrace.Rollback, "", 0, 0)
		} else {
			emit(c, sqltrace.Commit, "", -1, 0)
		}
	}
}
