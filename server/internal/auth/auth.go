// Package auth authenticates the service's requests with API keys: a key
// names its tenant, and the tenant goes into the request's context, where
// the API's handlers read it. Keys are random 256-bit secrets; only their
// SHA-256 hash is stored (server/db Keys), so a copy of the database does
// not give anyone a working key.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
)

// KeyPrefix starts every key, so a leaked one is recognisable (secret
// scanners) and a wrong string fails fast.
const KeyPrefix = "trellis_"

// shownPrefix is how many characters of a key `trellis keys list` shows.
const shownPrefix = len(KeyPrefix) + 6

// maxKeyLen bounds what a request may present as a key.
const maxKeyLen = 256

// NewKey returns a new key's secret (shown once, never stored) and the
// row to store with Hash(secret).
func NewKey(tenant, name string) (secret string, k db.Key, err error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", db.Key{}, fmt.Errorf("auth: read random bytes: %w", err)
	}
	id := make([]byte, 8)
	if _, err := rand.Read(id); err != nil {
		return "", db.Key{}, fmt.Errorf("auth: read random bytes: %w", err)
	}
	secret = KeyPrefix + base64.RawURLEncoding.EncodeToString(b)
	return secret, db.Key{ID: hex.EncodeToString(id), Tenant: tenant, Name: name, Prefix: secret[:shownPrefix]}, nil
}

// Hash is what is stored of a key: its SHA-256. A key carries 256 random
// bits, so a fast hash is as safe as a slow one here (no dictionary to
// try) and costs microseconds per request, where bcrypt would cost tens
// of milliseconds.
func Hash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

type ctxKey struct{}

// WithTenant returns ctx carrying the request's tenant.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, ctxKey{}, tenant)
}

// Tenant returns the tenant Middleware put in ctx ("", false when the
// request carried no key and auth is off).
func Tenant(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(ctxKey{}).(string)
	return t, ok
}

// Config configures an Authenticator.
type Config struct {
	// Keys is where keys are looked up.
	Keys db.Keys
	// Required turns auth on even when no key exists (every request but
	// the public ones is then refused until one is created). Without it,
	// auth is on exactly when at least one active key exists.
	Required bool
	// Public reports requests served without a key (/ok, /info).
	Public func(r *http.Request) bool
	// Log receives failures to look keys up (slog.Default() when nil).
	Log *slog.Logger
	// OnTenant, when set, is called before the first request of each
	// tenant this Authenticator lets through (the server creates the
	// tenant's default assistants); an error answers 503 and is retried
	// on the tenant's next request.
	OnTenant func(ctx context.Context, tenant string) error
}

// Authenticator is the middleware that checks keys. Create it with New.
type Authenticator struct {
	cfg Config

	mu        sync.Mutex
	active    int       // active keys at checkedAt
	checkedAt time.Time // zero: never
	touched   map[string]time.Time
	seen      map[string]bool // tenants OnTenant succeeded for
}

// activeTTL is how long the count of active keys is trusted: a key
// created by `trellis keys create` in another process turns auth on
// within it.
const activeTTL = time.Second

// touchEvery is how often a key's last_used_at is written at most.
const touchEvery = time.Minute

// New returns an Authenticator.
func New(cfg Config) *Authenticator {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Authenticator{cfg: cfg, touched: map[string]time.Time{}, seen: map[string]bool{}}
}

// On reports whether requests need a key now.
func (a *Authenticator) On(ctx context.Context) (bool, error) {
	if a.cfg.Required {
		return true, nil
	}
	a.mu.Lock()
	fresh := !a.checkedAt.IsZero() && time.Since(a.checkedAt) < activeTTL
	n := a.active
	a.mu.Unlock()
	if fresh {
		return n > 0, nil
	}
	n, err := a.cfg.Keys.CountActiveKeys(ctx)
	if err != nil {
		return false, err
	}
	a.mu.Lock()
	a.active, a.checkedAt = n, time.Now()
	a.mu.Unlock()
	return n > 0, nil
}

// Presented returns the key a request carries: "Authorization: Bearer
// KEY" or "X-Api-Key: KEY" ("" when neither).
func Presented(r *http.Request) string {
	if k := strings.TrimSpace(r.Header.Get("X-Api-Key")); k != "" {
		return k
	}
	h := strings.TrimSpace(r.Header.Get("Authorization"))
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// Middleware checks the key of every request that is not public and puts
// its tenant in the context. When auth is on, a request without a valid
// key is refused (401). When it is off, a valid key still selects its
// tenant, and any other request passes with no tenant.
func (a *Authenticator) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.cfg.Public != nil && a.cfg.Public(r) {
			next.ServeHTTP(w, r)
			return
		}
		secret := Presented(r)
		if secret == "" {
			on, err := a.On(r.Context())
			if err != nil {
				a.cfg.Log.Error("auth: count the API keys", "err", err)
				wire.NewProblem(http.StatusServiceUnavailable, "the API keys cannot be read; try again").Write(w, r)
				return
			}
			if on {
				unauthorized(w, r, "this server requires an API key: send Authorization: Bearer KEY or X-Api-Key: KEY (create one with trellis keys create --tenant NAME)")
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		// refuse answers 401 when auth is on; with auth off a key that is
		// not a valid one (clients such as OpenAI's always send some
		// bearer) is ignored and the request is the default tenant's.
		refuse := func(detail string) {
			on, err := a.On(r.Context())
			if err != nil {
				a.cfg.Log.Error("auth: count the API keys", "err", err)
				wire.NewProblem(http.StatusServiceUnavailable, "the API keys cannot be read; try again").Write(w, r)
				return
			}
			if on {
				unauthorized(w, r, detail)
				return
			}
			next.ServeHTTP(w, r)
		}
		if len(secret) > maxKeyLen || !strings.HasPrefix(secret, KeyPrefix) {
			refuse("the API key is not a Trellis key (they start with " + KeyPrefix + ")")
			return
		}
		k, err := a.cfg.Keys.KeyByHash(r.Context(), Hash(secret))
		switch {
		case errors.Is(err, db.ErrNotFound):
			refuse("the API key is not known to this server")
			return
		case err != nil:
			a.cfg.Log.Error("auth: look the API key up", "err", err)
			wire.NewProblem(http.StatusServiceUnavailable, "the API keys cannot be read; try again").Write(w, r)
			return
		case !k.Active():
			refuse("the API key " + k.Prefix + "... was revoked")
			return
		}
		a.touch(r.Context(), k.ID)
		if err := a.first(r.Context(), k.Tenant); err != nil {
			a.cfg.Log.Error("auth: prepare the tenant", "tenant", k.Tenant, "err", err)
			wire.NewProblem(http.StatusServiceUnavailable, "the tenant's default assistants cannot be created; try again").Write(w, r)
			return
		}
		next.ServeHTTP(w, r.WithContext(WithTenant(r.Context(), k.Tenant)))
	})
}

// first calls OnTenant once per tenant.
func (a *Authenticator) first(ctx context.Context, tenant string) error {
	if a.cfg.OnTenant == nil {
		return nil
	}
	a.mu.Lock()
	done := a.seen[tenant]
	a.mu.Unlock()
	if done {
		return nil
	}
	if err := a.cfg.OnTenant(ctx, tenant); err != nil {
		return err
	}
	a.mu.Lock()
	a.seen[tenant] = true
	a.mu.Unlock()
	return nil
}

// touch records a use of the key, at most once per touchEvery.
func (a *Authenticator) touch(ctx context.Context, id string) {
	now := time.Now()
	a.mu.Lock()
	last, ok := a.touched[id]
	due := !ok || now.Sub(last) >= touchEvery
	if due {
		a.touched[id] = now
	}
	a.mu.Unlock()
	if !due {
		return
	}
	if err := a.cfg.Keys.TouchKey(context.WithoutCancel(ctx), id, now.UTC()); err != nil {
		a.cfg.Log.Warn("auth: record the API key's use", "key", id, "err", err)
	}
}

// unauthorized answers 401 with the challenge RFC 9110 requires.
func unauthorized(w http.ResponseWriter, r *http.Request, detail string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="trellis"`)
	wire.NewProblem(http.StatusUnauthorized, detail).Write(w, r)
}
