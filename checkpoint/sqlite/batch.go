package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/internal/putbatch"
	"github.com/trellis-agents/trellis/internal/txhook"
)

// maxBatchRows is the most checkpoints one INSERT of PutBatch carries; a
// longer batch is written one checkpoint at a time.
const maxBatchRows = 8

// PutBatch stores entries in one write transaction (checkpoint.BatchPutter),
// each as Put would after the one before it, and runs the context's
// transaction hook once, before the commit. A batch of up to maxBatchRows
// checkpoints is two statements whatever its length: one INSERT of every
// checkpoint row, taken only when ref.ID is still the namespace's latest
// (the entries' IDs grow, which putbatch checks, so the rest follow), and
// one of all their new blobs. Each statement of the single write connection
// costs its turn, which every other writer waits for.
func (s *Saver) PutBatch(ctx context.Context, ref checkpoint.Ref, entries []checkpoint.Entry) (checkpoint.Ref, error) {
	ps, err := putbatch.Prepare(ctx, ref, entries, func(out checkpoint.Ref, e checkpoint.Entry) (preparedPut, error) {
		return s.preparePut(ctx, out, e.Checkpoint, e.Metadata)
	})
	if err != nil {
		return checkpoint.Ref{}, err
	}
	last := ps[len(ps)-1].out
	var one *preparedBatch
	if len(ps) > 1 && len(ps) <= maxBatchRows {
		if one, err = s.prepareBatch(ctx, ref, ps); err != nil {
			return checkpoint.Ref{}, fmt.Errorf("checkpoint: put batch ending %s: %w", last, err)
		}
	}
	tx, err := s.db.Write.BeginTx(ctx, nil)
	if err != nil {
		return checkpoint.Ref{}, fmt.Errorf("checkpoint: put batch ending %s: %w", last, err)
	}
	defer tx.Rollback()
	if one != nil {
		if err := s.putBatchTx(ctx, tx, ref, ps, one); err != nil {
			return checkpoint.Ref{}, err
		}
	} else {
		at := ref
		for _, p := range ps {
			if err := s.putTx(ctx, tx, at, p); err != nil {
				return checkpoint.Ref{}, err
			}
			at = p.out
		}
	}
	if err := txhook.Run(ctx, tx); err != nil {
		return checkpoint.Ref{}, fmt.Errorf("checkpoint: put batch ending %s: %w", last, err)
	}
	if err := tx.Commit(); err != nil {
		return checkpoint.Ref{}, fmt.Errorf("checkpoint: put batch ending %s: %w", last, err)
	}
	s.db.Committed()
	return last, nil
}

// preparedBatch is a batch of checkpoints ready for putBatchTx: the
// statement inserting its rows with their arguments, and its blobs (in
// entry order) with theirs.
type preparedBatch struct {
	insert   *sql.Stmt
	args     []any
	blobs    []checkpoint.Blob
	inserts  []*sql.Stmt
	blobArgs [][]any
}

// prepareBatch builds the statements and arguments of a batch of prepared
// checkpoints, before the write transaction holds the one write
// connection.
func (s *Saver) prepareBatch(ctx context.Context, ref checkpoint.Ref, ps []preparedPut) (*preparedBatch, error) {
	b := &preparedBatch{args: make([]any, 0, 3+9*len(ps))}
	var err error
	if b.insert, err = s.checkpointsInsert(ctx, len(ps)); err != nil {
		return nil, err
	}
	b.args = append(b.args, ref.ThreadID, ref.Namespace, ref.ID)
	n := 0
	for _, p := range ps {
		cp, md := p.cp, p.md
		b.args = append(b.args, cp.ID, md.Parent, md.Step, string(md.Source), md.RunID, p.extra, p.rec, unixNano(cp.Created), p.sum)
		n += len(p.blobs)
	}
	if n > 0 {
		b.blobs = make([]checkpoint.Blob, 0, n)
		for _, p := range ps {
			b.blobs = append(b.blobs, p.blobs...)
		}
		if b.inserts, err = s.blobInserts(ctx, n); err != nil {
			return nil, err
		}
		b.blobArgs = blobArgs(ref, b.blobs)
	}
	return b, nil
}

// putBatchTx inserts a prepared batch after ref.ID in tx: every checkpoint
// row or none, then their new blobs. A blob two entries both carry is
// stored once and compared, as two Puts would.
func (s *Saver) putBatchTx(ctx context.Context, tx *sql.Tx, ref checkpoint.Ref, ps []preparedPut, b *preparedBatch) error {
	first, last := ps[0].out, ps[len(ps)-1].out
	res, err := tx.StmtContext(ctx, b.insert).ExecContext(ctx, b.args...)
	if err != nil {
		return fmt.Errorf("checkpoint: put batch ending %s: %w", last, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("checkpoint: put batch ending %s: %w", last, err)
	}
	switch n {
	case int64(len(ps)):
	case 0:
		return s.refused(ctx, tx, ref, first)
	default:
		// The rows go in together or not at all; only a broken statement
		// gets here.
		return fmt.Errorf("checkpoint: put batch ending %s: %d of %d checkpoint rows inserted", last, n, len(ps))
	}
	if len(b.blobs) == 0 {
		return nil
	}
	if err := s.insertBlobsTx(ctx, tx, b.inserts, b.blobArgs, ref, b.blobs); err != nil {
		return fmt.Errorf("checkpoint: put batch ending %s: %w", last, err)
	}
	return nil
}

// checkpointsInsert returns the prepared statement inserting n checkpoint
// rows (2 <= n <= maxBatchRows) of one namespace, only when the writer read
// the latest one and the first new ID sorts after it. Parameters: ?1
// thread, ?2 namespace, ?3 the ID read as latest ("" for none), then id,
// parent, step, source, run_id, extra, checkpoint, created and sum of each
// row.
func (s *Saver) checkpointsInsert(ctx context.Context, n int) (*sql.Stmt, error) {
	return s.rowsInsert(ctx, s.insertCPs, n, `INSERT INTO checkpoints (thread, ns, id, parent, step, source, run_id, extra, checkpoint, created, sum)
	SELECT ?1, ?2, column1, column2, column3, column4, column5, column6, column7, column8, column9 FROM (VALUES `,
		"", 4, 9, `)
	WHERE coalesce((SELECT id FROM checkpoints WHERE thread = ?1 AND ns = ?2 ORDER BY id DESC LIMIT 1), '') = ?3 AND ?4 > ?3`)
}
