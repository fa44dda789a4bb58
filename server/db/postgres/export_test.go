package postgres

import (
	"context"
	"fmt"
	"testing"

	"github.com/trellis-agents/trellis/internal/pgdb/pgdbtest"
	"github.com/trellis-agents/trellis/server/db"
)

// OpenSeeded opens the service's tables in a schema of their own (closed
// when t ends) and adds threads threads of the default tenant, each with
// one pending run ("t0"/"rt0", …), never analyzed: the tables the plan
// tests plan on. It returns the database, its DSN and the schema.
func OpenSeeded(t testing.TB, threads int) (*DB, string, string) {
	t.Helper()
	ctx := context.Background()
	dsn, schema := pgdbtest.Schema(t)
	d, err := Open(ctx, dsn, WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	for i := range threads {
		th := fmt.Sprintf("t%d", i)
		if _, err := d.CreateThread(ctx, "default", db.Thread{ID: th}, db.IfExistsRaise); err != nil {
			t.Fatal(err)
		}
		if _, err := d.CreateRun(ctx, "default", db.Run{ID: "r" + th, ThreadID: th}); err != nil {
			t.Fatal(err)
		}
	}
	return d, dsn, schema
}

// Corrupt makes the stored metadata of one row a JSON string, which does
// not decode as metadata, for dbtest.Corrupter.
func (d *DB) Corrupt(kind, tenant, id string) error {
	tables := map[string][2]string{
		"assistant": {"trellis_assistants", "assistant_id"},
		"thread":    {"trellis_threads", "thread_id"},
		"run":       {"trellis_runs", "run_id"},
	}
	tc, ok := tables[kind]
	if !ok {
		return fmt.Errorf("corrupt: unknown kind %q", kind)
	}
	tag, err := d.pool.Exec(context.Background(),
		`UPDATE `+tc[0]+` SET metadata = '"not metadata"'::jsonb WHERE tenant = $1 AND `+tc[1]+` = $2`, tenant, id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("corrupt %s %q: %d rows changed", kind, id, tag.RowsAffected())
	}
	return nil
}

// Exec runs a raw statement, for tests that check what the schema itself
// enforces.
func (d *DB) Exec(query string, args ...any) error {
	_, err := d.pool.Exec(context.Background(), query, args...)
	return err
}

// QueryRow runs a raw one-row query into dst.
func (d *DB) QueryRow(query string, dst any, args ...any) error {
	return d.pool.QueryRow(context.Background(), query, args...).Scan(dst)
}

// SchemaColumns lists the columns of every trellis_ table of the schema,
// for dbtest's check that db.Tables covers it.
func (d *DB) SchemaColumns() (map[string][]string, error) {
	rows, err := d.pool.Query(context.Background(), `SELECT table_name::text, column_name::text FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name LIKE 'trellis\_%' ORDER BY table_name, ordinal_position`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			return nil, err
		}
		out[table] = append(out[table], col)
	}
	return out, rows.Err()
}

// InTx runs fn in a write transaction of the database, for
// dbtest.TxRunner.
func (d *DB) InTx(ctx context.Context, fn func(tx any) error) error {
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}
