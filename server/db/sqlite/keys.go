package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/trellis-agents/trellis/internal/sqlitedb"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// KeysComponent names the API keys' table in schema_migrations: its own
// component, so the keys' schema is versioned apart from the other tables.
const KeysComponent = "server_keys"

// keyMigrations is the keys' schema, oldest first.
var keyMigrations = []sqlitedb.Migration{{Version: 1, SQL: `
CREATE TABLE trellis_api_keys (
	key_id       TEXT    NOT NULL PRIMARY KEY,
	tenant       TEXT    NOT NULL,
	name         TEXT    NOT NULL,
	prefix       TEXT    NOT NULL,
	hash         BLOB    NOT NULL UNIQUE,
	created_at   INTEGER NOT NULL,
	last_used_at INTEGER,
	revoked_at   INTEGER
) WITHOUT ROWID;
CREATE INDEX trellis_api_keys_tenant ON trellis_api_keys (tenant, created_at);
`}}

const keyCols = `key_id, tenant, name, prefix, created_at, last_used_at, revoked_at`

func scanKey(s scanner) (db.Key, error) {
	var k db.Key
	var created int64
	var used, revoked sql.NullInt64
	if err := s.Scan(&k.ID, &k.Tenant, &k.Name, &k.Prefix, &created, &used, &revoked); err != nil {
		return db.Key{}, err
	}
	k.CreatedAt = fromMicros(created)
	if used.Valid {
		k.LastUsedAt = fromMicros(used.Int64)
	}
	if revoked.Valid {
		k.RevokedAt = fromMicros(revoked.Int64)
	}
	return k, nil
}

// CreateKey stores a key with its hash; CreatedAt is set when zero.
func (d *DB) CreateKey(ctx context.Context, k db.Key, hash []byte) (db.Key, error) {
	if err := dbutil.Key(k, hash); err != nil {
		return db.Key{}, err
	}
	if k.CreatedAt.IsZero() {
		k.CreatedAt = dbutil.Now()
	}
	k.CreatedAt = k.CreatedAt.UTC().Truncate(time.Microsecond)
	k.LastUsedAt, k.RevokedAt = time.Time{}, time.Time{}
	err := d.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO trellis_api_keys (key_id, tenant, name, prefix, hash, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			k.ID, k.Tenant, k.Name, k.Prefix, hash, micros(k.CreatedAt))
		if isUnique(err) {
			return fmt.Errorf("server/db/sqlite: key %q: %w", k.ID, db.ErrConflict)
		}
		return wrap(err, "create key %q", k.ID)
	})
	if err != nil {
		return db.Key{}, err
	}
	return k, nil
}

// KeyByHash returns the key with this hash.
func (d *DB) KeyByHash(ctx context.Context, hash []byte) (db.Key, error) {
	k, err := scanKey(d.sq.Read.QueryRowContext(ctx, `SELECT `+keyCols+` FROM trellis_api_keys WHERE hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return db.Key{}, fmt.Errorf("server/db/sqlite: no key has this hash: %w", db.ErrNotFound)
	}
	return k, wrap(err, "key by hash")
}

// ListKeys lists the keys of tenant, or of every tenant for "".
func (d *DB) ListKeys(ctx context.Context, tenant string) ([]db.Key, error) {
	rows, err := d.sq.Read.QueryContext(ctx, `SELECT `+keyCols+` FROM trellis_api_keys WHERE ? = '' OR tenant = ? ORDER BY created_at, key_id`, tenant, tenant)
	if err != nil {
		return nil, wrap(err, "list keys")
	}
	defer rows.Close()
	var out []db.Key
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, wrap(err, "list keys")
		}
		out = append(out, k)
	}
	return out, wrap(rows.Err(), "list keys")
}

// RevokeKey marks the key revoked.
func (d *DB) RevokeKey(ctx context.Context, id string, at time.Time) (db.Key, error) {
	var k db.Key
	err := d.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE trellis_api_keys SET revoked_at = ? WHERE key_id = ? AND revoked_at IS NULL`, micros(at), id); err != nil {
			return wrap(err, "revoke key %q", id)
		}
		var err error
		k, err = scanKey(tx.QueryRowContext(ctx, `SELECT `+keyCols+` FROM trellis_api_keys WHERE key_id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("server/db/sqlite: key %q: %w", id, db.ErrNotFound)
		}
		return wrap(err, "revoke key %q", id)
	})
	return k, err
}

// TouchKey records a use of the key.
func (d *DB) TouchKey(ctx context.Context, id string, at time.Time) error {
	return d.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE trellis_api_keys SET last_used_at = ? WHERE key_id = ?`, micros(at), id)
		if err != nil {
			return wrap(err, "touch key %q", id)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("server/db/sqlite: key %q: %w", id, db.ErrNotFound)
		}
		return nil
	})
}

// CountActiveKeys counts the keys not revoked.
func (d *DB) CountActiveKeys(ctx context.Context) (int, error) {
	var n int
	err := d.sq.Read.QueryRowContext(ctx, `SELECT count(*) FROM trellis_api_keys WHERE revoked_at IS NULL`).Scan(&n)
	return n, wrap(err, "count keys")
}
