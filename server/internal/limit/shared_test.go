package limit

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/trellis-agents/trellis/internal/testenv"
)

// Two Rates sharing one Redis spend one budget per tenant: a burst of 2
// spent through both leaves none for either; another tenant has its own;
// Redis's answer carries the wait.
func TestSharedRateAcrossProcesses(t *testing.T) {
	addr := testenv.RedisAddr(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: addr})
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.Ping(context.Background()).Err(); err != nil {
		testenv.Unreachable(t, "Redis at "+addr, err)
	}
	prefix := "trellis-test:rate:" + uuid.NewString() + ":"
	tenant := func(r *http.Request) string { return r.Header.Get("X-Tenant") }
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	a := NewRate(0.01, 2, tenant).WithShared(NewRedisRate(rdb, prefix)).Middleware(ok)
	b := NewRate(0.01, 2, tenant).WithShared(NewRedisRate(rdb, prefix)).Middleware(ok)
	do := func(h http.Handler, ten string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/threads/count", nil)
		req.Header.Set("X-Tenant", ten)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	for i, h := range []http.Handler{a, b} {
		if w := do(h, "t1"); w.Code != 200 {
			t.Fatalf("request %d within the shared burst: %d", i, w.Code)
		}
	}
	for i, h := range []http.Handler{a, b} {
		if w := do(h, "t1"); w.Code != 429 || w.Header().Get("Retry-After") == "" {
			t.Errorf("process %d over the shared rate: %d Retry-After %q", i, w.Code, w.Header().Get("Retry-After"))
		}
	}
	if w := do(b, "t2"); w.Code != 200 {
		t.Errorf("another tenant: %d", w.Code)
	}
	d, err := NewRedisRate(rdb, prefix).Take(context.Background(), "t1", 0.01, 2)
	if err != nil || d < 90*time.Second || d > 100*time.Second {
		t.Errorf("the wait Redis gives: %s %v; want about 100 s (one request per 100 s)", d, err)
	}
}

// Without Redis the Rate falls back to its own limiter: requests are
// still limited, per process.
func TestSharedRateFallsBack(t *testing.T) {
	rdb := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 50 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	if _, err := NewRedisRate(rdb, "x:").Take(context.Background(), "t", 1, 1); err == nil {
		t.Fatal("Take against no Redis is not an error")
	}
	h := NewRate(0.01, 1, func(*http.Request) string { return "t" }).WithShared(NewRedisRate(rdb, "x:")).
		Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	codes := []int{}
	for range 2 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		codes = append(codes, w.Code)
	}
	if codes[0] != 200 || codes[1] != 429 {
		t.Errorf("codes %v, want 200 then 429 from the process's own limiter", codes)
	}
}
