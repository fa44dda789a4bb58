package limit

import (
	"context"
	"fmt"
	"math"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Shared is a rate limiter state kept outside the process, so replicas
// share one budget per tenant.
type Shared interface {
	// Take spends one request of tenant's budget of perSec a second with
	// bursts of burst: 0 when allowed, else how long until it would be.
	// An error means the state could not be reached; the caller falls
	// back to its own limiter.
	Take(ctx context.Context, tenant string, perSec float64, burst int) (time.Duration, error)
}

// gcra is the generic cell rate algorithm over one Redis key per tenant:
// the key holds the theoretical arrival time (TAT, microseconds on
// Redis's clock). A request is allowed when TAT - (burst-1)·interval is not
// after now; it then moves TAT one interval past max(TAT, now). The key
// expires once it no longer limits anything. Redis's own clock is used so
// replicas with skewed clocks agree.
var gcra = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local allow_at = tat - (burst - 1) * interval
if allow_at > now then return allow_at - now end
local new_tat = tat + interval
redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PX', math.ceil((new_tat - now) / 1000) + 1)
return 0
`)

// RedisRate is a Shared rate limiter on Redis.
type RedisRate struct {
	rdb    goredis.Scripter
	prefix string
}

// NewRedisRate returns a Shared limiter keeping each tenant's state under
// prefix+tenant in rdb.
func NewRedisRate(rdb goredis.Scripter, prefix string) *RedisRate {
	return &RedisRate{rdb: rdb, prefix: prefix}
}

// sharedTimeout bounds one Take: a Redis that does not answer must not
// hold requests up; the caller falls back to its own limiter.
const sharedTimeout = 250 * time.Millisecond

// Take spends one request of tenant's budget; see Shared.
func (r *RedisRate) Take(ctx context.Context, tenant string, perSec float64, burst int) (time.Duration, error) {
	if perSec <= 0 {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(ctx, sharedTimeout)
	defer cancel()
	interval := int64(math.Max(1, math.Round(1e6/perSec)))
	us, err := gcra.Run(ctx, r.rdb, []string{r.prefix + tenant}, interval, max(1, burst)).Int64()
	if err != nil {
		return 0, fmt.Errorf("limit: the shared rate in Redis: %w", err)
	}
	return time.Duration(us) * time.Microsecond, nil
}
