package sqlcore

import (
	"context"
	"time"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// scanKey reads ID, tenant, name, prefix, creation, last use and
// revocation times (NULL: never).
func (s *Store) scanKey(r Row) (db.Key, error) {
	var k db.Key
	err := r.Scan(&k.ID, &k.Tenant, &k.Name, &k.Prefix, s.d.ScanTime(&k.CreatedAt), s.d.ScanTime(&k.LastUsedAt), s.d.ScanTime(&k.RevokedAt))
	return k, err
}

// CreateKey stores a key with its hash; CreatedAt is set when zero.
func (s *Store) CreateKey(ctx context.Context, k db.Key, hash []byte) (db.Key, error) {
	if err := dbutil.Key(k, hash); err != nil {
		return db.Key{}, err
	}
	if k.CreatedAt.IsZero() {
		k.CreatedAt = dbutil.Now()
	}
	k.CreatedAt = k.CreatedAt.UTC().Truncate(time.Microsecond)
	k.LastUsedAt, k.RevokedAt = time.Time{}, time.Time{}
	_, err := s.d.Exec(ctx, s.q.InsertKey, k.ID, k.Tenant, k.Name, k.Prefix, hash, s.d.Time(k.CreatedAt))
	if s.d.IsUnique(err) {
		return db.Key{}, s.fail(db.ErrConflict, "key %q", k.ID)
	}
	if err != nil {
		return db.Key{}, s.wrap(err, "create key %q", k.ID)
	}
	return k, nil
}

// KeyByHash returns the key with this hash.
func (s *Store) KeyByHash(ctx context.Context, hash []byte) (db.Key, error) {
	k, err := s.scanKey(s.d.Reader().QueryRow(ctx, s.q.KeyByHash, hash))
	if s.d.IsNoRows(err) {
		return db.Key{}, s.fail(db.ErrNotFound, "no key has this hash")
	}
	return k, s.wrap(err, "key by hash")
}

// ListKeys lists the keys of tenant, or of every tenant for "" (nil for
// none).
func (s *Store) ListKeys(ctx context.Context, tenant string) ([]db.Key, error) {
	out, err := collect(ctx, s.d.Reader(), s.scanKey, s.q.ListKeys, tenant)
	if err != nil {
		return nil, s.wrap(err, "list keys")
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// RevokeKey marks the key revoked (the first revocation's time stays).
func (s *Store) RevokeKey(ctx context.Context, id string, at time.Time) (db.Key, error) {
	var k db.Key
	err := s.d.Write(ctx, func(tx Conn) error {
		var err error
		k, err = s.scanKey(tx.QueryRow(ctx, s.q.RevokeKey, id, s.d.Time(at.UTC())))
		if s.d.IsNoRows(err) {
			return s.fail(db.ErrNotFound, "key %q", id)
		}
		return s.wrap(err, "revoke key %q", id)
	})
	return k, err
}

// TouchKey records a use of the key.
func (s *Store) TouchKey(ctx context.Context, id string, at time.Time) error {
	n, err := s.d.Exec(ctx, s.q.TouchKey, id, s.d.Time(at.UTC()))
	if err != nil {
		return s.wrap(err, "touch key %q", id)
	}
	if n == 0 {
		return s.fail(db.ErrNotFound, "key %q", id)
	}
	return nil
}

// CountActiveKeys counts the keys not revoked.
func (s *Store) CountActiveKeys(ctx context.Context) (int, error) {
	var n int
	err := s.d.Reader().QueryRow(ctx, s.q.CountActiveKeys).Scan(&n)
	return n, s.wrap(err, "count keys")
}
