package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/internal/txhook"
)

// foreignKeyViolation is the SQLSTATE of an INSERT whose checkpoint row is
// missing.
const foreignKeyViolation = "23503"

// lockWrites is the condition that takes a task's advisory lock ($9 is
// writesLockKey) once, before the statement inserts its first row: an
// uncorrelated subquery in WHERE is an InitPlan, which PostgreSQL runs
// once, at the start, whatever the plan's shape.
const lockWrites = `(SELECT pg_advisory_xact_lock(hashtextextended($9, 0))) IS NOT NULL`

// qAppendWrite appends one write, what a durable step is: its values go as
// scalar parameters, which costs the server about a fifth less than
// unnest's four arrays (docs/architecture.md, "The durable step on
// PostgreSQL").
const qAppendWrite = `INSERT INTO checkpoint_writes (thread, ns, checkpoint_id, task_id, idx, key, value, sum)
SELECT $1, $2, $3, $4, $5::bigint, $6::text, $7::bytea, $8::bigint WHERE ` + lockWrites

// qAppendWrites appends several writes, given as arrays.
const qAppendWrites = `INSERT INTO checkpoint_writes (thread, ns, checkpoint_id, task_id, idx, key, value, sum)
SELECT $1, $2, $3, $4, u.idx, u.key, u.value, u.sum FROM unnest($5::bigint[], $6::text[], $7::bytea[], $8::bigint[]) AS u(idx, key, value, sum)
WHERE ` + lockWrites

// writesLockKey is the text whose hash is the advisory lock of a task's
// writes, which PutWrites and AppendWrites take: the same text as
// fmt.Sprintf("trellis/checkpoint/writes %q %q %q %q", thread, namespace,
// checkpoint ID, task ID), which earlier versions took and which running
// processes of those versions still take, built without fmt's
// reflection, which was ~8 % of a durable step's instructions in this
// process.
func writesLockKey(ref checkpoint.Ref, taskID string) string {
	const prefix = "trellis/checkpoint/writes"
	b := make([]byte, 0, len(prefix)+len(ref.ThreadID)+len(ref.Namespace)+len(ref.ID)+len(taskID)+12)
	b = append(b, prefix...)
	for _, s := range [...]string{ref.ThreadID, ref.Namespace, ref.ID, taskID} {
		b = append(b, ' ')
		b = strconv.AppendQuote(b, s)
	}
	return string(b)
}

// AppendWrites adds writes to the task's pending writes
// (checkpoint.WriteAppender), so that a durable step is one row: no read,
// no delete. Without a transaction hook in ctx it is one statement in one
// round trip, run as an implicit transaction, that takes the task's
// advisory lock (as PutWrites does) and inserts the writes; with a hook it
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
	q, args := appendStatement(ref, taskID, ws)
	if txhook.Has(ctx) {
		err = s.inTx(ctx, readWrite, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, q, args...); err != nil {
				return err
			}
			return txhook.Run(ctx, tx)
		})
	} else {
		_, err = s.pool.Exec(ctx, q, args...)
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

// appendStatement returns the statement that appends ws (sorted, checked,
// not empty) to the task's writes, and its arguments.
func appendStatement(ref checkpoint.Ref, taskID string, ws []checkpoint.PendingWrite) (string, []any) {
	key := writesLockKey(ref, taskID)
	if len(ws) == 1 {
		w := ws[0]
		return qAppendWrite, []any{ref.ThreadID, ref.Namespace, ref.ID, taskID,
			int64(w.Index), w.Key, w.Value, int64(checkpoint.WriteChecksum(w)), key}
	}
	idx := make([]int64, len(ws))
	keys := make([]string, len(ws))
	values := make([][]byte, len(ws))
	sums := make([]int64, len(ws))
	for i, w := range ws {
		idx[i], keys[i], values[i], sums[i] = int64(w.Index), w.Key, w.Value, int64(checkpoint.WriteChecksum(w))
	}
	return qAppendWrites, []any{ref.ThreadID, ref.Namespace, ref.ID, taskID, idx, keys, values, sums, key}
}
