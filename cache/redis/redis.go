// Package redis is a cache.Cache that keeps node results in Redis
// (standalone, Cluster or Ring) through go-redis, so that several processes
// share them.
//
// # Key layout
//
// An entry is one string key, P + "{" + N + "}:" + K, where P is the
// cache's prefix (default DefaultPrefix), N the namespace with '%', '{' and
// '}' percent-escaped, and K the key as given. The namespace is the Redis
// Cluster hash tag, so the entries of one namespace live in one slot (one
// node of a cluster) and different namespaces spread over the cluster.
// A TTL is set with PX (milliseconds; a TTL under 1 ms counts as 1 ms) and
// Redis deletes expired keys itself.
//
// # Clear
//
// Clear finds the keys to delete with SCAN MATCH (on every master of a
// Cluster, every shard of a Ring) and deletes them with UNLINK, page by
// page. It is not atomic: an entry set while Clear runs may survive it.
// Clear() with no namespace deletes every key under the prefix, so give
// each cache a prefix that is not the start of any other key's name.
package redis

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/trellis-agents/trellis/cache"
)

// DefaultPrefix is the key prefix of a Cache made without WithPrefix. It is
// not a prefix of checkpoint/redis's default ("trellis:"), nor that one of
// it, so the two can share a database.
const DefaultPrefix = "trellis-cache:"

// scanCount is the COUNT hint of each SCAN call of Clear.
const scanCount = 500

// Cache is a cache.Cache backed by Redis. It is safe for concurrent use.
// Make one with New.
type Cache struct {
	client goredis.UniversalClient
	prefix string
}

var _ cache.Cache = (*Cache)(nil)

// Option configures a Cache.
type Option func(*Cache)

// WithPrefix sets the prefix of every key the Cache uses (default
// DefaultPrefix). It must not be empty nor hold '{' or '}' (they would
// change the Cluster hash tag); New reports otherwise.
func WithPrefix(prefix string) Option {
	return func(c *Cache) { c.prefix = prefix }
}

// New returns a Cache storing entries through client. The Cache does not
// own the client: closing it is the caller's job. It fails when client is
// nil or the prefix is invalid.
func New(client goredis.UniversalClient, opts ...Option) (*Cache, error) {
	if client == nil {
		return nil, errors.New("cache/redis: the client is nil; pass a go-redis client (goredis.NewClient)")
	}
	c := &Cache{client: client, prefix: DefaultPrefix}
	for _, o := range opts {
		o(c)
	}
	switch {
	case c.prefix == "":
		return nil, errors.New("cache/redis: the key prefix is empty; Clear() would delete every key of the database; use a prefix such as " + DefaultPrefix + " instead")
	case strings.ContainsAny(c.prefix, "{}"):
		return nil, fmt.Errorf("cache/redis: the key prefix %q holds '{' or '}', which would change the Redis Cluster hash tag of every key; remove them", c.prefix)
	}
	return c, nil
}

// Prefix returns the prefix of the Cache's keys.
func (c *Cache) Prefix() string { return c.prefix }

var nsEscaper = strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D")

// nsBase returns the start of every key of namespace ns.
func (c *Cache) nsBase(ns string) string {
	return c.prefix + "{" + nsEscaper.Replace(ns) + "}:"
}

// Get returns the value stored under ns/key; ok is false when there is none
// or it has expired.
func (c *Cache) Get(ctx context.Context, ns, key string) ([]byte, bool, error) {
	if err := cache.CheckGet(ctx, ns, key); err != nil {
		return nil, false, err
	}
	v, err := c.client.Get(ctx, c.nsBase(ns)+key).Bytes()
	switch {
	case errors.Is(err, goredis.Nil):
		return nil, false, nil
	case err != nil:
		return nil, false, fmt.Errorf("cache/redis: get %s/%s: %w", ns, key, err)
	}
	if v == nil {
		v = []byte{}
	}
	return v, true, nil
}

// Set stores value under ns/key, replacing what was there and its TTL.
func (c *Cache) Set(ctx context.Context, ns, key string, value []byte, ttl time.Duration) error {
	if err := cache.CheckSet(ctx, ns, key, value, ttl); err != nil {
		return err
	}
	if value == nil {
		value = []byte{}
	}
	args := []any{"set", c.nsBase(ns) + key, value}
	if ttl > 0 {
		args = append(args, "px", max(1, (ttl+time.Millisecond-1)/time.Millisecond))
	}
	if err := c.client.Do(ctx, args...).Err(); err != nil {
		return fmt.Errorf("cache/redis: set %s/%s: %w", ns, key, err)
	}
	return nil
}

// Clear removes every entry of the given namespaces, or every key under the
// prefix when none is given. See the package doc for what it does not
// guarantee.
func (c *Cache) Clear(ctx context.Context, namespaces ...string) error {
	if err := cache.CheckClear(ctx, namespaces); err != nil {
		return err
	}
	if len(namespaces) == 0 {
		if err := c.deleteMatching(ctx, globEscape(c.prefix)+"*"); err != nil {
			return fmt.Errorf("cache/redis: clear every namespace: %w", err)
		}
		return nil
	}
	for _, ns := range namespaces {
		if err := c.deleteMatching(ctx, globEscape(c.nsBase(ns))+"*"); err != nil {
			return fmt.Errorf("cache/redis: clear namespace %q: %w", ns, err)
		}
	}
	return nil
}

// deleteMatching deletes the keys matching a SCAN pattern on every node
// that holds keys.
func (c *Cache) deleteMatching(ctx context.Context, pattern string) error {
	each := func(ctx context.Context, node *goredis.Client) error { return c.scanDelete(ctx, node, pattern) }
	switch cl := c.client.(type) {
	case *goredis.ClusterClient:
		return cl.ForEachMaster(ctx, each)
	case *goredis.Ring:
		return cl.ForEachShard(ctx, each)
	}
	return c.scanDelete(ctx, c.client, pattern)
}

// scanDelete scans node for pattern and unlinks what it finds, a page at a
// time, through the Cache's client (which routes each key to its slot).
func (c *Cache) scanDelete(ctx context.Context, node goredis.Cmdable, pattern string) error {
	var cursor uint64
	for {
		keys, next, err := node.Scan(ctx, cursor, pattern, scanCount).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			pipe := c.client.Pipeline()
			for _, k := range keys { // one key per command: keys may be in different slots
				pipe.Unlink(ctx, k)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// globEscape escapes the characters SCAN MATCH patterns treat specially.
func globEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[]\^-`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
