package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/checkpoint"
)

// listPageSize is how many checkpoints List reads per transaction. List
// holds no connection while its caller's loop body runs.
const listPageSize = 64

// Get returns the checkpoint ref names, or the latest of ref's thread
// namespace when ref.ID is "", as checkpoint.Memory.Get does: the returned
// Checkpoint.Blobs holds, for each key of Versions in sorted key order, the
// chain from the last Full blob up to the version in force, oldest first.
// It wraps checkpoint.ErrNotFound when there is no such checkpoint. A
// missing blob, or a stored row that cannot be decoded, is an error naming
// the thread, namespace and checkpoint (and the key) that does not wrap
// ErrNotFound.
//
// Get reads in one repeatable-read transaction: the checkpoint row, then its
// blob chains (one recursive query) and its writes in one batch.
func (s *Saver) Get(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Tuple, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ref.ThreadID == "" {
		return nil, errEmptyThread
	}
	var tup *checkpoint.Tuple
	err := s.inTx(ctx, readOnly, func(tx pgx.Tx) error {
		sql, args := selectCheckpoints+` AND id = $3`, []any{ref.ThreadID, ref.Namespace, ref.ID}
		if ref.ID == "" {
			sql, args = selectCheckpoints+` ORDER BY id DESC LIMIT 1`, args[:2]
		}
		rows, err := queryCheckpoints(ctx, tx, sql, args...)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			return notFound(ref)
		}
		tuples, err := load(ctx, tx, ref, rows, s.maxBytes)
		if err != nil {
			return err
		}
		tup = tuples[0]
		return nil
	})
	if err != nil {
		return nil, readError("get", ref, err)
	}
	return tup, nil
}

// List yields the checkpoints of ref's thread namespace, newest first, each
// as Get would return it, as checkpoint.Memory.List does. ref.ID is ignored.
// A thread or namespace with no checkpoints yields nothing. After an error
// List yields nothing more.
//
// List reads a page of checkpoints at a time, each page in one transaction,
// and holds no connection while the loop body runs, which may call the
// Saver. Checkpoints put while the loop runs are not yielded (they sort
// after the ones listed); checkpoints pruned or deleted meanwhile may still
// be.
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
			yield(nil, fmt.Errorf("checkpoint: list %s: negative limit %d", ref, opts.Limit))
			return
		}
		ref := checkpoint.Ref{ThreadID: ref.ThreadID, Namespace: ref.Namespace}
		upper := opts.Before // IDs listed so far are all >= upper
		for remaining := opts.Limit; ; {
			n := listPageSize
			if opts.Limit > 0 {
				n = min(n, remaining)
			}
			tuples, read, err := s.listPage(ctx, ref, opts.Filter, upper, n)
			for _, t := range tuples {
				if err := ctx.Err(); err != nil {
					yield(nil, err)
					return
				}
				if !yield(t, nil) {
					return
				}
			}
			if err != nil {
				yield(nil, err)
				return
			}
			remaining -= len(read)
			if len(read) < n || (opts.Limit > 0 && remaining == 0) {
				return
			}
			upper = read[len(read)-1]
		}
	}
}

// listPage reads up to n checkpoints of ref's namespace with IDs below
// upper ("" for no bound) matching filter, newest first. It returns the
// tuples before the first error, the IDs of every row it read, and that
// error.
func (s *Saver) listPage(ctx context.Context, ref checkpoint.Ref, filter map[string]string, upper string, n int) (tuples []*checkpoint.Tuple, read []string, err error) {
	var sql strings.Builder
	sql.WriteString(selectCheckpoints)
	args := []any{ref.ThreadID, ref.Namespace}
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if upper != "" {
		sql.WriteString(" AND id < " + arg(upper))
	}
	for _, k := range slices.Sorted(maps.Keys(filter)) {
		// The same fields as checkpoint.Metadata.Field, in its order.
		switch k {
		case "source", "parent", "run_id":
			sql.WriteString(" AND " + k + " = " + arg(filter[k]))
		case "step":
			sql.WriteString(" AND step::text = " + arg(filter[k]))
		default:
			sql.WriteString(" AND metadata->'extra'->>(" + arg(k) + "::text) = " + arg(filter[k]))
		}
	}
	sql.WriteString(" ORDER BY id DESC LIMIT " + arg(n))

	var loadErr error
	err = s.inTx(ctx, readOnly, func(tx pgx.Tx) error {
		rows, err := queryCheckpoints(ctx, tx, sql.String(), args...)
		if err != nil {
			return err
		}
		for _, r := range rows {
			read = append(read, r.id)
		}
		tuples, loadErr = load(ctx, tx, ref, rows, s.maxBytes)
		var bad *rowError
		if loadErr != nil && !errors.As(loadErr, &bad) {
			return loadErr // a database error: roll back
		}
		return nil // the tuples before a bad row are still yielded
	})
	if err != nil {
		return nil, read, readError("list", ref, err)
	}
	if loadErr != nil {
		return tuples, read, readError("list", ref, loadErr)
	}
	return tuples, read, nil
}

// readError wraps a database error of Get or List with the operation and
// reference; errors the Saver built itself already say all that.
func readError(op string, ref checkpoint.Ref, err error) error {
	var own *rowError
	switch {
	case errors.As(err, &own):
		return own.err
	case errors.Is(err, checkpoint.ErrNotFound):
		return err
	}
	return fmt.Errorf("checkpoint: %s %s: %w", op, ref, err)
}

// rowError is a stored row that does not decode or a broken blob chain,
// already naming its thread, namespace and checkpoint.
type rowError struct{ err error }

func (e *rowError) Error() string { return e.err.Error() }

// selectCheckpoints starts the queries of checkpoint rows of namespace $2 of
// thread $1.
// The server compares each row's checksum (NULL for rows written before
// checksums) with the row, so that only the verdict travels.
const selectCheckpoints = `SELECT id, metadata, checkpoint, (sum IS NULL OR sum = ` + rowSum + `) FROM checkpoints WHERE thread = $1 AND ns = $2`

// cpRow is a checkpoint row as read, not yet decoded.
type cpRow struct {
	id         string
	metadata   []byte
	checkpoint []byte
	sumOK      bool
}

func queryCheckpoints(ctx context.Context, tx pgx.Tx, sql string, args ...any) ([]cpRow, error) {
	rows, _ := tx.Query(ctx, sql, args...)
	var out []cpRow
	var r cpRow
	_, err := pgx.ForEachRow(rows, []any{&r.id, &r.metadata, &r.checkpoint, &r.sumOK}, func() error {
		out = append(out, r)
		return nil
	})
	return out, err
}

// decoded is a checkpoint row decoded.
type decoded struct {
	cp checkpoint.Checkpoint
	md checkpoint.Metadata
}

// decode decodes a checkpoint row of ref's namespace, checking its size
// and checksum first.
func decode(ref checkpoint.Ref, r cpRow, limit int) (decoded, error) {
	ref.ID = r.id
	var d decoded
	// jsonb renders JSON with a space after each ':' and ',', so a row
	// comes back longer than it was put, but never twice as long.
	if err := checkpoint.CheckSize(ref, "read", "the checkpoint row (as jsonb renders it, allowed twice the limit)", len(r.checkpoint)+len(r.metadata), 2*limit); err != nil {
		return decoded{}, &rowError{err}
	}
	if !r.sumOK {
		return decoded{}, &rowError{checkpoint.Corruptf(ref, "the checkpoint row fails its checksum")}
	}
	if err := json.Unmarshal(r.checkpoint, &d.cp); err != nil {
		return decoded{}, &rowError{checkpoint.Corruptf(ref, "the stored checkpoint does not decode: %v", err)}
	}
	if d.cp.ID != r.id {
		return decoded{}, &rowError{checkpoint.Corruptf(ref, "the stored checkpoint names ID %q", d.cp.ID)}
	}
	if err := json.Unmarshal(r.metadata, &d.md); err != nil {
		return decoded{}, &rowError{checkpoint.Corruptf(ref, "the stored metadata does not decode: %v", err)}
	}
	return d, nil
}

// load builds the tuples of rows (checkpoints of ref's namespace) with their
// blob chains and writes, reading both in one batch. It returns the tuples
// before the first row that fails, and that row's error.
func load(ctx context.Context, tx pgx.Tx, ref checkpoint.Ref, rows []cpRow, limit int) ([]*checkpoint.Tuple, error) {
	var rowErr error
	ds := make([]decoded, 0, len(rows))
	for _, r := range rows {
		d, err := decode(ref, r, limit)
		if err != nil {
			rowErr = err
			break
		}
		ds = append(ds, d)
	}
	if len(ds) == 0 {
		return nil, rowErr
	}

	var keys []string
	var versions []int64
	need := make(map[blobKey]bool)
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.cp.ID
		for k, v := range d.cp.Versions {
			if id := (blobKey{k, v}); !need[id] {
				need[id] = true
				keys = append(keys, k)
				versions = append(versions, int64(v))
			}
		}
	}
	b := &pgx.Batch{}
	var blobs map[blobKey]storedBlob
	if len(keys) > 0 {
		// Each chain is followed from the version in force through the
		// bases of its deltas; UNION stops at blobs already found, so a
		// stored cycle cannot loop. Go checks the chains.
		b.Queue(`WITH RECURSIVE chain (key, version, kind, base) AS (
	SELECT b.key, b.version, b.kind, b.base
	FROM checkpoint_blobs b JOIN unnest($3::text[], $4::bigint[]) AS u(key, version) ON b.key = u.key AND b.version = u.version
	WHERE b.thread = $1 AND b.ns = $2
UNION
	SELECT b.key, b.version, b.kind, b.base
	FROM chain c JOIN checkpoint_blobs b ON b.thread = $1 AND b.ns = $2 AND b.key = c.key AND b.version = c.base
	WHERE c.kind = 2
)
SELECT b.key, b.version, b.kind, b.base, b.data, b.sum
FROM chain c JOIN checkpoint_blobs b ON b.thread = $1 AND b.ns = $2 AND b.key = c.key AND b.version = c.version`,
			ref.ThreadID, ref.Namespace, keys, versions).Query(func(rows pgx.Rows) error {
			var err error
			blobs, err = scanBlobs(rows)
			return err
		})
	}
	writes := make(map[string][]checkpoint.PendingWrite)
	badWrites := make(map[string]error)
	b.Queue(`SELECT checkpoint_id, task_id, idx, key, value, sum FROM checkpoint_writes
WHERE thread = $1 AND ns = $2 AND checkpoint_id = ANY($3)
ORDER BY checkpoint_id, task_id, idx`, ref.ThreadID, ref.Namespace, ids).Query(func(rows pgx.Rows) error {
		var id string
		var idx int64
		var sum *int64
		var w checkpoint.PendingWrite
		_, err := pgx.ForEachRow(rows, []any{&id, &w.TaskID, &idx, &w.Key, &w.Value, &sum}, func() error {
			w.Index = int(idx)
			defer func() { sum = nil }() // pgx would scan the next row into the same int64
			if badWrites[id] != nil {
				return nil
			}
			wref := checkpoint.Ref{ThreadID: ref.ThreadID, Namespace: ref.Namespace, ID: id}
			if err := checkpoint.CheckWriteSize(wref, "read", w.TaskID, w, limit); err != nil {
				badWrites[id] = err
				return nil
			}
			if sum != nil && uint32(*sum) != checkpoint.WriteChecksum(w) {
				badWrites[id] = checkpoint.Corruptf(wref, "pending write %d of task %q fails its checksum", w.Index, w.TaskID)
				return nil
			}
			writes[id] = append(writes[id], w)
			return nil
		})
		return err
	})
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}

	out := make([]*checkpoint.Tuple, 0, len(ds))
	for _, d := range ds {
		tref := checkpoint.Ref{ThreadID: ref.ThreadID, Namespace: ref.Namespace, ID: d.cp.ID}
		if err := badWrites[d.cp.ID]; err != nil {
			return out, &rowError{err}
		}
		for _, key := range slices.Sorted(maps.Keys(d.cp.Versions)) {
			chain, err := chainOf(blobs, key, d.cp.Versions[key], limit)
			switch {
			case errors.Is(err, checkpoint.ErrTooLarge):
				return out, &rowError{fmt.Errorf("checkpoint: read %s: key %q: %w", tref, key, err)}
			case err != nil:
				return out, &rowError{fmt.Errorf("checkpoint: %s: key %q: %w", tref, key, err)}
			}
			d.cp.Blobs = append(d.cp.Blobs, chain...)
		}
		t := &checkpoint.Tuple{Ref: tref, Checkpoint: d.cp, Metadata: d.md, Writes: writes[d.cp.ID]}
		if err := t.Validate(); err != nil {
			return out, &rowError{err}
		}
		out = append(out, t)
	}
	return out, rowErr
}

// chainOf returns the blobs that rebuild key at version v, oldest (the Full
// blob) first, with checkpoint.Memory's errors. Blobs shared by several
// chains are copied, so that no two tuples share memory.
func chainOf(blobs map[blobKey]storedBlob, key string, v uint64, limit int) ([]checkpoint.Blob, error) {
	var chain []checkpoint.Blob
	for {
		b, ok := blobs[blobKey{key, v}]
		if !ok {
			if len(chain) == 0 {
				return nil, fmt.Errorf("no blob is stored for version %d", v)
			}
			return nil, fmt.Errorf("delta version %d is based on version %d, which is not stored; the chain does not reach a full blob", chain[len(chain)-1].Version, v)
		}
		if len(b.Data) > limit {
			return nil, fmt.Errorf("blob version %d has %d bytes, more than the limit of %d bytes: %w", v, len(b.Data), limit, checkpoint.ErrTooLarge)
		}
		if b.sum != nil && uint32(*b.sum) != checkpoint.BlobChecksum(b.Blob) {
			return nil, fmt.Errorf("blob version %d fails its checksum: %w", v, checkpoint.ErrCorrupt)
		}
		b.Data = slices.Clone(b.Data)
		chain = append(chain, b.Blob)
		if b.Kind == checkpoint.Full {
			break
		}
		if b.Kind != checkpoint.Delta || b.Base >= b.Version {
			return nil, fmt.Errorf("blob version %d is a %s blob with base %d, which no Put stores: %w", b.Version, b.Kind, b.Base, checkpoint.ErrCorrupt)
		}
		v = b.Base
	}
	slices.Reverse(chain)
	return chain, nil
}

// storedBlob is a blob as read, with its checksum (nil when written before
// checksums).
type storedBlob struct {
	checkpoint.Blob
	sum *int64
}

// scanBlobs reads rows of (key, version, kind, base, data, sum) into a map.
func scanBlobs(rows pgx.Rows) (map[blobKey]storedBlob, error) {
	out := make(map[blobKey]storedBlob)
	var b checkpoint.Blob
	var version, base int64
	var kind int16
	var sum *int64
	_, err := pgx.ForEachRow(rows, []any{&b.Key, &version, &kind, &base, &b.Data, &sum}, func() error {
		b.Version, b.Kind, b.Base = uint64(version), checkpoint.BlobKind(kind), uint64(base)
		sb := storedBlob{Blob: b}
		if sum != nil {
			v := *sum
			sb.sum = &v
			sum = nil // pgx would scan the next row into the same int64
		}
		out[blobKey{b.Key, b.Version}] = sb
		return nil
	})
	return out, err
}
