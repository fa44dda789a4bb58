package postgres

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/internal/txhook"
)

// Put stores cp after the latest checkpoint of ref's thread namespace, as
// checkpoint.Memory.Put does. ref.ID must be the ID of that latest
// checkpoint ("" when the namespace has none), otherwise Put returns an
// error wrapping checkpoint.ErrConflict. cp.ID must be new and sort after
// the latest ID; every blob must be Full, or Delta with a Base below its
// Version; a blob whose key and version are stored already must be
// identical to the stored one. md.Parent is stored as given. When Put fails
// it has written nothing.
//
// Put is one transaction of three round trips (BEGIN, one batch, COMMIT)
// when no blob of cp is stored already: in the batch the heads row moves
// with a compare-and-set (its row lock serializes the writers of one
// namespace), the new blobs are inserted with ON CONFLICT DO NOTHING, and
// the checkpoint row is inserted; blobs that were stored already are then
// compared with cp's, one more round trip.
func (s *Saver) Put(ctx context.Context, ref checkpoint.Ref, cp checkpoint.Checkpoint, md checkpoint.Metadata) (checkpoint.Ref, error) {
	if err := ctx.Err(); err != nil {
		return checkpoint.Ref{}, err
	}
	if ref.ThreadID == "" {
		return checkpoint.Ref{}, errEmptyThread
	}
	out := checkpoint.Ref{ThreadID: ref.ThreadID, Namespace: ref.Namespace, ID: cp.ID}
	if cp.ID == "" {
		return checkpoint.Ref{}, fmt.Errorf("checkpoint: put in %s: checkpoint ID is empty; assign one with NewID", out)
	}
	if _, err := checkpoint.CheckBlobs(cp.Blobs); err != nil {
		return checkpoint.Ref{}, fmt.Errorf("checkpoint: put %s: %w", out, err)
	}
	p, err := s.preparePut(out, cp, md)
	if err != nil {
		return checkpoint.Ref{}, err
	}
	if ref.ID != "" && cp.ID <= ref.ID {
		// Either the writer's latest is stale, or the ID does not grow:
		// both are errors, and reading tells which.
		return checkpoint.Ref{}, s.explainBadID(ctx, ref, out)
	}
	var conflict bool
	err = s.inTx(ctx, readWrite, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		queuePut(b, ref, p)
		br := tx.SendBatch(ctx, b)
		defer func() { _ = br.Close() }()
		inserted, c, err := readPut(br, p)
		if c || err != nil {
			conflict = c
			return err
		}
		if err := br.Close(); err != nil {
			return err
		}
		if err := p.checkStored(ctx, tx, inserted); err != nil {
			return err
		}
		return txhook.Run(ctx, tx)
	})
	switch {
	case conflict:
		return checkpoint.Ref{}, s.conflictError(ctx, ref, out)
	case err != nil:
		return checkpoint.Ref{}, putError(out, err)
	}
	return out, nil
}

// preparedPut is a checkpoint encoded and checked for queuePut.
type preparedPut struct {
	out    checkpoint.Ref
	cp     checkpoint.Checkpoint
	md     checkpoint.Metadata
	cpJSON []byte
	mdJSON []byte
	blobs  []checkpoint.Blob // without repeats
}

// preparePut encodes cp and md for the checkpoint out names and checks
// their sizes.
func (s *Saver) preparePut(out checkpoint.Ref, cp checkpoint.Checkpoint, md checkpoint.Metadata) (preparedPut, error) {
	p := preparedPut{out: out, cp: cp, md: md}
	stored := cp
	stored.Blobs = nil
	var err error
	if p.cpJSON, err = json.Marshal(stored); err != nil {
		return p, fmt.Errorf("checkpoint: put %s: encode checkpoint: %w", out, err)
	}
	if p.mdJSON, err = json.Marshal(md); err != nil {
		return p, fmt.Errorf("checkpoint: put %s: encode metadata: %w", out, err)
	}
	if err := checkpoint.CheckSize(out, "put", "the checkpoint row", len(p.cpJSON)+len(p.mdJSON), s.maxBytes); err != nil {
		return p, err
	}
	if err := checkpoint.CheckBlobSizes(out, "put", cp.Blobs, s.maxBytes); err != nil {
		return p, err
	}
	p.blobs = uniqueBlobs(cp.Blobs)
	return p, nil
}

// queuePut queues the statements that store p after ref.ID: the heads
// row moves with a compare-and-set (its row lock serializes the writers
// of one namespace), the new blobs are inserted with ON CONFLICT DO
// NOTHING, and the checkpoint row is inserted. readPut reads their
// results.
func queuePut(b *pgx.Batch, ref checkpoint.Ref, p preparedPut) {
	cp, md := p.cp, p.md
	if ref.ID == "" {
		b.Queue(`INSERT INTO checkpoint_heads (thread, ns, latest_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			ref.ThreadID, ref.Namespace, cp.ID)
	} else {
		b.Queue(`UPDATE checkpoint_heads SET latest_id = $3 WHERE thread = $1 AND ns = $2 AND latest_id = $4`,
			ref.ThreadID, ref.Namespace, cp.ID, ref.ID)
	}
	if len(p.blobs) > 0 {
		cols := blobColumns(p.blobs)
		b.Queue(`INSERT INTO checkpoint_blobs (thread, ns, key, version, kind, base, data, sum)
SELECT $1, $2, u.key, u.version, u.kind, u.base, u.data, u.sum
FROM unnest($3::text[], $4::bigint[], $5::smallint[], $6::bigint[], $7::bytea[], $8::bigint[]) AS u(key, version, kind, base, data, sum)
ON CONFLICT DO NOTHING
RETURNING key, version`,
			ref.ThreadID, ref.Namespace, cols.keys, cols.versions, cols.kinds, cols.bases, cols.data, cols.sums)
	}
	b.Queue(`INSERT INTO checkpoints (thread, ns, id, parent, step, source, run_id, metadata, checkpoint, created, sum)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, md5($9::jsonb::text || ' ' || $8::jsonb::text))`,
		ref.ThreadID, ref.Namespace, cp.ID, md.Parent, int64(md.Step), string(md.Source), md.RunID, p.mdJSON, p.cpJSON, cp.Created)
}

// readPut reads the results of queuePut's statements: the blobs it
// inserted, and whether the heads row did not move (a conflict, returned
// with errConflictMarker).
func readPut(br pgx.BatchResults, p preparedPut) (map[blobKey]bool, bool, error) {
	tag, err := br.Exec()
	if err != nil {
		return nil, false, err
	}
	if tag.RowsAffected() == 0 {
		return nil, true, errConflictMarker
	}
	inserted := make(map[blobKey]bool, len(p.blobs))
	if len(p.blobs) > 0 {
		rows, _ := br.Query()
		var key string
		var version int64
		if _, err := pgx.ForEachRow(rows, []any{&key, &version}, func() error {
			inserted[blobKey{key, uint64(version)}] = true
			return nil
		}); err != nil {
			return nil, false, err
		}
	}
	if _, err := br.Exec(); err != nil {
		if isCode(err, uniqueViolation) {
			return nil, false, &putErr{fmt.Errorf("checkpoint: put %s: a checkpoint with this ID already exists", p.out)}
		}
		return nil, false, err
	}
	return inserted, false, nil
}

// checkStored compares p's blobs that were stored already (not in
// inserted) with the stored ones.
func (p preparedPut) checkStored(ctx context.Context, tx pgx.Tx, inserted map[blobKey]bool) error {
	if len(inserted) < len(p.blobs) {
		return checkStoredBlobs(ctx, tx, p.out, p.cp.Blobs, p.blobs, inserted)
	}
	return nil
}

// errConflictMarker aborts Put's transaction when the heads row did not
// move; Put then builds the real error outside the aborted transaction.
var errConflictMarker = errors.New("conflict")

// putError wraps a database error of Put, leaving Put's own errors as they
// are.
func putError(out checkpoint.Ref, err error) error {
	var own *putErr
	if errors.As(err, &own) {
		return own.err
	}
	return fmt.Errorf("checkpoint: put %s: %w", out, err)
}

// putErr marks an error Put built itself, complete with its context.
type putErr struct{ err error }

func (e *putErr) Error() string { return e.err.Error() }

// conflictError builds Put's ErrConflict error, naming the latest
// checkpoint as it is now.
func (s *Saver) conflictError(ctx context.Context, ref, out checkpoint.Ref) error {
	latest, err := s.latestID(ctx, ref)
	if err != nil {
		return fmt.Errorf("checkpoint: put %s: the writer read checkpoint %q as the latest, which it no longer is: %w", out, ref.ID, checkpoint.ErrConflict)
	}
	return conflictMessage(out, ref.ID, latest)
}

func conflictMessage(out checkpoint.Ref, read, latest string) error {
	if latest == "" {
		return fmt.Errorf("checkpoint: put %s: the writer read checkpoint %q as the latest, but the namespace has none: %w", out, read, checkpoint.ErrConflict)
	}
	return fmt.Errorf("checkpoint: put %s: the writer read checkpoint %q as the latest, but the latest is %s: %w", out, read, latest, checkpoint.ErrConflict)
}

// latestID returns the ID of the latest checkpoint of ref's namespace, ""
// when it has none.
func (s *Saver) latestID(ctx context.Context, ref checkpoint.Ref) (string, error) {
	var latest string
	err := s.pool.QueryRow(ctx, `SELECT latest_id FROM checkpoint_heads WHERE thread = $1 AND ns = $2`,
		ref.ThreadID, ref.Namespace).Scan(&latest)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return latest, err
}

// explainBadID returns Put's error for a checkpoint ID that does not sort
// after ref.ID: a conflict when ref.ID is not the latest, else the ID's
// fault, in checkpoint.Memory's order.
func (s *Saver) explainBadID(ctx context.Context, ref, out checkpoint.Ref) error {
	b := &pgx.Batch{}
	var latest string
	var exists bool
	b.Queue(`SELECT latest_id FROM checkpoint_heads WHERE thread = $1 AND ns = $2`, ref.ThreadID, ref.Namespace).
		QueryRow(func(row pgx.Row) error {
			if err := row.Scan(&latest); err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			return nil
		})
	b.Queue(`SELECT EXISTS (SELECT 1 FROM checkpoints WHERE thread = $1 AND ns = $2 AND id = $3)`, ref.ThreadID, ref.Namespace, out.ID).
		QueryRow(func(row pgx.Row) error { return row.Scan(&exists) })
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("checkpoint: put %s: %w", out, err)
	}
	switch {
	case latest != ref.ID:
		return conflictMessage(out, ref.ID, latest)
	case exists:
		return fmt.Errorf("checkpoint: put %s: a checkpoint with this ID already exists", out)
	}
	return fmt.Errorf("checkpoint: put %s: the ID sorts before the latest checkpoint %s; IDs must grow (use NewID)", out, latest)
}

// checkStoredBlobs compares the blobs of a Put that were stored already
// (those not in inserted) with the stored ones, reporting the first that
// differs in the order of all, as checkpoint.Memory does.
func checkStoredBlobs(ctx context.Context, tx pgx.Tx, out checkpoint.Ref, all, unique []checkpoint.Blob, inserted map[blobKey]bool) error {
	var keys []string
	var versions []int64
	for _, b := range unique {
		if !inserted[blobKey{b.Key, b.Version}] {
			keys = append(keys, b.Key)
			versions = append(versions, int64(b.Version))
		}
	}
	rows, _ := tx.Query(ctx, `SELECT b.key, b.version, b.kind, b.base, b.data, b.sum
FROM checkpoint_blobs b JOIN unnest($3::text[], $4::bigint[]) AS u(key, version) ON b.key = u.key AND b.version = u.version
WHERE b.thread = $1 AND b.ns = $2`, out.ThreadID, out.Namespace, keys, versions)
	old, err := scanBlobs(rows)
	if err != nil {
		return err
	}
	for _, b := range all {
		id := blobKey{b.Key, b.Version}
		if inserted[id] {
			continue
		}
		if o, ok := old[id]; !ok || !o.Blob.Equal(b) {
			return &putErr{fmt.Errorf("checkpoint: put %s: key %q version %d is already stored with other content; blob versions must not be reused", out, b.Key, b.Version)}
		}
	}
	return nil
}

// blobKey identifies a stored blob inside one thread namespace.
type blobKey struct {
	key     string
	version uint64
}

// uniqueBlobs returns blobs without repeats (checkBlobs has made sure that
// repeats are identical).
func uniqueBlobs(blobs []checkpoint.Blob) []checkpoint.Blob {
	seen := make(map[blobKey]bool, len(blobs))
	out := make([]checkpoint.Blob, 0, len(blobs))
	for _, b := range blobs {
		if id := (blobKey{b.Key, b.Version}); !seen[id] {
			seen[id] = true
			out = append(out, b)
		}
	}
	return out
}

// blobCols are blobs as column arrays, for unnest.
type blobCols struct {
	keys     []string
	versions []int64
	kinds    []int16
	bases    []int64
	data     [][]byte
	sums     []int64
}

func blobColumns(blobs []checkpoint.Blob) blobCols {
	c := blobCols{
		keys:     make([]string, len(blobs)),
		versions: make([]int64, len(blobs)),
		kinds:    make([]int16, len(blobs)),
		bases:    make([]int64, len(blobs)),
		data:     make([][]byte, len(blobs)),
		sums:     make([]int64, len(blobs)),
	}
	for i, b := range blobs {
		c.keys[i], c.versions[i], c.kinds[i], c.bases[i], c.data[i] = b.Key, int64(b.Version), int16(b.Kind), int64(b.Base), b.Data
		c.sums[i] = int64(checkpoint.BlobChecksum(b))
	}
	return c
}

// PutWrites replaces the pending writes of task taskID after the checkpoint
// ref names, as checkpoint.Memory.PutWrites does; ref.ID is required. It
// returns an error wrapping checkpoint.ErrNotFound when that checkpoint does
// not exist. Each write's TaskID must be taskID or empty (it is then filled
// in), and no two writes may share an Index. Writing an empty list removes
// the task's writes. Concurrent calls for one task are serialized, so the
// task ends with the writes of one call, never a mix.
func (s *Saver) PutWrites(ctx context.Context, ref checkpoint.Ref, taskID string, writes []checkpoint.PendingWrite) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if ref.ThreadID == "" {
		return errEmptyThread
	}
	if ref.ID == "" {
		return fmt.Errorf("checkpoint: put writes in %s: checkpoint ID is empty", ref)
	}
	if taskID == "" {
		return fmt.Errorf("checkpoint: put writes for %s: task ID is empty", ref)
	}
	ws := make([]checkpoint.PendingWrite, len(writes))
	indexes := make(map[int]bool, len(writes))
	for i, w := range writes {
		if w.TaskID != "" && w.TaskID != taskID {
			return fmt.Errorf("checkpoint: put writes of task %q for %s: write %d belongs to task %q", taskID, ref, i, w.TaskID)
		}
		if indexes[w.Index] {
			return fmt.Errorf("checkpoint: put writes of task %q for %s: index %d is used twice", taskID, ref, w.Index)
		}
		if err := checkpoint.CheckWriteSize(ref, "put writes", taskID, w, s.maxBytes); err != nil {
			return err
		}
		indexes[w.Index] = true
		ws[i] = w
		ws[i].TaskID = taskID
	}
	slices.SortFunc(ws, func(a, b checkpoint.PendingWrite) int { return cmp.Compare(a.Index, b.Index) })
	idx := make([]int64, len(ws))
	keys := make([]string, len(ws))
	values := make([][]byte, len(ws))
	sums := make([]int64, len(ws))
	for i, w := range ws {
		idx[i], keys[i], values[i], sums[i] = int64(w.Index), w.Key, w.Value, int64(checkpoint.WriteChecksum(w))
	}

	var missing bool
	err := s.inTx(ctx, readWrite, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		// The lock serializes calls for one task; the key is a hash, so
		// a collision only makes two calls wait for each other.
		b.Queue(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
			fmt.Sprintf("trellis/checkpoint/writes %q %q %q %q", ref.ThreadID, ref.Namespace, ref.ID, taskID))
		// FOR KEY SHARE keeps Prune and DeleteThread from removing the
		// checkpoint until the writes are in.
		b.Queue(`SELECT 1 FROM checkpoints WHERE thread = $1 AND ns = $2 AND id = $3 FOR KEY SHARE`,
			ref.ThreadID, ref.Namespace, ref.ID)
		b.Queue(`DELETE FROM checkpoint_writes WHERE thread = $1 AND ns = $2 AND checkpoint_id = $3 AND task_id = $4`,
			ref.ThreadID, ref.Namespace, ref.ID, taskID)
		if len(ws) > 0 {
			b.Queue(`INSERT INTO checkpoint_writes (thread, ns, checkpoint_id, task_id, idx, key, value, sum)
SELECT $1, $2, $3, $4, u.idx, u.key, u.value, u.sum FROM unnest($5::bigint[], $6::text[], $7::bytea[], $8::bigint[]) AS u(idx, key, value, sum)`,
				ref.ThreadID, ref.Namespace, ref.ID, taskID, idx, keys, values, sums)
		}
		br := tx.SendBatch(ctx, b)
		defer func() { _ = br.Close() }()
		if _, err := br.Exec(); err != nil {
			return err
		}
		var one int
		if err := br.QueryRow().Scan(&one); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				missing = true
			}
			return err
		}
		if err := br.Close(); err != nil {
			return err
		}
		return txhook.Run(ctx, tx)
	})
	switch {
	case missing:
		return notFound(ref)
	case err != nil:
		return fmt.Errorf("checkpoint: put writes of task %q for %s: %w", taskID, ref, err)
	}
	return nil
}
