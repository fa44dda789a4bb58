// Package redis is a checkpoint.Saver that stores checkpoints in Redis
// (7.0 or later, standalone or Cluster) through go-redis.
//
// It follows the semantics of checkpoint.Memory exactly and passes the
// conformance suite in checkpoint/checkpointtest.
//
// # Key layout
//
// Every key starts with the Saver's prefix P (default "trellis:"). A
// thread's keys then hold the thread ID as a Redis Cluster hash tag, so all
// of a thread lands in one slot and one Lua script can change it
// atomically. In the thread ID '%', '{' and '}' are percent-escaped (T
// below); in a namespace '%' and ':' are (N below, "" for the root graph).
//
//	P{T}:ns          set   the thread's namespaces, as N
//	P{T}:ids:N       zset  the namespace's checkpoint IDs, all with score 0, so
//	                       they sort byte-wise: UUIDv7 IDs sort by time and the
//	                       latest checkpoint is the last member
//	P{T}:blobs:N     hash  the namespace's blobs, stored once per key and
//	                       version: field key+"\x00"+version, value a header
//	                       line ("F" or "D", the base version, "," and the
//	                       blob's checkpoint.BlobChecksum in 8 hex digits,
//	                       "\n") then the blob's JSON as given
//	P{T}:cp:N:ID     hash  one checkpoint: "cp" its JSON without ID, versions
//	                       and blobs; "md" the metadata JSON; "v" the versions
//	                       (length-prefixed keys, exact for Lua and Go); "t" the
//	                       creation time in a byte-sortable form, for Prune;
//	                       "s" the CRC-32C of cp, md, v and t in 8 hex digits;
//	                       "w:"+task ID, that task's pending writes: "C", the
//	                       CRC-32C of the JSON in 8 hex digits, "\n", then the
//	                       writes as JSON
//
// Records written before checksums (no "s" field, a blob header without
// ",", writes starting with "[") are read without the check.
//
// DeleteRun is one script over the thread's keys too: it reads each
// checkpoint's run ID from its metadata JSON (with the server's cjson).
//
//	Pthreads         set   every thread ID, for Prune and Size over all threads
//
// # Atomicity
//
// Put, PutWrites, DeleteThread and Prune are each one Lua script over one
// thread's keys (EVALSHA, falling back to EVAL when the server has not
// cached the script). Put's script reads the namespace's latest ID and
// compares it with ref.ID, checks that the new ID sorts after it and that
// no stored blob would change, then writes everything; on any failure it
// writes nothing. Get and each page of List are one read-only script that
// resolves the blob chains on the server (following each Delta's Base down
// to a Full blob), so a read is one round trip however long the chains are.
// CopyThread reads the source thread with one script and writes the copy
// with another that first checks the target is empty: each thread sees an
// atomic change, though on Cluster the two run on different nodes.
//
// The thread index Pthreads is the one key outside the threads' slots. Put
// adds the thread to it, and DeleteThread removes it, in the same round trip
// as their scripts: on a single Redis server inside one MULTI/EXEC, so the
// index always lists every thread that has keys. On Cluster (or Ring) the
// index lives in another slot and the two commands are only pipelined; a
// thread dropped from the index by a DeleteThread racing a Put on the same
// thread is added back by its next Put. An entry for a thread without
// checkpoints (left by a failed first Put) is harmless.
//
// Prune's OlderThan is measured against the client's clock.
package redis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/trellis-agents/trellis/checkpoint"
)

// DefaultPrefix is the key prefix of a Saver made without WithPrefix.
const DefaultPrefix = "trellis:"

// listPage is how many checkpoints one List round trip reads.
const listPage = 32

// Saver is a checkpoint.Saver backed by Redis. It is safe for concurrent
// use. Make one with New.
type Saver struct {
	client   goredis.UniversalClient
	prefix   string
	now      func() time.Time // clock for Prune's OlderThan
	maxBytes int              // size limit of one record, blob or write
}

var _ checkpoint.Saver = (*Saver)(nil)

// Option configures a Saver.
type Option func(*Saver)

// WithPrefix sets the prefix of every key the Saver uses (default
// DefaultPrefix). Savers with different prefixes share nothing; a prefix
// must not be the start of another Saver's prefix on the same database,
// or cleanups by prefix would see the other's keys. Keep '{' and '}' out of
// it: they would change the Redis Cluster hash tag of every key.
func WithPrefix(prefix string) Option {
	return func(s *Saver) { s.prefix = prefix }
}

// WithMaxBytes sets the Saver's size limit: the most bytes of one
// checkpoint record (its checkpoint, metadata and versions fields), of one
// blob's data and of one pending write's value that Put and PutWrites
// accept and that Get and List return; beyond it they fail with an error
// wrapping checkpoint.ErrTooLarge. The default is
// checkpoint.DefaultMaxBytes; n <= 0 keeps it. Data stored under a larger
// limit is refused on read, though it has been received by then.
func WithMaxBytes(n int) Option {
	return func(s *Saver) {
		if n > 0 {
			s.maxBytes = n
		}
	}
}

// New returns a Saver storing checkpoints through client. The Saver does not
// own the client: closing it is the caller's job.
func New(client goredis.UniversalClient, opts ...Option) *Saver {
	s := &Saver{client: client, prefix: DefaultPrefix, now: time.Now, maxBytes: checkpoint.DefaultMaxBytes}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Prefix returns the prefix of the Saver's keys.
func (s *Saver) Prefix() string { return s.prefix }

var errEmptyThread = errors.New("checkpoint/redis: thread ID is empty")

func notFound(ref checkpoint.Ref) error {
	return fmt.Errorf("%s: %w", ref, checkpoint.ErrNotFound)
}

// Get returns the checkpoint ref names, or the latest of ref's thread
// namespace when ref.ID is "", as checkpoint.Memory.Get does. It wraps
// checkpoint.ErrNotFound when there is none. A record that does not decode
// or a broken blob chain is an error naming the thread, namespace,
// checkpoint (and key) that does not wrap ErrNotFound.
func (s *Saver) Get(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Tuple, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ref.ThreadID == "" {
		return nil, errEmptyThread
	}
	p, err := s.read(ctx, ref, "get", ref.ID, 1)
	if err != nil {
		return nil, err
	}
	if len(p.tuples) == 0 {
		return nil, notFound(ref)
	}
	return p.tuple(ref.ThreadID, ref.Namespace, p.tuples[0], nil, s.maxBytes)
}

// read runs readScript; see there for mode and arg.
func (s *Saver) read(ctx context.Context, ref checkpoint.Ref, mode, arg string, count int) (page, error) {
	k := s.keys(ref.ThreadID, ref.Namespace)
	reply, err := readScript.Run(ctx, s.client, []string{k.ids, k.blobs}, k.cpPrefix, mode, arg, count).Result()
	if err != nil {
		return page{}, fmt.Errorf("checkpoint/redis: read %s: %w", ref, err)
	}
	p, err := parsePage(reply)
	if err != nil {
		return page{}, fmt.Errorf("checkpoint/redis: read %s: %w", ref, err)
	}
	return p, nil
}

// List yields the checkpoints of ref's thread namespace, newest first, each
// as Get would return it; ref.ID is ignored. A thread or namespace without
// checkpoints yields nothing; after an error List yields nothing more.
//
// List reads listPage checkpoints per round trip (fewer when a Limit without
// a Filter asks for fewer). Each page is a consistent snapshot; the loop
// body may call the Saver, including Put, and checkpoints put meanwhile are
// newer than those still to come, so they are not listed.
func (s *Saver) List(ctx context.Context, ref checkpoint.Ref, opts checkpoint.ListOptions) iter.Seq2[*checkpoint.Tuple, error] {
	return func(yield func(*checkpoint.Tuple, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		if ref.ThreadID == "" {
			yield(nil, errEmptyThread)
			return
		}
		if opts.Limit < 0 {
			yield(nil, fmt.Errorf("checkpoint/redis: list %s: negative limit %d", ref, opts.Limit))
			return
		}
		cursor, yielded := opts.Before, 0
		for {
			size := listPage
			if opts.Limit > 0 && len(opts.Filter) == 0 {
				size = min(size, opts.Limit-yielded)
			}
			p, err := s.read(ctx, ref, "list", cursor, size)
			if err != nil {
				yield(nil, err)
				return
			}
			for _, rt := range p.tuples {
				if err := ctx.Err(); err != nil {
					yield(nil, err)
					return
				}
				t, err := p.tuple(ref.ThreadID, ref.Namespace, rt, opts.Filter, s.maxBytes)
				if err != nil {
					yield(nil, err)
					return
				}
				if t == nil {
					continue
				}
				if !yield(t, nil) {
					return
				}
				yielded++
				if opts.Limit > 0 && yielded >= opts.Limit {
					return
				}
			}
			if len(p.tuples) < size {
				return
			}
			cursor = p.tuples[len(p.tuples)-1].id
		}
	}
}

// Put stores cp after the latest checkpoint of ref's thread namespace, with
// checkpoint.Memory.Put's rules: ref.ID must be that latest checkpoint's ID
// ("" when there is none), otherwise the error wraps checkpoint.ErrConflict;
// cp.ID must be new and sort after the latest; blobs must be well formed,
// and a blob already stored for its key and version must be identical.
// md.Parent is stored as given. When Put fails it has written nothing.
//
// Payloads and write values travel as JSON, so a Task.Payload that is not
// valid JSON is an error; blob data is stored as given. As with any network
// store, when ctx ends while the script is in flight Put returns the
// context's error though Redis may have stored the checkpoint.
func (s *Saver) Put(ctx context.Context, ref checkpoint.Ref, cp checkpoint.Checkpoint, md checkpoint.Metadata) (checkpoint.Ref, error) {
	if err := ctx.Err(); err != nil {
		return checkpoint.Ref{}, err
	}
	if ref.ThreadID == "" {
		return checkpoint.Ref{}, errEmptyThread
	}
	out := checkpoint.Ref{ThreadID: ref.ThreadID, Namespace: ref.Namespace, ID: cp.ID}
	if cp.ID == "" {
		return checkpoint.Ref{}, fmt.Errorf("checkpoint/redis: put in %s: checkpoint ID is empty; assign one with NewID", out)
	}
	blobs, err := checkpoint.CheckBlobs(cp.Blobs)
	if err != nil {
		return checkpoint.Ref{}, fmt.Errorf("checkpoint/redis: put %s: %w", out, err)
	}
	cpJSON, err := json.Marshal(storedCheckpoint{Next: cp.Next, Waiting: cp.Waiting, Deferred: cp.Deferred, Created: &cp.Created})
	if err != nil {
		return checkpoint.Ref{}, fmt.Errorf("checkpoint/redis: put %s: encode checkpoint: %w", out, err)
	}
	mdJSON, err := json.Marshal(md)
	if err != nil {
		return checkpoint.Ref{}, fmt.Errorf("checkpoint/redis: put %s: encode metadata: %w", out, err)
	}
	versions, created := encodeVersions(cp.Versions), timeKey(cp.Created)
	if err := checkpoint.CheckSize(out, "put", "the checkpoint record", len(cpJSON)+len(mdJSON)+len(versions), s.maxBytes); err != nil {
		return checkpoint.Ref{}, err
	}
	if err := checkpoint.CheckBlobSizes(out, "put", blobs, s.maxBytes); err != nil {
		return checkpoint.Ref{}, err
	}

	k := s.keys(ref.ThreadID, ref.Namespace)
	args := make([]any, 0, 8+2*len(blobs))
	args = append(args, k.escNS, ref.ID, cp.ID, cpJSON, mdJSON, versions, created,
		recordSum(string(cpJSON), string(mdJSON), versions, created))
	for _, b := range blobs {
		args = append(args, blobField(b.Key, b.Version), encodeBlob(b))
	}
	keys := []string{k.namespaces, k.ids, k.blobs, k.cpPrefix + cp.ID}
	reply, err := s.runIndexed(ctx, putScript, keys, args, true, func(c goredis.Cmdable) *goredis.IntCmd {
		return c.SAdd(ctx, s.indexKey(), ref.ThreadID)
	})
	if err != nil {
		return checkpoint.Ref{}, fmt.Errorf("checkpoint/redis: put %s: %w", out, err)
	}
	res, ok := reply.([]any)
	if !ok || len(res) == 0 {
		return checkpoint.Ref{}, fmt.Errorf("checkpoint/redis: put %s: %w", out, errReply)
	}
	status, _ := res[0].(string)
	var arg any
	if len(res) > 1 {
		arg = res[1]
	}
	latest, _ := arg.(string)
	switch status {
	case "ok":
		return out, nil
	case "conflict":
		if latest == "" {
			return checkpoint.Ref{}, fmt.Errorf("checkpoint/redis: put %s: the writer read checkpoint %q as the latest, but the namespace has none: %w", out, ref.ID, checkpoint.ErrConflict)
		}
		return checkpoint.Ref{}, fmt.Errorf("checkpoint/redis: put %s: the writer read checkpoint %q as the latest, but the latest is %s: %w", out, ref.ID, latest, checkpoint.ErrConflict)
	case "exists":
		return checkpoint.Ref{}, fmt.Errorf("checkpoint/redis: put %s: a checkpoint with this ID already exists", out)
	case "order":
		return checkpoint.Ref{}, fmt.Errorf("checkpoint/redis: put %s: the ID sorts before the latest checkpoint %s; IDs must grow (use NewID)", out, latest)
	case "blob":
		if i, ok := arg.(int64); ok && i >= 0 && i < int64(len(blobs)) {
			b := blobs[i]
			return checkpoint.Ref{}, fmt.Errorf("checkpoint/redis: put %s: key %q version %d is already stored with other content; blob versions must not be reused", out, b.Key, b.Version)
		}
	}
	return checkpoint.Ref{}, fmt.Errorf("checkpoint/redis: put %s: %w %v", out, errReply, res)
}

// runIndexed runs script sc in one round trip together with index, a
// command that updates the thread index (before the script when indexFirst,
// after it otherwise; it must be idempotent). On a single Redis server both
// run in one MULTI/EXEC transaction, so the index always agrees with the
// threads' keys; on Cluster or Ring the index lives in another slot and the
// two are only pipelined. When the server does not have the script cached
// both run again with EVAL. The script's result decides: when the index
// command alone failed it is retried once on its own, and its error is then
// dropped (see the package documentation on the thread index).
func (s *Saver) runIndexed(ctx context.Context, sc *goredis.Script, keys []string, args []any, indexFirst bool, index func(goredis.Cmdable) *goredis.IntCmd) (any, error) {
	for _, eval := range []bool{false, true} {
		var pipe goredis.Pipeliner
		if _, single := s.client.(*goredis.Client); single {
			pipe = s.client.TxPipeline()
		} else {
			pipe = s.client.Pipeline()
		}
		var idx *goredis.IntCmd
		if indexFirst {
			idx = index(pipe)
		}
		var cmd *goredis.Cmd
		if eval {
			cmd = sc.Eval(ctx, pipe, keys, args...)
		} else {
			cmd = sc.EvalSha(ctx, pipe, keys, args...)
		}
		if !indexFirst {
			idx = index(pipe)
		}
		_, _ = pipe.Exec(ctx)
		if !eval && isNoScript(cmd.Err()) {
			continue
		}
		res, err := cmd.Result()
		if err == nil && idx.Err() != nil && ctx.Err() == nil {
			_ = index(s.client).Err()
		}
		return res, err
	}
	panic("unreachable")
}

func isNoScript(err error) bool {
	return err != nil && (errors.Is(err, goredis.ErrNoScript) || goredis.HasErrorPrefix(err, "NOSCRIPT"))
}

// PutWrites replaces the pending writes of task taskID after the checkpoint
// ref names, with checkpoint.Memory.PutWrites' rules: ref.ID is required;
// the error wraps checkpoint.ErrNotFound when the checkpoint does not exist;
// each write's TaskID must be taskID or empty (it is then filled in), no two
// writes may share an Index, and an empty list removes the task's writes.
func (s *Saver) PutWrites(ctx context.Context, ref checkpoint.Ref, taskID string, writes []checkpoint.PendingWrite) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ref.ThreadID == "" {
		return errEmptyThread
	}
	if ref.ID == "" {
		return fmt.Errorf("checkpoint/redis: put writes in %s: checkpoint ID is empty", ref)
	}
	if taskID == "" {
		return fmt.Errorf("checkpoint/redis: put writes for %s: task ID is empty", ref)
	}
	ws, err := checkWrites(ref, taskID, writes)
	if err != nil {
		return err
	}
	for _, w := range ws {
		if err := checkpoint.CheckWriteSize(ref, "put writes", taskID, w, s.maxBytes); err != nil {
			return err
		}
	}
	value := ""
	if len(ws) > 0 {
		b, err := json.Marshal(ws)
		if err != nil {
			return fmt.Errorf("checkpoint/redis: put writes of task %q for %s: encode: %w", taskID, ref, err)
		}
		value = encodeWrites(b)
	}
	k := s.keys(ref.ThreadID, ref.Namespace)
	n, err := putWritesScript.Run(ctx, s.client, []string{k.ids, k.cpPrefix + ref.ID}, ref.ID, writesPrefix+taskID, value).Int64()
	if err != nil {
		return fmt.Errorf("checkpoint/redis: put writes of task %q for %s: %w", taskID, ref, err)
	}
	if n == 0 {
		return notFound(ref)
	}
	return nil
}
