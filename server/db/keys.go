package db

import (
	"context"
	"time"
)

// Key is an API key of the service, bound to one tenant. Only a hash of
// the secret is stored (see Keys); Prefix is the secret's first
// characters, shown by `trellis keys list` so that a key can be
// recognised without being stored.
type Key struct {
	ID     string `json:"key_id"`
	Tenant string `json:"tenant"`
	// Name is a free-form label ("ci", "alice's laptop"); may be empty.
	Name      string    `json:"name"`
	Prefix    string    `json:"prefix"`
	CreatedAt time.Time `json:"created_at"`
	// LastUsedAt is when a request last authenticated with the key (zero:
	// never); it is updated at most about once a minute.
	LastUsedAt time.Time `json:"last_used_at,omitzero"`
	// RevokedAt is when the key was revoked (zero: active).
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

// Active reports whether the key has not been revoked.
func (k Key) Active() bool { return k.RevokedAt.IsZero() }

// Keys stores the service's API keys. Unlike the other interfaces its
// methods are not scoped by tenant: keys are how a request gets its
// tenant, and the methods are the service's and its administrator's own
// (the keys command, the authenticator), never a request handler's.
type Keys interface {
	// CreateKey stores k with the hash of its secret; ErrConflict when
	// the ID or the hash exists already, ErrInvalid when the ID, tenant,
	// prefix or hash is empty.
	CreateKey(ctx context.Context, k Key, hash []byte) (Key, error)
	// KeyByHash returns the key whose secret hashes to hash, revoked or
	// not (ErrNotFound when none).
	KeyByHash(ctx context.Context, hash []byte) (Key, error)
	// ListKeys lists the keys of tenant ("" : every tenant's), revoked
	// ones included, oldest first.
	ListKeys(ctx context.Context, tenant string) ([]Key, error)
	// RevokeKey marks the key revoked at at (ErrNotFound when there is no
	// such key); revoking a revoked key keeps its first revocation time.
	RevokeKey(ctx context.Context, id string, at time.Time) (Key, error)
	// TouchKey sets the key's LastUsedAt to at (ErrNotFound when none).
	TouchKey(ctx context.Context, id string, at time.Time) error
	// CountActiveKeys counts the keys not revoked, of every tenant.
	CountActiveKeys(ctx context.Context) (int, error)
}
