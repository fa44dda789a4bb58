package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/internal/txhook"
)

// foreignKeyViolation is the SQLSTATE of an INSERT whose checkpoint row is
// missing.
const foreignKeyViolation = "23503"

const qAppendWrites = `INSERT INTO checkpoint_writes (thread, ns, checkpoint_id, task_id, idx, key, value, sum)
SELECT $1, $2, $3, $4, u.idx, u.key, u.value, u.sum FROM unnest($5::bigint[], $6::text[], $7::bytea[], $8::bigint[]) AS u(idx, key, value, sum)`

// AppendWrites adds writes to the task's pending writes
// (checkpoint.WriteAppender), so that a durable step is one row: no read,
// no delete. Without a transaction hook in ctx it is one round trip, a
// batch that PostgreSQL runs as one implicit transaction (the task's
// advisory lock, as PutWrites takes it, and one INSERT); with a hook it
// runs in an explicit transaction with the hook. The checkpoint's
// existence is the table's foreign key (which also keeps Prune and
// DeleteThread from removing it until the writes are in); a stored index
// is the primary key's violation, reported as checkpoint.ErrConflict.
func (s *Saver) AppendWrites(ctx context.Context, ref checkpoint.Ref, taskID string, writes []checkpoint.PendingWrite) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ws, err := checkpoint.CheckWrites(ref, "append writes", taskID, writes, s.maxBytes)
	if err != nil {
		return err
	}
	if len(ws) == 0 {
		return nil
	}
	idx := make([]int64, len(ws))
	keys := make([]string, len(ws))
	values := make([][]byte, len(ws))
	sums := make([]int64, len(ws))
	for i, w := range ws {
		idx[i], keys[i], values[i], sums[i] = int64(w.Index), w.Key, w.Value, int64(checkpoint.WriteChecksum(w))
	}
	send := func(q interface {
		SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
	}) error {
		b := &pgx.Batch{}
		b.Queue(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`,
			fmt.Sprintf("trellis/checkpoint/writes %q %q %q %q", ref.ThreadID, ref.Namespace, ref.ID, taskID))
		b.Queue(qAppendWrites, ref.ThreadID, ref.Namespace, ref.ID, taskID, idx, keys, values, sums)
		br := q.SendBatch(ctx, b)
		defer func() { _ = br.Close() }()
		for range 2 {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		return br.Close()
	}
	if txhook.Has(ctx) {
		err = s.inTx(ctx, readWrite, func(tx pgx.Tx) error {
			if err := send(tx); err != nil {
				return err
			}
			return txhook.Run(ctx, tx)
		})
	} else {
		err = send(s.pool)
	}
	switch {
	case err == nil:
		return nil
	case isCode(err, foreignKeyViolation):
		return notFound(ref)
	case isCode(err, uniqueViolation):
		return fmt.Errorf("checkpoint: append writes of task %q for %s: an index is stored already: %w", taskID, ref, checkpoint.ErrConflict)
	}
	return fmt.Errorf("checkpoint: append writes of task %q for %s: %w", taskID, ref, err)
}
