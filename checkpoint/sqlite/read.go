package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/trellis-agents/trellis/checkpoint"
)

// row is a checkpoints row as read, not yet decoded.
type row struct {
	id, parent, source, runID string
	step                      int
	extra, rec                []byte
	sum                       sql.NullInt64
}

func (r *row) scan(sc interface{ Scan(...any) error }) error {
	return sc.Scan(&r.id, &r.parent, &r.step, &r.source, &r.runID, &r.extra, &r.rec, &r.sum)
}

// decode turns the row into a Tuple without blobs and writes. A row over
// the size limit, failing its checksum or not decoding is an error naming
// the checkpoint (wrapping checkpoint.ErrCorrupt for damage).
func (r *row) decode(thread, ns string, limit int) (*checkpoint.Tuple, error) {
	ref := checkpoint.Ref{ThreadID: thread, Namespace: ns, ID: r.id}
	if err := checkpoint.CheckSize(ref, "read", "the checkpoint row", len(r.rec)+len(r.extra), limit); err != nil {
		return nil, err
	}
	if r.sum.Valid && uint32(r.sum.Int64) != rowSum(r.parent, r.step, r.source, r.runID, r.extra, r.rec) {
		return nil, checkpoint.Corruptf(ref, "the checkpoint row fails its checksum")
	}
	var rec record
	if err := json.Unmarshal(r.rec, &rec); err != nil {
		return nil, checkpoint.Corruptf(ref, "decode the stored checkpoint: %v", err)
	}
	if rec.Created == nil {
		return nil, checkpoint.Corruptf(ref, "the stored checkpoint has no creation time (it reads %.40q)", r.rec)
	}
	md := checkpoint.Metadata{Source: checkpoint.Source(r.source), Step: r.step, Parent: r.parent, RunID: r.runID}
	if r.extra != nil {
		if err := json.Unmarshal(r.extra, &md.Extra); err != nil {
			return nil, checkpoint.Corruptf(ref, "decode the stored metadata: %v", err)
		}
	}
	cp := checkpoint.Checkpoint{
		ID:       r.id,
		Versions: rec.Versions,
		Next:     rec.Next,
		Waiting:  rec.Waiting,
		Deferred: rec.Deferred,
		Created:  *rec.Created,
	}
	return &checkpoint.Tuple{Ref: ref, Checkpoint: cp, Metadata: md}, nil
}

// Get returns the checkpoint ref names, or the latest of ref's thread
// namespace when ref.ID is "", read in one snapshot. The returned
// Checkpoint.Blobs holds, for each key of Versions in sorted key order, the
// chain from the last Full blob up to the version in force, oldest first. A
// chain with a missing blob, or a row that does not decode, is an error
// naming the checkpoint; it does not wrap checkpoint.ErrNotFound.
func (s *Saver) Get(ctx context.Context, ref checkpoint.Ref) (*checkpoint.Tuple, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ref.ThreadID == "" {
		return nil, errEmptyThread
	}
	tx, err := s.db.Read.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: get %s: %w", ref, err)
	}
	defer tx.Rollback()
	var r row
	if ref.ID == "" {
		err = r.scan(tx.StmtContext(ctx, s.latestR).QueryRowContext(ctx, ref.ThreadID, ref.Namespace))
	} else {
		err = r.scan(tx.StmtContext(ctx, s.byID).QueryRowContext(ctx, ref.ThreadID, ref.Namespace, ref.ID))
	}
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(ref)
	}
	if err != nil {
		return nil, fmt.Errorf("checkpoint: get %s: %w", ref, err)
	}
	tuples, err := s.load(ctx, tx, ref.ThreadID, ref.Namespace, []row{r})
	if err != nil {
		return nil, err
	}
	return tuples[0], nil
}

// listPage is how many checkpoints List reads per read transaction.
const listPage = 64

// List yields the checkpoints of ref's thread namespace, newest first, each
// as Get would return it. ref.ID is ignored. A thread or namespace with no
// checkpoints yields nothing; a negative limit is an error. After an error
// List yields nothing more.
//
// List reads pages of checkpoints, each page in one snapshot, and holds no
// transaction while the loop body runs, so the body may call the Saver,
// including Put. Checkpoints added during the iteration are not yielded
// (they are newer than the ones already yielded); checkpoints pruned during
// it may be missing from later pages.
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
		q := newListQuery(ref, opts)
		before, n := opts.Before, 0
		for {
			size := listPage
			if opts.Limit > 0 && q.exact {
				size = min(size, opts.Limit-n)
			}
			tuples, last, more, err := s.listPage(ctx, ref, q, before, size)
			for _, t := range tuples {
				if err := ctx.Err(); err != nil {
					yield(nil, err)
					return
				}
				if !yield(t, nil) {
					return
				}
				if n++; opts.Limit > 0 && n >= opts.Limit {
					return
				}
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if !more {
				return
			}
			before = last
		}
	}
}

// listQuery is List's page query. Filters on the metadata columns are done
// by SQL, filters on Extra labels in Go (extra).
type listQuery struct {
	sql   string // with a trailing "id < ?" slot filled or not, see args
	args  []any
	extra map[string]string
	exact bool // SQL applies the whole filter: every row read is yielded
}

func newListQuery(ref checkpoint.Ref, opts checkpoint.ListOptions) listQuery {
	q := listQuery{args: []any{ref.ThreadID, ref.Namespace}, extra: map[string]string{}}
	var b strings.Builder
	b.WriteString(qSelectCheckpoint + ` WHERE thread = ? AND ns = ?`)
	for _, field := range slices.Sorted(maps.Keys(opts.Filter)) {
		want := opts.Filter[field]
		switch field {
		case "source", "parent", "run_id":
			b.WriteString(" AND " + field + " = ?")
			q.args = append(q.args, want)
		case "step":
			b.WriteString(" AND CAST(step AS TEXT) = ?")
			q.args = append(q.args, want)
		default:
			q.extra[field] = want
		}
	}
	q.sql = b.String()
	q.exact = len(q.extra) == 0
	return q
}

// listPage reads up to size checkpoint rows older than before ("" for no
// bound) and returns the tuples of the ones that match, the ID of the last
// row read and whether more rows may follow. On error it returns the tuples
// before the failing one.
func (s *Saver) listPage(ctx context.Context, ref checkpoint.Ref, q listQuery, before string, size int) (tuples []*checkpoint.Tuple, last string, more bool, err error) {
	tx, err := s.db.Read.BeginTx(ctx, nil)
	if err != nil {
		return nil, "", false, fmt.Errorf("checkpoint: list %s: %w", ref, err)
	}
	defer tx.Rollback()
	query, args := q.sql, slices.Clone(q.args)
	if before != "" {
		query += " AND id < ?"
		args = append(args, before)
	}
	query += " ORDER BY id DESC LIMIT ?"
	args = append(args, size)
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, "", false, fmt.Errorf("checkpoint: list %s: %w", ref, err)
	}
	var matched []row
	read := 0
	for rows.Next() {
		var r row
		if err := r.scan(rows); err != nil {
			rows.Close()
			return nil, "", false, fmt.Errorf("checkpoint: list %s: %w", ref, err)
		}
		read++
		last = r.id
		if len(q.extra) > 0 {
			var extra map[string]string
			if r.extra != nil {
				if err := json.Unmarshal(r.extra, &extra); err != nil {
					// Let decode report it, after the rows before it.
					matched = append(matched, r)
					break
				}
			}
			if !matchExtra(extra, q.extra) {
				continue
			}
		}
		matched = append(matched, r)
	}
	if err := rows.Close(); err != nil {
		return nil, "", false, fmt.Errorf("checkpoint: list %s: %w", ref, err)
	}
	if err := rows.Err(); err != nil {
		return nil, "", false, fmt.Errorf("checkpoint: list %s: %w", ref, err)
	}
	tuples, err = s.load(ctx, tx, ref.ThreadID, ref.Namespace, matched)
	return tuples, last, read == size, err
}

func matchExtra(extra, filter map[string]string) bool {
	for k, want := range filter {
		if got, ok := extra[k]; !ok || got != want {
			return false
		}
	}
	return true
}

// stored is a blob row as read.
type stored struct {
	kind checkpoint.BlobKind
	base uint64
	data []byte
	sum  sql.NullInt64
}

// load decodes rows (all of thread namespace ns, newest first or in any
// order) and completes them with their blob chains and pending writes, read
// with one query each through tx. On error it returns the tuples of the rows
// before the failing one, and the error.
func (s *Saver) load(ctx context.Context, tx *sql.Tx, thread, ns string, rows []row) ([]*checkpoint.Tuple, error) {
	var firstErr error
	tuples := make([]*checkpoint.Tuple, 0, len(rows))
	for _, r := range rows {
		t, err := r.decode(thread, ns, s.maxBytes)
		if err != nil {
			firstErr = err
			break
		}
		tuples = append(tuples, t)
	}
	if len(tuples) == 0 {
		return nil, firstErr
	}
	badWrites, err := s.loadWrites(ctx, tx, thread, ns, tuples)
	if err != nil {
		return nil, err
	}

	// One query for every chain of every tuple.
	need := []byte{'['}
	seen := make(map[blobID]bool)
	for _, t := range tuples {
		for key, v := range t.Checkpoint.Versions {
			if seen[blobID{key, v}] {
				continue
			}
			seen[blobID{key, v}] = true
			if len(need) > 1 {
				need = append(need, ',')
			}
			need = append(need, `["`...)
			need = hex.AppendEncode(need, []byte(key))
			need = append(need, `",`...)
			need = strconv.AppendInt(need, int64(v), 10)
			need = append(need, ']')
		}
	}
	need = append(need, ']')
	blobs := make(map[blobID]stored)
	if len(seen) > 0 {
		query := s.blobs
		if len(tuples) == 1 {
			query = s.chain
		}
		rs, err := tx.StmtContext(ctx, query).QueryContext(ctx, thread, ns, string(need))
		if err != nil {
			return nil, fmt.Errorf("checkpoint: read blobs of %s: %w", checkpoint.Ref{ThreadID: thread, Namespace: ns}, err)
		}
		for rs.Next() {
			var key string
			var version, kind, base int64
			var data []byte
			var sum sql.NullInt64
			if err := rs.Scan(&key, &version, &kind, &base, &data, &sum); err != nil {
				rs.Close()
				return nil, fmt.Errorf("checkpoint: read blobs of %s: %w", checkpoint.Ref{ThreadID: thread, Namespace: ns}, err)
			}
			blobs[blobID{key, uint64(version)}] = stored{kind: checkpoint.BlobKind(kind), base: uint64(base), data: data, sum: sum}
		}
		if err := errors.Join(rs.Err(), rs.Close()); err != nil {
			return nil, fmt.Errorf("checkpoint: read blobs of %s: %w", checkpoint.Ref{ThreadID: thread, Namespace: ns}, err)
		}
	}
	for i, t := range tuples {
		if err := badWrites[t.Ref.ID]; err != nil {
			return tuples[:i], err
		}
		for _, key := range slices.Sorted(maps.Keys(t.Checkpoint.Versions)) {
			chain, err := chain(blobs, key, t.Checkpoint.Versions[key], s.maxBytes)
			if err != nil {
				if errors.Is(err, checkpoint.ErrTooLarge) {
					return tuples[:i], fmt.Errorf("checkpoint: read %s: key %q: %w", t.Ref, key, err)
				}
				return tuples[:i], fmt.Errorf("checkpoint: %s: key %q: %w", t.Ref, key, err)
			}
			t.Checkpoint.Blobs = append(t.Checkpoint.Blobs, chain...)
		}
		if err := t.Validate(); err != nil {
			return tuples[:i], err
		}
	}
	return tuples, firstErr
}

// errBlobSum is chain's error for a blob that fails its checksum.
type errBlobSum struct{ version uint64 }

func (e errBlobSum) Error() string {
	return fmt.Sprintf("blob version %d fails its checksum", e.version)
}

func (e errBlobSum) Unwrap() error { return checkpoint.ErrCorrupt }

// chain returns copies of the blobs that rebuild key at version v, oldest
// (the Full blob) first, checking each blob's size and checksum.
func chain(blobs map[blobID]stored, key string, v uint64, limit int) ([]checkpoint.Blob, error) {
	var out []checkpoint.Blob
	for {
		b, ok := blobs[blobID{key, v}]
		if !ok {
			if len(out) == 0 {
				return nil, fmt.Errorf("no blob is stored for version %d", v)
			}
			return nil, fmt.Errorf("delta version %d is based on version %d, which is not stored; the chain does not reach a full blob", out[len(out)-1].Version, v)
		}
		blob := checkpoint.Blob{Key: key, Version: v, Kind: b.kind, Base: b.base, Data: b.data}
		if len(b.data) > limit {
			return nil, fmt.Errorf("blob version %d has %d bytes, more than the limit of %d bytes: %w", v, len(b.data), limit, checkpoint.ErrTooLarge)
		}
		if b.sum.Valid && uint32(b.sum.Int64) != checkpoint.BlobChecksum(blob) {
			return nil, errBlobSum{v}
		}
		blob.Data = bytes.Clone(b.data)
		out = append(out, blob)
		if b.kind == checkpoint.Full {
			break
		}
		if b.kind != checkpoint.Delta || b.base >= v {
			return nil, fmt.Errorf("blob version %d is a %s blob with base %d, which no Put stores: %w", v, b.kind, b.base, checkpoint.ErrCorrupt)
		}
		v = b.base
	}
	slices.Reverse(out)
	return out, nil
}

// loadWrites sets the pending writes of tuples, all of one thread
// namespace, with one query over the range of their IDs. It returns the
// first bad write (over the size limit, or failing its checksum) of each
// checkpoint that has one, and a database error.
func (s *Saver) loadWrites(ctx context.Context, tx *sql.Tx, thread, ns string, tuples []*checkpoint.Tuple) (map[string]error, error) {
	byID := make(map[string]*checkpoint.Tuple, len(tuples))
	lo, hi := tuples[0].Ref.ID, tuples[0].Ref.ID
	for _, t := range tuples {
		byID[t.Ref.ID] = t
		lo, hi = min(lo, t.Ref.ID), max(hi, t.Ref.ID)
	}
	rs, err := tx.StmtContext(ctx, s.wr).QueryContext(ctx, thread, ns, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: read pending writes of %s: %w", checkpoint.Ref{ThreadID: thread, Namespace: ns}, err)
	}
	defer rs.Close()
	bad := make(map[string]error)
	for rs.Next() {
		var id string
		var w checkpoint.PendingWrite
		var value []byte
		var sum sql.NullInt64
		if err := rs.Scan(&id, &w.TaskID, &w.Index, &w.Key, &value, &sum); err != nil {
			return nil, fmt.Errorf("checkpoint: read pending writes of %s: %w", checkpoint.Ref{ThreadID: thread, Namespace: ns, ID: id}, err)
		}
		w.Value = value
		t := byID[id]
		if t == nil || bad[id] != nil {
			continue
		}
		if err := checkpoint.CheckWriteSize(t.Ref, "read", w.TaskID, w, s.maxBytes); err != nil {
			bad[id] = err
			continue
		}
		if sum.Valid && uint32(sum.Int64) != checkpoint.WriteChecksum(w) {
			bad[id] = checkpoint.Corruptf(t.Ref, "pending write %d of task %q fails its checksum", w.Index, w.TaskID)
			continue
		}
		t.Writes = append(t.Writes, w)
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("checkpoint: read pending writes of %s: %w", checkpoint.Ref{ThreadID: thread, Namespace: ns}, err)
	}
	return bad, nil
}
