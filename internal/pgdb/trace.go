package pgdb

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/trellis-agents/trellis/internal/sqltrace"
)

// tracer reports a pool's statements to sqltrace. Connect installs it in
// pools opened while an observer is set. A batch sent outside a
// transaction runs as one implicit transaction, and is reported so.
type tracer struct{}

type traceKey struct{}

type queryTrace struct{ sql string }

func connID(c *pgx.Conn) uint64 {
	if c == nil || c.PgConn() == nil {
		return 0
	}
	return uint64(c.PgConn().PID())
}

func emit(c *pgx.Conn, kind sqltrace.Kind, sql string, changed int64) {
	sqltrace.Emit(sqltrace.Event{Backend: "postgres", Conn: connID(c), Kind: kind, SQL: sql, Changed: changed})
}

// changed is how many rows a command tag says were written.
func changed(tag pgconn.CommandTag) int64 {
	if tag.Insert() || tag.Update() || tag.Delete() || strings.HasPrefix(tag.String(), "MERGE") {
		return tag.RowsAffected()
	}
	return 0
}

func (tracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, traceKey{}, queryTrace{sql: data.SQL})
}

func (tracer) TraceQueryEnd(ctx context.Context, c *pgx.Conn, data pgx.TraceQueryEndData) {
	q, _ := ctx.Value(traceKey{}).(queryTrace)
	word := strings.ToLower(strings.TrimSpace(q.sql))
	switch {
	case strings.HasPrefix(word, "begin"):
		emit(c, sqltrace.Begin, "", 0)
	case word == "commit":
		if data.Err != nil || data.CommandTag.String() == "ROLLBACK" {
			emit(c, sqltrace.Rollback, "", 0)
		} else {
			emit(c, sqltrace.Commit, "", -1)
		}
	case word == "rollback":
		emit(c, sqltrace.Rollback, "", 0)
	default:
		emit(c, sqltrace.Statement, q.sql, changed(data.CommandTag))
	}
}

func (tracer) TraceBatchStart(ctx context.Context, c *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	if c.PgConn().TxStatus() == 'I' {
		emit(c, sqltrace.Begin, "", 0)
		return context.WithValue(ctx, traceKey{}, queryTrace{sql: "implicit"})
	}
	return ctx
}

func (tracer) TraceBatchQuery(_ context.Context, c *pgx.Conn, data pgx.TraceBatchQueryData) {
	emit(c, sqltrace.Statement, data.SQL, changed(data.CommandTag))
}

func (tracer) TraceBatchEnd(ctx context.Context, c *pgx.Conn, data pgx.TraceBatchEndData) {
	if q, _ := ctx.Value(traceKey{}).(queryTrace); q.sql == "implicit" {
		if data.Err != nil {
			emit(c, sqltrace.Rollback, "", 0)
		} else {
			emit(c, sqltrace.Commit, "", -1)
		}
	}
}
