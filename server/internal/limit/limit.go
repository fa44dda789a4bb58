// Package limit keeps the service's per-tenant limits: a request rate
// (token bucket, golang.org/x/time/rate) and concurrent event streams.
// Requests over a limit are answered 429 with a problem saying which limit
// and, where waiting helps, a Retry-After.
//
// The stream counts are this process's: with several replicas each one
// enforces them on the streams it serves. The request rate is shared by
// the replicas when they share a Redis (Rate.WithShared, RedisRate), and
// falls back to this process's own limiter while Redis does not answer.
// (Concurrent runs are counted in the database, across replicas:
// db.RunLimiter.)
package limit

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/trellis-agents/trellis/server/api/wire"
)

// TenantFunc returns a request's tenant.
type TenantFunc func(r *http.Request) string

// Limit names a limit a request was refused over (the label of the
// server's trellis_requests_refused_total metric).
type Limit string

// The limits a request can be refused over.
const (
	LimitRate        Limit = "rate"         // 429: the tenant's request rate
	LimitStreams     Limit = "streams"      // 429: the tenant's open event streams
	LimitBodySize    Limit = "body_size"    // 413: the request body's size
	LimitBodyTimeout Limit = "body_timeout" // 408: the request body's arrival time
)

// Limits lists every Limit.
var Limits = []Limit{LimitRate, LimitStreams, LimitBodySize, LimitBodyTimeout}

// Refused is told of each request refused over a limit, after the refusal
// is written; nil is told nothing. It must be safe for concurrent use.
type Refused func(Limit)

func (f Refused) tell(l Limit) {
	if f != nil {
		f(l)
	}
}

// Rate limits each tenant's requests to a rate with a burst.
type Rate struct {
	perSec float64
	burst  int
	tenant TenantFunc

	mu       sync.Mutex
	limiters map[string]*rate.Limiter

	shared  Shared // nil: this process's limiters only
	refused Refused
}

// OnRefused makes l tell f of each request it refuses. It returns l.
func (l *Rate) OnRefused(f Refused) *Rate {
	l.refused = f
	return l
}

// WithShared makes the budget one for every process using s (Redis, when
// replicas have one): each request spends from it, and only when s cannot
// be reached does this process's own limiter decide. It returns l.
func (l *Rate) WithShared(s Shared) *Rate {
	l.shared = s
	return l
}

// NewRate returns a Rate of perSec requests a second with bursts of burst
// (at least 1; perSec when 0). perSec <= 0 is no limit: Middleware
// returns next.
func NewRate(perSec float64, burst int, tenant TenantFunc) *Rate {
	if burst <= 0 {
		burst = max(1, int(math.Ceil(perSec)))
	}
	return &Rate{perSec: perSec, burst: burst, tenant: tenant, limiters: map[string]*rate.Limiter{}}
}

func (l *Rate) limiter(tenant string) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	lim, ok := l.limiters[tenant]
	if !ok {
		lim = rate.NewLimiter(rate.Limit(l.perSec), l.burst)
		l.limiters[tenant] = lim
	}
	return lim
}

// Middleware answers 429 with Retry-After to requests over the tenant's
// rate.
func (l *Rate) Middleware(next http.Handler) http.Handler {
	if l == nil || l.perSec <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant := l.tenant(r)
		if l.shared != nil {
			d, err := l.shared.Take(r.Context(), tenant, l.perSec, l.burst)
			if err == nil {
				if d > 0 {
					l.tooMany(w, r, d)
					return
				}
				next.ServeHTTP(w, r)
				return
			}
		}
		res := l.limiter(tenant).Reserve()
		if d := res.Delay(); d > 0 {
			res.Cancel()
			l.tooMany(w, r, d)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (l *Rate) tooMany(w http.ResponseWriter, r *http.Request, d time.Duration) {
	TooMany(w, r, d, fmt.Sprintf("too many requests: this tenant may make %g a second (bursts of %d); retry after the Retry-After seconds", l.perSec, l.burst))
	l.refused.tell(LimitRate)
}

// TooMany answers 429 with a problem and, when retry > 0, Retry-After in
// whole seconds (at least 1).
func TooMany(w http.ResponseWriter, r *http.Request, retry time.Duration, detail string) {
	if retry > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(retry.Seconds())))))
	}
	wire.NewProblem(http.StatusTooManyRequests, detail).Write(w, r)
}

// Counter counts what each tenant holds at once (open streams) against a
// maximum.
type Counter struct {
	max     int
	refused Refused

	mu   sync.Mutex
	held map[string]int
}

// NewCounter returns a Counter allowing max per tenant (<= 0: no limit).
func NewCounter(max int) *Counter {
	return &Counter{max: max, held: map[string]int{}}
}

// OnRefused makes Streams tell f of each stream it refuses over c. It
// returns c.
func (c *Counter) OnRefused(f Refused) *Counter {
	c.refused = f
	return c
}

// Max is the per-tenant maximum (<= 0: none).
func (c *Counter) Max() int { return c.max }

// Acquire takes one for tenant and reports whether it was under the
// maximum; release each successful Acquire with Release.
func (c *Counter) Acquire(tenant string) bool {
	if c == nil || c.max <= 0 {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held[tenant] >= c.max {
		return false
	}
	c.held[tenant]++
	return true
}

// Release gives back one of tenant's.
func (c *Counter) Release(tenant string) {
	if c == nil || c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held[tenant]--; c.held[tenant] <= 0 {
		delete(c.held, tenant)
	}
}

// Held is how many tenant holds now.
func (c *Counter) Held(tenant string) int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held[tenant]
}

// Body reads each request's body before the handler does, within timeout
// and at most maxBytes of it: a body that does not arrive in time is
// answered 408 (and the connection closed), a larger one 413. The handler
// then reads the body from memory. Memory per request is bounded by
// maxBytes. timeout <= 0 reads without a deadline. refused is told of each
// 413 and 408.
func Body(maxBytes int64, timeout time.Duration, refused Refused, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		tooLarge := func() {
			w.Header().Set("Connection", "close")
			wire.NewProblem(http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes, the limit of this server (limits.max_body_bytes); send less", maxBytes)).Write(w, r)
			refused.tell(LimitBodySize)
		}
		if r.ContentLength > maxBytes {
			tooLarge()
			return
		}
		rc := http.NewResponseController(w)
		if timeout > 0 {
			_ = rc.SetReadDeadline(time.Now().Add(timeout))
		}
		b, err := wire.ReadBody(r.Body, r.ContentLength, maxBytes)
		if timeout > 0 {
			_ = rc.SetReadDeadline(time.Time{})
		}
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			w.Header().Set("Connection", "close")
			wire.NewProblem(http.StatusRequestTimeout, fmt.Sprintf("the request body did not arrive within %s (limits.body_timeout); send it faster or in smaller parts", timeout)).Write(w, r)
			refused.tell(LimitBodyTimeout)
			return
		case err != nil:
			wire.BadRequest("reading the body failed: "+err.Error()).Write(w, r)
			return
		case int64(len(b)) > maxBytes:
			tooLarge()
			return
		}
		r.Body = wire.NewBody(b)
		next.ServeHTTP(w, r)
	})
}
