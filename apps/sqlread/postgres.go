package sqlread

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// PostgresDB is a Database over a PostgreSQL database, read the same way as
// SQLiteDB: every statement must pass CheckReadOnly, and it then runs in a
// READ ONLY transaction that is always rolled back, on connections whose
// default_transaction_read_only is on. PostgreSQL itself refuses any
// write the first check missed (nextval, SELECT ... FOR UPDATE, a function
// that writes). Create one with OpenPostgres.
type PostgresDB struct {
	db *sql.DB
	// Timeout bounds each query (default 10 seconds).
	Timeout time.Duration
	// Limits bound what each query reads (zero fields: the defaults).
	Limits Limits
}

// OpenPostgres connects to the PostgreSQL database at dsn (a postgres://
// URL or a key=value string) for reading only. schema, when not "", is
// the only schema on the search path (tables are listed from it); ""
// keeps the server's search path and lists the tables of current_schema().
func OpenPostgres(ctx context.Context, dsn, schema string) (*PostgresDB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlread: parse the PostgreSQL connection string: %w", err)
	}
	cfg.RuntimeParams["default_transaction_read_only"] = "on"
	if schema != "" {
		cfg.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	}
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(4)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlread: connect to PostgreSQL (is the server up and the DSN right?): %w", err)
	}
	return &PostgresDB{db: db, Timeout: 10 * time.Second}, nil
}

// Close closes the connections.
func (d *PostgresDB) Close() error { return d.db.Close() }

// Dialect reports PostgreSQL.
func (d *PostgresDB) Dialect() string { return PostgreSQL }

// readTx runs fn in a read-only transaction that is rolled back.
func (d *PostgresDB) readTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	if d.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.Timeout)
		defer cancel()
	}
	tx, err := d.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("query failed: start a read-only transaction: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // nothing was written; the rollback only ends it
	return fn(ctx, tx)
}

// Tables returns the base tables of the schema on the search path, each
// with a definition written as a CREATE TABLE statement (columns, types,
// NOT NULL, the primary key and foreign keys), rebuilt from the catalogue.
func (d *PostgresDB) Tables(ctx context.Context) ([]Table, error) {
	var out []Table
	err := d.readTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		rs, err := tx.QueryContext(ctx, `SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull
			FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
			WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')
			ORDER BY c.relname, a.attnum LIMIT 20000`)
		if err != nil {
			return fmt.Errorf("query failed: list the tables: %w", err)
		}
		defer rs.Close()
		cols := map[string][]string{}
		var names []string
		for rs.Next() {
			var table, col, typ string
			var notNull bool
			if err := rs.Scan(&table, &col, &typ, &notNull); err != nil {
				return fmt.Errorf("query failed: list the tables: %w", err)
			}
			if _, ok := cols[table]; !ok {
				names = append(names, table)
			}
			def := QuoteIdent(col) + " " + typ
			if notNull {
				def += " NOT NULL"
			}
			cols[table] = append(cols[table], def)
		}
		if err := rs.Err(); err != nil {
			return fmt.Errorf("query failed: list the tables: %w", err)
		}
		rs.Close()
		cons := map[string][]string{}
		crs, err := tx.QueryContext(ctx, `SELECT c.relname, pg_get_constraintdef(k.oid)
			FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND k.contype IN ('p', 'f', 'u', 'c')
			ORDER BY c.relname, k.contype DESC, k.conname LIMIT 20000`)
		if err != nil {
			return fmt.Errorf("query failed: list the constraints: %w", err)
		}
		defer crs.Close()
		for crs.Next() {
			var table, def string
			if err := crs.Scan(&table, &def); err != nil {
				return fmt.Errorf("query failed: list the constraints: %w", err)
			}
			cons[table] = append(cons[table], def)
		}
		if err := crs.Err(); err != nil {
			return fmt.Errorf("query failed: list the constraints: %w", err)
		}
		for _, t := range names {
			lines := append(cols[t], cons[t]...)
			out = append(out, Table{Name: t, SQL: "CREATE TABLE " + QuoteIdent(t) + " (\n  " + strings.Join(lines, ",\n  ") + "\n)"})
		}
		return nil
	})
	return out, err
}

// Query checks query with CheckReadOnly and runs it in a read-only
// transaction, returning at most maxRows rows (at least 1) within
// d.Limits. Like SQLiteDB's, the statement runs wrapped in an outer SELECT
// that reads only the first Limits.MaxColumns columns, each cast to text
// and cut to Limits.MaxValueBytes in SQL. A statement that cannot be
// wrapped (EXPLAIN) runs as it is, its values cut as they are scanned.
func (d *PostgresDB) Query(ctx context.Context, query string, maxRows int) (*Rows, error) {
	if err := CheckReadOnly(query); err != nil {
		return nil, err
	}
	maxRows = max(maxRows, 1)
	lim := d.Limits.withDefaults()
	body := strings.TrimRight(strings.TrimSpace(query), "; \t\r\n")
	var out *Rows
	err := d.readTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var all []string
		// A savepoint keeps the transaction usable when the probe fails.
		if _, err := tx.ExecContext(ctx, "SAVEPOINT trellis_probe"); err != nil {
			return fmt.Errorf("query failed: %w", err)
		}
		if rs, err := tx.QueryContext(ctx, "SELECT * FROM (\n"+body+"\n) AS trellis_q LIMIT 0"); err == nil {
			all, err = rs.Columns()
			rs.Close()
			if err != nil {
				all = nil
			}
		}
		if all == nil {
			if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT trellis_probe"); err != nil {
				return fmt.Errorf("query failed: %w", err)
			}
			var err error
			out, err = scan(ctx, tx, query, nil, maxRows, lim)
			return err
		}
		cols := all[:min(len(all), lim.MaxColumns)]
		names := make([]string, len(all))
		for i := range all {
			names[i] = fmt.Sprintf("c%d", i+1)
		}
		exprs := make([]string, len(cols))
		for i := range cols {
			exprs[i] = fmt.Sprintf("left(%s::text, %d)", names[i], lim.MaxValueBytes+1)
		}
		rowLimit := min(maxRows, max(lim.MaxCells/max(len(cols), 1), 1))
		wrapped := fmt.Sprintf("WITH trellis_q(%s) AS (\n%s\n) SELECT %s FROM trellis_q LIMIT %d", strings.Join(names, ", "), body, strings.Join(exprs, ", "), rowLimit+1)
		var err error
		out, err = scan(ctx, tx, wrapped, cols, rowLimit, lim)
		if err != nil {
			return err
		}
		out.OmittedColumns = len(all) - len(cols)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Validate asks PostgreSQL for the query's plan (EXPLAIN, which parses,
// analyses and plans the statement without running it) in a read-only
// transaction that is rolled back.
func (d *PostgresDB) Validate(ctx context.Context, query string) (string, error) {
	if err := CheckReadOnly(query); err != nil {
		return "", err
	}
	var plan []string
	err := d.readTx(ctx, func(ctx context.Context, tx *sql.Tx) error {
		rows, err := scan(ctx, tx, "EXPLAIN "+query, nil, 100, d.Limits.withDefaults())
		if err != nil {
			return err
		}
		for _, r := range rows.Rows {
			if len(r) > 0 && r[0] != nil {
				plan = append(plan, "- "+strings.TrimSpace(*r[0]))
			}
		}
		return nil
	})
	return strings.Join(plan, "\n"), err
}
