package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// KeysComponent names the API keys' table in schema_migrations: its own
// component, so the keys' schema is versioned apart from the other tables.
const KeysComponent = "server_keys"

// keyMigrations is the keys' schema; see pgdb.Migrate.
var keyMigrations = []string{
	// 1: the keys table.
	`
CREATE TABLE trellis_api_keys (
	key_id       text COLLATE "C" NOT NULL PRIMARY KEY,
	tenant       text COLLATE "C" NOT NULL,
	name         text             NOT NULL,
	prefix       text COLLATE "C" NOT NULL,
	hash         bytea            NOT NULL UNIQUE,
	created_at   timestamptz      NOT NULL,
	last_used_at timestamptz,
	revoked_at   timestamptz
);
CREATE INDEX trellis_api_keys_tenant ON trellis_api_keys (tenant, created_at);
`,
}

const keyCols = `key_id, tenant, name, prefix, created_at, last_used_at, revoked_at`

func scanKey(s scanner) (db.Key, error) {
	var k db.Key
	var used, revoked *time.Time
	if err := s.Scan(&k.ID, &k.Tenant, &k.Name, &k.Prefix, &k.CreatedAt, &used, &revoked); err != nil {
		return db.Key{}, err
	}
	k.CreatedAt = utc(k.CreatedAt)
	if used != nil {
		k.LastUsedAt = utc(*used)
	}
	if revoked != nil {
		k.RevokedAt = utc(*revoked)
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
	_, err := d.pool.Exec(ctx, `INSERT INTO trellis_api_keys (key_id, tenant, name, prefix, hash, created_at) VALUES ($1, $2, $3, $4, $5, $6)`,
		k.ID, k.Tenant, k.Name, k.Prefix, hash, k.CreatedAt)
	if isUnique(err, "") {
		return db.Key{}, fmt.Errorf("server/db/postgres: key %q: %w", k.ID, db.ErrConflict)
	}
	if err != nil {
		return db.Key{}, wrap(err, "create key %q", k.ID)
	}
	return k, nil
}

// KeyByHash returns the key with this hash.
func (d *DB) KeyByHash(ctx context.Context, hash []byte) (db.Key, error) {
	k, err := scanKey(d.pool.QueryRow(ctx, `SELECT `+keyCols+` FROM trellis_api_keys WHERE hash = $1`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return db.Key{}, fmt.Errorf("server/db/postgres: no key has this hash: %w", db.ErrNotFound)
	}
	return k, wrap(err, "key by hash")
}

// ListKeys lists the keys of tenant, or of every tenant for "".
func (d *DB) ListKeys(ctx context.Context, tenant string) ([]db.Key, error) {
	rows, err := d.pool.Query(ctx, `SELECT `+keyCols+` FROM trellis_api_keys WHERE $1 = '' OR tenant = $1 ORDER BY created_at, key_id`, tenant)
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
	k, err := scanKey(d.pool.QueryRow(ctx, `UPDATE trellis_api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE key_id = $1 RETURNING `+keyCols, id, at.UTC()))
	if errors.Is(err, pgx.ErrNoRows) {
		return db.Key{}, fmt.Errorf("server/db/postgres: key %q: %w", id, db.ErrNotFound)
	}
	return k, wrap(err, "revoke key %q", id)
}

// TouchKey records a use of the key.
func (d *DB) TouchKey(ctx context.Context, id string, at time.Time) error {
	tag, err := d.pool.Exec(ctx, `UPDATE trellis_api_keys SET last_used_at = $2 WHERE key_id = $1`, id, at.UTC())
	if err != nil {
		return wrap(err, "touch key %q", id)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("server/db/postgres: key %q: %w", id, db.ErrNotFound)
	}
	return nil
}

// CountActiveKeys counts the keys not revoked.
func (d *DB) CountActiveKeys(ctx context.Context) (int, error) {
	var n int
	err := d.pool.QueryRow(ctx, `SELECT count(*) FROM trellis_api_keys WHERE revoked_at IS NULL`).Scan(&n)
	return n, wrap(err, "count keys")
}
