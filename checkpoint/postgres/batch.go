package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/internal/putbatch"
	"github.com/trellis-agents/trellis/internal/txhook"
)

// PutBatch stores entries in one transaction (checkpoint.BatchPutter),
// each as Put would after the one before it, and runs the context's
// transaction hook once, before the commit. Whatever its length, the batch
// is three statements sent together: the heads row moves from ref.ID to
// the last entry's ID (the entries' IDs grow, which putbatch checks, so a
// writer that read the latest checkpoint may store them all), every new
// blob of the batch in one INSERT, every checkpoint row in another. A blob
// that was stored already, or that two entries both carry, is compared
// afterwards as Put compares it.
//
// Each statement costs the server a bind, an executor start and its
// end; a run's first step stores two checkpoints, so this saves three
// statements on every run of the service.
func (s *Saver) PutBatch(ctx context.Context, ref checkpoint.Ref, entries []checkpoint.Entry) (checkpoint.Ref, error) {
	ps, err := putbatch.Prepare(ctx, ref, entries, func(out checkpoint.Ref, e checkpoint.Entry) (preparedPut, error) {
		return s.preparePut(out, e.Checkpoint, e.Metadata)
	})
	if err != nil {
		return checkpoint.Ref{}, err
	}
	first, last := ps[0].out, ps[len(ps)-1].out
	if ref.ID != "" && first.ID <= ref.ID {
		return checkpoint.Ref{}, s.explainBadID(ctx, ref, first)
	}
	var all []checkpoint.Blob
	for _, p := range ps {
		all = append(all, p.cp.Blobs...)
	}
	unique := uniqueBlobs(all)
	if len(unique) < len(all) {
		if err := sameRepeats(last, all); err != nil {
			return checkpoint.Ref{}, err
		}
	}
	rows := checkpointColumns(ps)
	var conflict bool
	err = s.inTx(ctx, readWrite, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		queueHeads(b, ref, last.ID)
		if len(unique) > 0 {
			queueBlobs(b, ref, unique)
		}
		b.Queue(`INSERT INTO checkpoints (thread, ns, id, parent, step, source, run_id, metadata, checkpoint, created, sum)
SELECT $1, $2, u.id, u.parent, u.step, u.source, u.run_id, u.metadata, u.checkpoint, u.created, md5(u.checkpoint::text || ' ' || u.metadata::text)
FROM unnest($3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::jsonb[], $9::jsonb[], $10::timestamptz[])
	AS u(id, parent, step, source, run_id, metadata, checkpoint, created)`,
			ref.ThreadID, ref.Namespace, rows.ids, rows.parents, rows.steps, rows.sources, rows.runIDs, rows.metadata, rows.checkpoints, rows.created)
		br := tx.SendBatch(ctx, b)
		defer func() { _ = br.Close() }()
		tag, err := br.Exec()
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			conflict = true
			return errConflictMarker
		}
		inserted, err := readInserted(br, len(unique))
		if err != nil {
			return err
		}
		if _, err := br.Exec(); err != nil {
			if isCode(err, uniqueViolation) {
				return &putErr{fmt.Errorf("checkpoint: put batch ending %s: a checkpoint with one of its IDs already exists", last)}
			}
			return err
		}
		if err := br.Close(); err != nil {
			return err
		}
		if len(inserted) < len(all) {
			if err := checkStoredBlobs(ctx, tx, last, all, unique, inserted); err != nil {
				return err
			}
		}
		return txhook.Run(ctx, tx)
	})
	switch {
	case conflict:
		return checkpoint.Ref{}, s.conflictError(ctx, ref, first)
	case err != nil:
		var own *putErr
		if errors.As(err, &own) {
			return checkpoint.Ref{}, own.err
		}
		return checkpoint.Ref{}, fmt.Errorf("checkpoint: put batch ending %s: %w", last, err)
	}
	return last, nil
}

// queueHeads queues the move of ref's heads row from ref.ID (none: the
// row is created) to latest, a compare-and-set whose row lock serializes
// the writers of one namespace; no row affected is a conflict.
func queueHeads(b *pgx.Batch, ref checkpoint.Ref, latest string) {
	if ref.ID == "" {
		b.Queue(`INSERT INTO checkpoint_heads (thread, ns, latest_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			ref.ThreadID, ref.Namespace, latest)
		return
	}
	b.Queue(`UPDATE checkpoint_heads SET latest_id = $3 WHERE thread = $1 AND ns = $2 AND latest_id = $4`,
		ref.ThreadID, ref.Namespace, latest, ref.ID)
}

// queueBlobs queues the INSERT of blobs (no repeats) in ref's namespace,
// returning the key and version of each one it inserted (readInserted).
func queueBlobs(b *pgx.Batch, ref checkpoint.Ref, blobs []checkpoint.Blob) {
	cols := blobColumns(blobs)
	b.Queue(`INSERT INTO checkpoint_blobs (thread, ns, key, version, kind, base, data, sum)
SELECT $1, $2, u.key, u.version, u.kind, u.base, u.data, u.sum
FROM unnest($3::text[], $4::bigint[], $5::smallint[], $6::bigint[], $7::bytea[], $8::bigint[]) AS u(key, version, kind, base, data, sum)
ON CONFLICT DO NOTHING
RETURNING key, version`,
		ref.ThreadID, ref.Namespace, cols.keys, cols.versions, cols.kinds, cols.bases, cols.data, cols.sums)
}

// readInserted reads queueBlobs' result: the blobs it inserted (none read
// when n, the blobs queued, is 0: nothing was queued).
func readInserted(br pgx.BatchResults, n int) (map[blobKey]bool, error) {
	inserted := make(map[blobKey]bool, n)
	if n == 0 {
		return inserted, nil
	}
	rows, _ := br.Query()
	var key string
	var version int64
	_, err := pgx.ForEachRow(rows, []any{&key, &version}, func() error {
		inserted[blobKey{key, uint64(version)}] = true
		return nil
	})
	return inserted, err
}

// cpCols are prepared checkpoints as column arrays, for unnest.
type cpCols struct {
	ids, parents, sources, runIDs []string
	steps                         []int64
	metadata, checkpoints         []string
	created                       []time.Time
}

func checkpointColumns(ps []preparedPut) cpCols {
	n := len(ps)
	c := cpCols{
		ids: make([]string, n), parents: make([]string, n), sources: make([]string, n), runIDs: make([]string, n),
		steps: make([]int64, n), metadata: make([]string, n), checkpoints: make([]string, n), created: make([]time.Time, n),
	}
	for i, p := range ps {
		c.ids[i], c.parents[i], c.sources[i], c.runIDs[i] = p.cp.ID, p.md.Parent, string(p.md.Source), p.md.RunID
		c.steps[i], c.metadata[i], c.checkpoints[i], c.created[i] = int64(p.md.Step), string(p.mdJSON), string(p.cpJSON), p.cp.Created
	}
	return c
}

// sameRepeats checks that the blobs the batch's entries carry more than
// once are identical each time: two Puts would have refused the second.
func sameRepeats(last checkpoint.Ref, all []checkpoint.Blob) error {
	first := make(map[blobKey]checkpoint.Blob, len(all))
	for _, b := range all {
		id := blobKey{b.Key, b.Version}
		o, seen := first[id]
		if !seen {
			first[id] = b
			continue
		}
		if !o.Equal(b) {
			return fmt.Errorf("checkpoint: put batch ending %s: key %q version %d is carried twice with other content; blob versions must not be reused", last, b.Key, b.Version)
		}
	}
	return nil
}
