package redis_test

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/cache"
	"github.com/trellis-agents/trellis/cache/cachetest"
	"github.com/trellis-agents/trellis/cache/redis"
	"github.com/trellis-agents/trellis/internal/testenv"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// connect returns a client for the test Redis, closed when t ends, or
// skips t (fails under TRELLIS_REQUIRE_SERVICES=1) when there is none.
func connect(t *testing.T) *goredis.Client {
	t.Helper()
	addr := testenv.RedisAddr(t)
	c := goredis.NewClient(&goredis.Options{Addr: addr, DialerRetries: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		_ = c.Close()
		testenv.Unreachable(t, "Redis at "+addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// newCache returns a Cache with a prefix no other test uses, whose keys are
// deleted (by Clear) when t ends.
func newCache(t *testing.T, c *goredis.Client) *redis.Cache {
	t.Helper()
	prefix := "trellis_test_cache:" + testenv.Name(t, strings.ToLower(rand.Text()[:10]), 90) + ":"
	rc, err := redis.New(c, redis.WithPrefix(prefix))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rc.Clear(context.Background()); err != nil {
			t.Errorf("delete the test's keys: %v", err)
		}
	})
	return rc
}

func TestConformance(t *testing.T) {
	c := connect(t)
	cachetest.Run(t, func(t *testing.T) cache.Cache { return newCache(t, c) })
}

func keys(t *testing.T, c *goredis.Client, pattern string) []string {
	t.Helper()
	var out []string
	it := c.Scan(context.Background(), 0, pattern, 1000).Iterator()
	for it.Next(context.Background()) {
		out = append(out, it.Val())
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestKeyLayoutAndClearLeaveOtherPrefixesAlone(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	a, b := newCache(t, c), newCache(t, c)
	if err := a.Set(ctx, "node{1}%", "k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Set(ctx, "node", "k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	// The namespace, escaped, is the key's hash tag.
	got := keys(t, c, a.Prefix()+"*")
	if len(got) != 1 || got[0] != a.Prefix()+"{node%7B1%7D%25}:k" {
		t.Fatalf("keys under a's prefix = %q, want the one entry with its namespace as hash tag", got)
	}
	if err := a.Clear(ctx); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, c, a.Prefix()+"*"); len(got) != 0 {
		t.Fatalf("Clear() left %q", got)
	}
	if _, ok, err := b.Get(ctx, "node", "k"); err != nil || !ok {
		t.Fatalf("another prefix's entry after Clear() = %v, %v; want it kept", ok, err)
	}
}

func TestTTLIsSetInMilliseconds(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	rc := newCache(t, c)
	if err := rc.Set(ctx, "node", "k", []byte("v"), 90*time.Second+500*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ttl, err := c.PTTL(ctx, rc.Prefix()+"{node}:k").Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= 90*time.Second || ttl > 90*time.Second+500*time.Millisecond {
		t.Fatalf("PTTL = %v, want just under 90.5s", ttl)
	}
	if err := rc.Set(ctx, "node", "k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if ttl, _ := c.PTTL(ctx, rc.Prefix()+"{node}:k").Result(); ttl != -1 {
		t.Fatalf("PTTL after a replace with ttl 0 = %v, want -1 (no expiry)", ttl)
	}
}

func TestClearManyKeys(t *testing.T) {
	ctx := context.Background()
	c := connect(t)
	rc := newCache(t, c)
	// More keys than one SCAN page.
	pipe := c.Pipeline()
	for i := range 1500 {
		pipe.Set(ctx, rc.Prefix()+"{big}:"+string(rune('a'+i%26))+strings.Repeat("x", i/26), "v", 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rc.Set(ctx, "small", "k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if err := rc.Clear(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	if got := keys(t, c, rc.Prefix()+"{big}:*"); len(got) != 0 {
		t.Fatalf("Clear(big) left %d keys", len(got))
	}
	if _, ok, _ := rc.Get(ctx, "small", "k"); !ok {
		t.Fatal("Clear(big) removed another namespace")
	}
}

func TestNewRefusesBadConfiguration(t *testing.T) {
	if _, err := redis.New(nil); err == nil || !strings.Contains(err.Error(), "client is nil") {
		t.Errorf("New(nil) = %v, want an error about the nil client", err)
	}
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for _, p := range []string{"", "a{b", "a}"} {
		if _, err := redis.New(c, redis.WithPrefix(p)); err == nil || !strings.Contains(err.Error(), "prefix") {
			t.Errorf("New with prefix %q = %v, want an error about the prefix", p, err)
		}
	}
}
