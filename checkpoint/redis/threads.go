package redis

import (
	"context"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/internal/savercheck"
)

// scanBatch is how many thread IDs Prune and Size read from the thread index
// per round trip, and run scripts for per pipeline.
const scanBatch = 256

// DeleteThread removes the thread with all its namespaces, checkpoints,
// blobs and writes, in one script, and drops it from the thread index.
// Deleting a missing thread returns nil.
func (s *Saver) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if threadID == "" {
		return errEmptyThread
	}
	base := s.threadBase(threadID)
	_, err := s.runIndexed(ctx, deleteScript, []string{base + "ns"}, []any{base}, false, func(c goredis.Cmdable) *goredis.IntCmd {
		return c.SRem(ctx, s.indexKey(), threadID)
	})
	if err != nil {
		return fmt.Errorf("checkpoint/redis: delete %s: %w", checkpoint.Ref{ThreadID: threadID}, err)
	}
	return nil
}

// DeleteRun removes every checkpoint of thread threadID whose run ID is
// runID, in every namespace, with their pending writes and the blobs no
// remaining checkpoint needs, in one script; see checkpoint.Saver. Each
// namespace's latest checkpoint is then its newest remaining one (the IDs
// zset is the index), and a namespace left empty is removed. A thread left
// empty stays in the thread index, which is harmless (see the package
// documentation). It returns how many checkpoints it removed.
func (s *Saver) DeleteRun(ctx context.Context, threadID, runID string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if threadID == "" {
		return 0, errEmptyThread
	}
	if runID == "" {
		return 0, fmt.Errorf("checkpoint/redis: delete run in %s: run ID is empty", checkpoint.Ref{ThreadID: threadID})
	}
	base := s.threadBase(threadID)
	n, err := deleteRunScript.Run(ctx, s.client, []string{base + "ns"}, base, runID).Int64()
	if err != nil {
		return 0, fmt.Errorf("checkpoint/redis: delete run %q of %s: %w", runID, checkpoint.Ref{ThreadID: threadID}, err)
	}
	return int(n), nil
}

// CopyThread copies every namespace, checkpoint, blob and write of thread
// from into thread to. It returns an error wrapping checkpoint.ErrNotFound
// when from has no checkpoint, and an error when to already has one. The
// source is read by one script and the copy written by another, which
// writes nothing when to has checkpoints.
func (s *Saver) CopyThread(ctx context.Context, from, to string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if from == "" || to == "" {
		return errEmptyThread
	}
	src := s.threadBase(from)
	reply, err := dumpScript.Run(ctx, s.client, []string{src + "ns"}, src).Result()
	if err != nil {
		return fmt.Errorf("checkpoint/redis: copy thread %q to %q: read: %w", from, to, err)
	}
	items, ok := reply.([]any)
	if !ok {
		return fmt.Errorf("checkpoint/redis: copy thread %q to %q: %w", from, to, errReply)
	}
	if len(items) == 0 {
		return fmt.Errorf("checkpoint/redis: copy %s: %w", checkpoint.Ref{ThreadID: from}, checkpoint.ErrNotFound)
	}
	dst := s.threadBase(to)
	args, err := restoreArgs(dst, items)
	if err != nil {
		return fmt.Errorf("checkpoint/redis: copy thread %q to %q: %w", from, to, err)
	}
	res, err := s.runIndexed(ctx, restoreScript, []string{dst + "ns"}, args, true, func(c goredis.Cmdable) *goredis.IntCmd {
		return c.SAdd(ctx, s.indexKey(), to)
	})
	if err != nil {
		return fmt.Errorf("checkpoint/redis: copy thread %q to %q: write: %w", from, to, err)
	}
	if n, _ := res.(int64); n != 1 {
		return fmt.Errorf("checkpoint/redis: copy thread %q to %q: the target thread already has checkpoints", from, to)
	}
	return nil
}

// restoreArgs turns dumpScript's reply into restoreScript's ARGV.
func restoreArgs(dst string, items []any) ([]any, error) {
	args := []any{dst}
	for _, item := range items {
		parts, ok := item.([]any)
		if !ok || len(parts) < 3 {
			return nil, errReply
		}
		ns, ok1 := parts[0].(string)
		ids, ok2 := strs(parts[1])
		blobs, ok3 := strs(parts[2])
		if !ok1 || !ok2 || !ok3 || len(parts) != 3+len(ids) {
			return nil, errReply
		}
		args = append(args, ns, len(ids))
		for _, id := range ids {
			args = append(args, id)
		}
		args = append(args, len(blobs))
		for _, b := range blobs {
			args = append(args, b)
		}
		for _, p := range parts[3:] {
			fields, ok := strs(p)
			if !ok || len(fields)%2 != 0 {
				return nil, errReply
			}
			args = append(args, len(fields))
			for _, f := range fields {
				args = append(args, f)
			}
		}
	}
	return args, nil
}

// Prune removes, in each thread namespace (only opts.ThreadID's when set),
// the checkpoints beyond the newest opts.KeepLatest and those whose Created
// is more than opts.OlderThan before now, with checkpoint.Memory.Prune's
// rules: either limit removes a checkpoint, a zero Created counts as old,
// the latest checkpoint of a namespace stays, pending writes go with their
// checkpoint and blobs go when no kept checkpoint's chain needs them. With
// both limits 0 it removes nothing; a negative limit is an error.
//
// Each thread is pruned atomically by one script. Without a ThreadID,
// Prune walks the Saver's thread index; after an error it returns how many
// checkpoints it had removed and the error.
func (s *Saver) Prune(ctx context.Context, opts checkpoint.PruneOptions) (int, error) {
	if run, err := savercheck.Prune(ctx, "checkpoint/redis", opts.KeepLatest, opts.OlderThan); !run {
		return 0, err
	}
	cutoff := ""
	if opts.OlderThan > 0 {
		cutoff = timeKey(s.now().Add(-opts.OlderThan))
	}
	args := []any{opts.KeepLatest, cutoff}
	if opts.ThreadID != "" {
		n, err := s.sumEach(ctx, pruneScript, "prune", []string{opts.ThreadID}, args)
		return int(n), err
	}
	n, err := s.forEachThread(ctx, func(threads []string) (int64, error) {
		return s.sumEach(ctx, pruneScript, "prune", threads, args)
	})
	return int(n), err
}

// Size returns the memory in bytes that Redis reports (MEMORY USAGE,
// counting every element) for all of the Saver's keys: the thread index and
// every key of every thread in it. It runs one script per thread, pipelined.
func (s *Saver) Size(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	total, err := s.client.MemoryUsage(ctx, s.indexKey(), 0).Result()
	if err == goredis.Nil {
		total, err = 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("checkpoint/redis: size: %w", err)
	}
	n, err := s.forEachThread(ctx, func(threads []string) (int64, error) {
		return s.sumEach(ctx, sizeScript, "size", threads, nil)
	})
	return total + n, err
}

// forEachThread calls fn with batches of the thread index's members, each
// thread once, and sums what fn returns.
func (s *Saver) forEachThread(ctx context.Context, fn func(threads []string) (int64, error)) (int64, error) {
	seen := make(map[string]bool)
	var total int64
	var cursor uint64
	for {
		batch, next, err := s.client.SScan(ctx, s.indexKey(), cursor, "", scanBatch).Result()
		if err != nil {
			return total, fmt.Errorf("checkpoint/redis: scan the thread index: %w", err)
		}
		fresh := batch[:0]
		for _, th := range batch {
			if !seen[th] {
				seen[th] = true
				fresh = append(fresh, th)
			}
		}
		if len(fresh) > 0 {
			n, err := fn(fresh)
			total += n
			if err != nil {
				return total, err
			}
		}
		if next == 0 {
			return total, nil
		}
		cursor = next
	}
}

// sumEach runs sc once per thread (KEYS[1] the thread's namespaces set,
// ARGV the thread's key base then args) in one pipeline, and sums the
// integer replies. Scripts the server has not cached are run again with
// EVAL. After an error it still counts the other threads, and returns the
// first error.
func (s *Saver) sumEach(ctx context.Context, sc *goredis.Script, op string, threads []string, args []any) (int64, error) {
	call := func(c goredis.Scripter, eval bool, thread string) *goredis.Cmd {
		base := s.threadBase(thread)
		keys, argv := []string{base + "ns"}, append([]any{base}, args...)
		if eval {
			return sc.Eval(ctx, c, keys, argv...)
		}
		return sc.EvalSha(ctx, c, keys, argv...)
	}
	pipe := s.client.Pipeline()
	cmds := make([]*goredis.Cmd, len(threads))
	for i, th := range threads {
		cmds[i] = call(pipe, false, th)
	}
	_, _ = pipe.Exec(ctx)
	var total int64
	var first error
	for i, cmd := range cmds {
		if isNoScript(cmd.Err()) {
			cmd = call(s.client, true, threads[i])
		}
		n, err := cmd.Int64()
		if err != nil && first == nil {
			first = fmt.Errorf("checkpoint/redis: %s %s: %w", op, checkpoint.Ref{ThreadID: threads[i]}, err)
		}
		total += n
	}
	return total, first
}
