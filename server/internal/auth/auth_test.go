package auth

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// keys is an in-memory db.Keys.
type keys struct {
	mu      sync.Mutex
	byHash  map[string]db.Key
	broken  error
	touches int
}

func (k *keys) CreateKey(_ context.Context, key db.Key, hash []byte) (db.Key, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.byHash[string(hash)] = key
	return key, nil
}

func (k *keys) KeyByHash(_ context.Context, hash []byte) (db.Key, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.broken != nil {
		return db.Key{}, k.broken
	}
	key, ok := k.byHash[string(hash)]
	if !ok {
		return db.Key{}, db.ErrNotFound
	}
	return key, nil
}

func (k *keys) ListKeys(context.Context, string) ([]db.Key, error) { return nil, nil }
func (k *keys) RevokeKey(context.Context, string, time.Time) (db.Key, error) {
	return db.Key{}, nil
}

func (k *keys) TouchKey(context.Context, string, time.Time) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.touches++
	return nil
}

func (k *keys) CountActiveKeys(context.Context) (int, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.broken != nil {
		return 0, k.broken
	}
	n := 0
	for _, key := range k.byHash {
		if key.Active() {
			n++
		}
	}
	return n, nil
}

func TestNewKey(t *testing.T) {
	s1, k1, err := NewKey("acme", "ci")
	if err != nil {
		t.Fatal(err)
	}
	s2, k2, _ := NewKey("acme", "ci")
	if s1 == s2 || k1.ID == k2.ID || !strings.HasPrefix(s1, KeyPrefix) || len(s1) != len(KeyPrefix)+43 || !strings.HasPrefix(s1, k1.Prefix) || len(k1.Prefix) != 14 {
		t.Errorf("keys %q %+v, %q %+v", s1, k1, s2, k2)
	}
	if bytes.Equal(Hash(s1), Hash(s2)) || len(Hash(s1)) != 32 || !bytes.Equal(Hash(s1), Hash(s1)) {
		t.Error("Hash is not a SHA-256 of the key")
	}
}

func TestPresented(t *testing.T) {
	for _, c := range []struct{ header, value, want string }{
		{"Authorization", "Bearer abc", "abc"},
		{"Authorization", "bearer  abc ", "abc"},
		{"Authorization", "Basic abc", ""},
		{"Authorization", "Bearer", ""},
		{"X-Api-Key", " abc ", "abc"},
		{"X-Other", "abc", ""},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set(c.header, c.value)
		if got := Presented(r); got != c.want {
			t.Errorf("%s: %q → %q, want %q", c.header, c.value, got, c.want)
		}
	}
}

// The middleware puts the key's tenant in the context, prepares each
// tenant once, touches a key at most once a minute, and answers 503 (not
// 401, not a pass) when the keys cannot be read.
func TestMiddleware(t *testing.T) {
	store := &keys{byHash: map[string]db.Key{}}
	secret, key, _ := NewKey("acme", "")
	store.CreateKey(context.Background(), key, Hash(secret))
	var prepared []string
	a := New(Config{Keys: store, Public: func(r *http.Request) bool { return r.URL.Path == "/ok" },
		OnTenant: func(_ context.Context, tenant string) error { prepared = append(prepared, tenant); return nil }})
	var seen string
	h := a.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, _ = Tenant(r.Context())
	}))
	call := func(path, k string) int {
		r := httptest.NewRequest("GET", path, nil)
		if k != "" {
			r.Header.Set("X-Api-Key", k)
		}
		w := httptest.NewRecorder()
		seen = ""
		h.ServeHTTP(w, r)
		return w.Code
	}
	for range 3 {
		if code := call("/threads", secret); code != 200 || seen != "acme" {
			t.Errorf("with the key: %d, tenant %q", code, seen)
		}
	}
	if len(prepared) != 1 || store.touches != 1 {
		t.Errorf("prepared %v, touched %d times; want once each", prepared, store.touches)
	}
	if code := call("/threads", ""); code != 401 {
		t.Errorf("without a key: %d", code)
	}
	if code := call("/ok", ""); code != 200 || seen != "" {
		t.Errorf("public route: %d, tenant %q", code, seen)
	}
	// Auth off (no active key): a foreign bearer is ignored, not refused.
	off := New(Config{Keys: &keys{byHash: map[string]db.Key{}}}).Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, k := range []string{"sk-not-trellis", KeyPrefix + "unknown"} {
		r := httptest.NewRequest("GET", "/v1/models", nil)
		r.Header.Set("Authorization", "Bearer "+k)
		w := httptest.NewRecorder()
		off.ServeHTTP(w, r)
		if w.Code != 200 {
			t.Errorf("auth off, key %q: %d, want it ignored", k, w.Code)
		}
	}
	store.broken = errors.New("disk on fire")
	if code := call("/threads", secret); code != 503 {
		t.Errorf("keys unreadable: %d, want 503", code)
	}
}
