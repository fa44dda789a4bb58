package retryafter

import (
	"net/http"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"none", http.Header{}, 0},
		{"nil", nil, 0},
		{"seconds", http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{"fractional seconds", http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{"milliseconds win", http.Header{"Retry-After": {"3"}, "Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{"bad milliseconds fall back", http.Header{"Retry-After": {"2"}, "Retry-After-Ms": {"soon"}}, 2 * time.Second},
		{"date", http.Header{"Retry-After": {"Mon, 23 Nov 2026 12:00:07 GMT"}}, 7 * time.Second},
		{"date in the past", http.Header{"Retry-After": {"Mon, 23 Nov 2026 11:00:00 GMT"}}, 0},
		{"garbage", http.Header{"Retry-After": {"later"}}, 0},
		{"negative", http.Header{"Retry-After": {"-4"}}, 0},
		{"clamped", http.Header{"Retry-After": {"86400"}}, Max},
	}
	for _, c := range cases {
		if got := Parse(c.h, now); got != c.want {
			t.Errorf("%s: Parse = %v, want %v", c.name, got, c.want)
		}
	}
}
