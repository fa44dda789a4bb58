package sqlite

import (
	"context"
	"fmt"
)

// Corrupt damages the stored metadata of one row so that it no longer
// decodes, for dbtest.Corrupter.
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
	table, col := tc[0], tc[1]
	res, err := d.sq.Write.ExecContext(context.Background(),
		`UPDATE `+table+` SET metadata = '{"half":' WHERE tenant = ? AND `+col+` = ?`, tenant, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("corrupt %s %q: %d rows changed", kind, id, n)
	}
	return nil
}

// Exec runs a raw statement on the write connection, for tests that check
// what the schema itself enforces.
func (d *DB) Exec(query string, args ...any) error {
	_, err := d.sq.Write.ExecContext(context.Background(), query, args...)
	return err
}

// SchemaColumns lists the columns of every trellis_ table, for dbtest's
// check that db.Tables covers the schema.
func (d *DB) SchemaColumns() (map[string][]string, error) {
	rows, err := d.sq.Read.Query(`SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p
		WHERE m.type = 'table' AND m.name LIKE 'trellis\_%' ESCAPE '\' ORDER BY m.name, p.cid`)
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
	tx, err := d.sq.Write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}
