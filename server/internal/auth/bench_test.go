package auth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/trellis-agents/trellis/server/db/sqlite"
)

// BenchmarkMiddlewareSQLite: one authenticated request through the
// middleware with the keys on a SQLite file (hash + indexed lookup), to a
// handler that does nothing.
func BenchmarkMiddlewareSQLite(b *testing.B) {
	d, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "keys.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	secret, key, _ := NewKey("acme", "")
	if _, err := d.CreateKey(context.Background(), key, Hash(secret)); err != nil {
		b.Fatal(err)
	}
	h := New(Config{Keys: d}).Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	r := httptest.NewRequest("GET", "/threads", nil)
	r.Header.Set("Authorization", "Bearer "+secret)
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatalf("status %d", w.Code)
		}
	}
}
