package limit

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

func tenantHeader(r *http.Request) string { return r.Header.Get("T") }

// Over the rate: 429 with a Retry-After of at least the time one token
// takes; each tenant has its own bucket.
func TestRate(t *testing.T) {
	var refused []Limit
	h := NewRate(0.1, 1, tenantHeader).OnRefused(func(l Limit) { refused = append(refused, l) }).Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	call := func(tenant string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("T", tenant)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := call("a"); w.Code != 200 {
		t.Fatalf("first: %d", w.Code)
	}
	w := call("a")
	retry, _ := strconv.Atoi(w.Header().Get("Retry-After"))
	if w.Code != 429 || retry < 9 || retry > 10 || !strings.Contains(w.Header().Get("Content-Type"), "problem+json") {
		t.Errorf("second: %d Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}
	if w := call("b"); w.Code != 200 {
		t.Errorf("other tenant: %d", w.Code)
	}
	if len(refused) != 1 || refused[0] != LimitRate {
		t.Errorf("refusals told: %q, want one of %q", refused, LimitRate)
	}
}

func TestCounter(t *testing.T) {
	c := NewCounter(2)
	for i, want := range []bool{true, true, false} {
		if got := c.Acquire("a"); got != want {
			t.Fatalf("Acquire %d of tenant a = %v, want %v", i+1, got, want)
		}
	}
	if !c.Acquire("b") {
		t.Fatal("tenant b was refused because of tenant a")
	}
	c.Release("a")
	if c.Held("a") != 1 || !c.Acquire("a") {
		t.Error("a released slot is not free again")
	}
	if !NewCounter(0).Acquire("a") {
		t.Error("no maximum refused")
	}
}

// Body answers 413 over the limit (by Content-Length or by what arrives)
// and hands the handler the body it read.
func TestBody(t *testing.T) {
	var got string
	var refused []Limit
	h := Body(5, 0, func(l Limit) { refused = append(refused, l) }, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = string(b)
	}))
	for _, c := range []struct {
		body   string
		length int64
		want   int
	}{
		{"12345", 5, 200},
		{"123456", 6, 413},
		{"123456", -1, 413}, // unknown length (chunked)
	} {
		r := httptest.NewRequest("POST", "/", strings.NewReader(c.body))
		r.ContentLength = c.length
		w := httptest.NewRecorder()
		got = ""
		h.ServeHTTP(w, r)
		if w.Code != c.want || (c.want == 200 && got != c.body) {
			t.Errorf("%q: %d, handler read %q", c.body, w.Code, got)
		}
	}
	if len(refused) != 2 || refused[0] != LimitBodySize || refused[1] != LimitBodySize {
		t.Errorf("refusals told: %q, want two of %q", refused, LimitBodySize)
	}
}
