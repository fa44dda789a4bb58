package redis

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/checkpointtest"
	"github.com/trellis-agents/trellis/internal/testenv"
)

// This file gives the tests (in this package and in redis_test) what they
// need beyond the public API. It is compiled only into the test binary.

// Corrupt implements checkpointtest.Corrupter: it damages what is stored
// for the checkpoint ref names as d says, leaving the checksums as they
// are.
func (s *Saver) Corrupt(ref checkpoint.Ref, d checkpointtest.Damage) error {
	ctx := context.Background()
	k := s.keys(ref.ThreadID, ref.Namespace)
	flip := func(key, field string) error {
		val, err := s.client.HGet(ctx, key, field).Result()
		if err != nil {
			return fmt.Errorf("corrupt %s: read %s %q: %w", ref, key, field, err)
		}
		return s.client.HSet(ctx, key, field, checkpointtest.Flip([]byte(val))).Err()
	}
	switch d.Kind {
	case checkpointtest.DamageEmptyObject:
		return s.client.HSet(ctx, k.cpPrefix+ref.ID, fieldCheckpoint, "{}").Err()
	case checkpointtest.DamageNull:
		return s.client.HSet(ctx, k.cpPrefix+ref.ID, fieldCheckpoint, "null").Err()
	case checkpointtest.DamageFlipCheckpoint:
		return flip(k.cpPrefix+ref.ID, fieldCheckpoint)
	case checkpointtest.DamageFlipBlob:
		return flip(k.blobs, blobField(d.Key, d.Version))
	case checkpointtest.DamageFlipWrite:
		return flip(k.cpPrefix+ref.ID, writesPrefix+d.TaskID)
	}
	return fmt.Errorf("unknown damage %q", d.Kind)
}

// CorruptField overwrites one field of the hash of the checkpoint ref names
// ("cp", "md", "v", "t" or "w:"+task) and removes its checksum, as in a
// record written before checksums, so that decoding meets the damage.
func (s *Saver) CorruptField(ref checkpoint.Ref, field, value string) error {
	k := s.keys(ref.ThreadID, ref.Namespace)
	ctx := context.Background()
	if err := s.client.HDel(ctx, k.cpPrefix+ref.ID, fieldSum).Err(); err != nil {
		return err
	}
	return s.client.HSet(ctx, k.cpPrefix+ref.ID, field, value).Err()
}

// MakeLegacy rewrites what is stored for the checkpoint ref names, its blob
// key@version and its writes of task as the versions before checksums
// stored them.
func (s *Saver) MakeLegacy(ref checkpoint.Ref, key string, version uint64, task string) error {
	ctx := context.Background()
	k := s.keys(ref.ThreadID, ref.Namespace)
	if err := s.client.HDel(ctx, k.cpPrefix+ref.ID, fieldSum).Err(); err != nil {
		return err
	}
	val, err := s.client.HGet(ctx, k.blobs, blobField(key, version)).Result()
	if err != nil {
		return err
	}
	head, data, _ := strings.Cut(val, "\n")
	head, _, _ = strings.Cut(head, ",")
	if err := s.client.HSet(ctx, k.blobs, blobField(key, version), head+"\n"+data).Err(); err != nil {
		return err
	}
	ws, err := s.client.HGet(ctx, k.cpPrefix+ref.ID, writesPrefix+task).Result()
	if err != nil {
		return err
	}
	_, js, _ := strings.Cut(ws, "\n")
	return s.client.HSet(ctx, k.cpPrefix+ref.ID, writesPrefix+task, js).Err()
}

// DeleteRecord deletes the hash of the checkpoint ref names, leaving its ID
// listed.
func (s *Saver) DeleteRecord(ref checkpoint.Ref) error {
	k := s.keys(ref.ThreadID, ref.Namespace)
	return s.client.Del(context.Background(), k.cpPrefix+ref.ID).Err()
}

// CorruptBlob overwrites the stored value of one blob.
func (s *Saver) CorruptBlob(thread, namespace, key string, version uint64, value string) error {
	k := s.keys(thread, namespace)
	return s.client.HSet(context.Background(), k.blobs, blobField(key, version), value).Err()
}

// SetClock replaces the clock Prune's OlderThan is measured against.
func (s *Saver) SetClock(now func() time.Time) { s.now = now }

// ThreadKeyPattern returns a SCAN pattern matching every key of a thread.
func (s *Saver) ThreadKeyPattern(thread string) string {
	return GlobEscape(s.threadBase(thread)) + "*"
}

// IndexKey returns the thread index's key.
func (s *Saver) IndexKey() string { return s.indexKey() }

// Connect returns a client for the test Redis, closed when t ends. It skips
// t when TRELLIS_TEST_REDIS_ADDR is unset, and reports an unreachable server
// through testenv (a failure under TRELLIS_REQUIRE_SERVICES=1).
func Connect(t *testing.T) *goredis.Client {
	t.Helper()
	addr := testenv.RedisAddr(t)
	// Few dial retries: a dead server is reported at once, not per retry.
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

// NewPrefix returns a key prefix no other test or test run uses, and
// registers a cleanup, run before the client closes, that deletes the keys
// under it and nothing else.
func NewPrefix(t *testing.T, c goredis.UniversalClient) string {
	t.Helper()
	prefix := "trellis_test:" + testenv.Name(t, strings.ToLower(rand.Text()[:10]), 90) + ":"
	t.Cleanup(func() {
		if _, err := DeletePrefix(context.Background(), c, prefix); err != nil {
			t.Errorf("delete the test's keys under %q: %v", prefix, err)
		}
	})
	return prefix
}

// DeletePrefix deletes the keys whose names start with prefix, found with
// SCAN MATCH (on every master of a cluster), and returns how many it
// deleted.
func DeletePrefix(ctx context.Context, c goredis.UniversalClient, prefix string) (int, error) {
	keys, err := ScanPrefix(ctx, c, GlobEscape(prefix)+"*")
	if err != nil {
		return 0, err
	}
	pipe := c.Pipeline()
	for _, k := range keys { // one key per command: keys may be in different slots
		pipe.Unlink(ctx, k)
	}
	if len(keys) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

// ScanPrefix returns the keys matching a SCAN pattern, from every master
// when c is a cluster client.
func ScanPrefix(ctx context.Context, c goredis.UniversalClient, pattern string) ([]string, error) {
	scan := func(ctx context.Context, c goredis.Cmdable) ([]string, error) {
		var keys []string
		it := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for it.Next(ctx) {
			keys = append(keys, it.Val())
		}
		return keys, it.Err()
	}
	cc, ok := c.(*goredis.ClusterClient)
	if !ok {
		return scan(ctx, c)
	}
	var mu sync.Mutex
	var keys []string
	err := cc.ForEachMaster(ctx, func(ctx context.Context, node *goredis.Client) error {
		ks, err := scan(ctx, node)
		mu.Lock()
		keys = append(keys, ks...)
		mu.Unlock()
		return err
	})
	return keys, err
}

// GlobEscape escapes the characters SCAN MATCH treats specially.
func GlobEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\^`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
