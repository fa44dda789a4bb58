package server

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/internal/auth"
)

// Keys manages the API keys kept in a server's database: what `trellis
// keys create|list|revoke` does. Open it with OpenKeys on the same
// database value as Config.Database.
type Keys struct {
	st *storage
}

// OpenKeys opens (creating or migrating) the database, as New does.
func OpenKeys(ctx context.Context, database string) (*Keys, error) {
	st, err := openStorage(ctx, database, nil)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return &Keys{st: st}, nil
}

// Close closes the database.
func (k *Keys) Close() error { return k.st.close() }

// tenantName is what a tenant may be called.
var tenantName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Create makes a key for tenant and returns its secret, which is not
// stored and cannot be shown again. The tenant "default" holds what the
// server stored while auth was off.
func (k *Keys) Create(ctx context.Context, tenant, name string) (secret string, key db.Key, err error) {
	if !tenantName.MatchString(tenant) {
		return "", db.Key{}, fmt.Errorf("tenant %q: use 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit", tenant)
	}
	secret, key, err = auth.NewKey(tenant, name)
	if err != nil {
		return "", db.Key{}, err
	}
	key, err = k.st.db.CreateKey(ctx, key, auth.Hash(secret))
	if err != nil {
		return "", db.Key{}, err
	}
	return secret, key, nil
}

// List lists the keys of tenant ("": all), revoked ones included.
func (k *Keys) List(ctx context.Context, tenant string) ([]db.Key, error) {
	return k.st.db.ListKeys(ctx, tenant)
}

// Revoke revokes the key with this ID; requests with it are refused from
// then on (within a second on a running server).
func (k *Keys) Revoke(ctx context.Context, id string) (db.Key, error) {
	return k.st.db.RevokeKey(ctx, id, time.Now().UTC())
}
