// Package retryafter reads how long an HTTP server asked a client to wait.
package retryafter

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Max bounds what Parse returns: a server asking for more is treated as
// asking for Max, so a bad header cannot stall a run for hours.
const Max = 5 * time.Minute

// Parse returns the wait asked for by the retry-after-ms header
// (milliseconds, sent by OpenAI and Anthropic) or else Retry-After (seconds
// or an HTTP date, RFC 9110 §10.2.3), or 0 when neither is present or
// valid. now is used for dates.
func Parse(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return clamp(time.Duration(ms * float64(time.Millisecond)))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return clamp(time.Duration(s * float64(time.Second)))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return clamp(d)
		}
	}
	return 0
}

func clamp(d time.Duration) time.Duration { return min(d, Max) }
