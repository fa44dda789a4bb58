package bench

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/postgres"
	"github.com/trellis-agents/trellis/checkpoint/redis"
	"github.com/trellis-agents/trellis/internal/pgdb/pgdbtest"
	"github.com/trellis-agents/trellis/internal/testenv"
)

// serviceSavers are the backends that need a running service; each skips
// its sub-benchmark (or fails under TRELLIS_REQUIRE_SERVICES=1) when the
// service is not configured.
func serviceSavers() []saverKind {
	return []saverKind{
		{"postgres", func(b *testing.B) (checkpoint.Saver, func()) {
			dsn, schema := pgdbtest.Schema(b)
			s, err := postgres.Open(context.Background(), dsn, postgres.WithSchema(schema))
			if err != nil {
				b.Fatal(err)
			}
			return s, func() { s.Close() }
		}},
		{"redis", func(b *testing.B) (checkpoint.Saver, func()) {
			c := goredis.NewClient(&goredis.Options{Addr: testenv.RedisAddr(b)})
			if err := c.Ping(context.Background()).Err(); err != nil {
				c.Close()
				testenv.Unreachable(b, "Redis", err)
			}
			prefix := "trellis_bench:" + strings.ToLower(rand.Text()[:10]) + ":"
			return redis.New(c, redis.WithPrefix(prefix)), func() {
				ctx := context.Background()
				iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
				for iter.Next(ctx) {
					c.Del(ctx, iter.Val())
				}
				c.Close()
			}
		}},
	}
}
