package redis

import (
	"container/heap"
	"context"
	"fmt"
	"slices"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/trellis-agents/trellis/checkpoint"
)

var _ checkpoint.Exporter = (*Saver)(nil)

var namespaceUnescaper = strings.NewReplacer("%3A", ":", "%25", "%")

// Threads returns up to limit IDs of threads holding checkpoints, in
// ascending byte order, those after after; see checkpoint.Exporter.
//
// The thread index is a set, which Redis does not keep in order: each call
// scans the whole index (SSCAN, scanBatch members a round trip), keeping
// the limit smallest IDs after the cursor in a heap, so memory stays
// bounded by limit and the batch while the time of a call grows with the
// index. Index entries of threads without checkpoints (see the package
// documentation) are skipped.
func (s *Saver) Threads(ctx context.Context, after string, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("checkpoint/redis: list threads: limit %d is not positive", limit)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []string
	for len(out) < limit {
		cands, err := s.smallestAfter(ctx, after, limit-len(out))
		if err != nil {
			return nil, fmt.Errorf("checkpoint/redis: list threads after %q: %w", after, err)
		}
		if len(cands) == 0 {
			break
		}
		pipe := s.client.Pipeline()
		exists := make([]*goredis.IntCmd, len(cands))
		for i, th := range cands {
			exists[i] = pipe.Exists(ctx, s.threadBase(th)+"ns")
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("checkpoint/redis: list threads after %q: %w", after, err)
		}
		for i, th := range cands {
			if exists[i].Val() > 0 {
				out = append(out, th)
			}
		}
		after = cands[len(cands)-1]
	}
	return out, nil
}

// smallestAfter scans the thread index for the n smallest IDs greater
// than after, in ascending order.
func (s *Saver) smallestAfter(ctx context.Context, after string, n int) ([]string, error) {
	h := &maxHeap{}
	held := make(map[string]bool, n) // what h holds: SSCAN may repeat a member
	var cursor uint64
	for {
		batch, next, err := s.client.SScan(ctx, s.indexKey(), cursor, "", scanBatch).Result()
		if err != nil {
			return nil, err
		}
		for _, th := range batch {
			switch {
			case th <= after || held[th]:
			case h.Len() < n:
				heap.Push(h, th)
				held[th] = true
			case th < (*h)[0]:
				delete(held, (*h)[0])
				(*h)[0] = th
				held[th] = true
				heap.Fix(h, 0)
			}
		}
		if next == 0 {
			break
		}
		cursor = next
	}
	out := []string(*h)
	slices.Sort(out)
	return out, nil
}

// maxHeap keeps the largest string on top.
type maxHeap []string

func (h maxHeap) Len() int           { return len(h) }
func (h maxHeap) Less(i, j int) bool { return h[i] > h[j] }
func (h maxHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *maxHeap) Push(x any)        { *h = append(*h, x.(string)) }
func (h *maxHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Namespaces returns the namespaces of thread holding checkpoints, in
// ascending byte order; see checkpoint.Exporter.
func (s *Saver) Namespaces(ctx context.Context, thread string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if thread == "" {
		return nil, errEmptyThread
	}
	escaped, err := s.client.SMembers(ctx, s.threadBase(thread)+"ns").Result()
	if err != nil {
		return nil, fmt.Errorf("checkpoint/redis: list the namespaces of %s: %w", checkpoint.Ref{ThreadID: thread}, err)
	}
	pipe := s.client.Pipeline()
	counts := make([]*goredis.IntCmd, len(escaped))
	for i, ns := range escaped {
		counts[i] = pipe.ZCard(ctx, s.threadBase(thread)+"ids:"+ns)
	}
	if len(escaped) > 0 {
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, fmt.Errorf("checkpoint/redis: list the namespaces of %s: %w", checkpoint.Ref{ThreadID: thread}, err)
		}
	}
	var out []string
	for i, ns := range escaped {
		if counts[i].Val() > 0 {
			out = append(out, namespaceUnescaper.Replace(ns))
		}
	}
	slices.Sort(out)
	return out, nil
}

// CheckpointIDs returns up to limit checkpoint IDs of ref's thread
// namespace after ref.ID, oldest first; see checkpoint.Exporter. The IDs
// zset sorts byte-wise (every score is 0), so this is one ZRANGE BYLEX.
func (s *Saver) CheckpointIDs(ctx context.Context, ref checkpoint.Ref, limit int) ([]string, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("checkpoint/redis: list the checkpoints of %s: limit %d is not positive", ref, limit)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ref.ThreadID == "" {
		return nil, errEmptyThread
	}
	start := "-"
	if ref.ID != "" {
		start = "(" + ref.ID
	}
	ids, err := s.client.ZRangeByLex(ctx, s.keys(ref.ThreadID, ref.Namespace).ids, &goredis.ZRangeBy{Min: start, Max: "+", Count: int64(limit)}).Result()
	if err != nil {
		return nil, fmt.Errorf("checkpoint/redis: list the checkpoints of %s: %w", ref, err)
	}
	return ids, nil
}
