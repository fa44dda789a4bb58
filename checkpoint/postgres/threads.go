package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/internal/savercheck"
)

// DeleteThread removes the thread with all its namespaces, checkpoints,
// blobs and writes, in one transaction. Deleting a missing thread returns
// nil. A Put in the thread that runs at the same time either commits first
// and is deleted, or fails with checkpoint.ErrConflict (or starts the thread
// afresh when it names no parent).
func (s *Saver) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if threadID == "" {
		return errEmptyThread
	}
	err := s.inTx(ctx, readWrite, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		// Locking the heads first, in the order Prune uses, waits for
		// the Puts in flight and keeps new ones out.
		b.Queue(`SELECT count(*) FROM (SELECT 1 FROM checkpoint_heads WHERE thread = $1 ORDER BY ns FOR UPDATE) AS h`, threadID)
		b.Queue(`DELETE FROM checkpoint_writes WHERE thread = $1`, threadID)
		b.Queue(`DELETE FROM checkpoints WHERE thread = $1`, threadID)
		b.Queue(`DELETE FROM checkpoint_blobs WHERE thread = $1`, threadID)
		b.Queue(`DELETE FROM checkpoint_heads WHERE thread = $1`, threadID)
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return fmt.Errorf("checkpoint: delete %s: %w", checkpoint.Ref{ThreadID: threadID}, err)
	}
	return nil
}

// CopyThread copies every namespace, checkpoint, blob and write of thread
// from into thread to, in one transaction, inside the database. It returns
// an error wrapping checkpoint.ErrNotFound when from has no checkpoint, and
// an error when to already has one.
func (s *Saver) CopyThread(ctx context.Context, from, to string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if from == "" || to == "" {
		return errEmptyThread
	}
	var missing, taken bool
	err := s.inTx(ctx, readWrite, func(tx pgx.Tx) error {
		var nsrc, ndst int
		err := tx.QueryRow(ctx, `SELECT
	(SELECT count(*) FROM (SELECT 1 FROM checkpoint_heads WHERE thread = $1 ORDER BY ns FOR SHARE) AS h),
	(SELECT count(*) FROM checkpoint_heads WHERE thread = $2)`, from, to).Scan(&nsrc, &ndst)
		switch {
		case err != nil:
			return err
		case nsrc == 0:
			missing = true
			return errors.New("missing")
		case ndst > 0:
			taken = true
			return errors.New("taken")
		}
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO checkpoint_heads (thread, ns, latest_id)
SELECT $2, ns, latest_id FROM checkpoint_heads WHERE thread = $1`, from, to)
		b.Queue(`INSERT INTO checkpoints (thread, ns, id, parent, step, source, run_id, metadata, checkpoint, created, sum)
SELECT $2, ns, id, parent, step, source, run_id, metadata, checkpoint, created, sum FROM checkpoints WHERE thread = $1`, from, to)
		b.Queue(`INSERT INTO checkpoint_blobs (thread, ns, key, version, kind, base, data, sum)
SELECT $2, ns, key, version, kind, base, data, sum FROM checkpoint_blobs WHERE thread = $1`, from, to)
		b.Queue(`INSERT INTO checkpoint_writes (thread, ns, checkpoint_id, task_id, idx, key, value, sum)
SELECT $2, ns, checkpoint_id, task_id, idx, key, value, sum FROM checkpoint_writes WHERE thread = $1`, from, to)
		err = tx.SendBatch(ctx, b).Close()
		if isCode(err, uniqueViolation) {
			// A Put in the target committed after the check.
			taken = true
		}
		return err
	})
	switch {
	case missing:
		return fmt.Errorf("checkpoint: copy %s: %w", checkpoint.Ref{ThreadID: from}, checkpoint.ErrNotFound)
	case taken:
		return fmt.Errorf("checkpoint: copy thread %q to %q: the target thread already has checkpoints", from, to)
	case err != nil:
		return fmt.Errorf("checkpoint: copy thread %q to %q: %w", from, to, err)
	}
	return nil
}

// Prune removes, in each thread namespace (only opts.ThreadID's when set),
// the checkpoints beyond the newest opts.KeepLatest and those whose Created
// is more than opts.OlderThan before now, as checkpoint.Memory.Prune does:
// a checkpoint is removed when either limit says so, a zero Created counts
// as old, and the latest checkpoint of a namespace is never removed. Pending
// writes of removed checkpoints go with them, and so do the blobs no kept
// checkpoint needs. With both limits 0 Prune removes nothing. It returns how
// many checkpoints it removed.
//
// Prune is one transaction. It locks the heads rows of the namespaces it
// looks at, so Puts there wait until it commits: a Put can never reuse a
// blob that Prune is about to collect. A kept checkpoint whose row does not
// decode stops Prune with an error naming it (Prune could not tell which
// blobs it needs), and nothing is removed.
func (s *Saver) Prune(ctx context.Context, opts checkpoint.PruneOptions) (int, error) {
	if run, err := savercheck.Prune(ctx, "checkpoint", opts.KeepLatest, opts.OlderThan); !run {
		return 0, err
	}
	cutoff := time.Now().Add(-opts.OlderThan)
	where, args := "", []any{}
	if opts.ThreadID != "" {
		where, args = "WHERE thread = $1", []any{opts.ThreadID}
	}
	removed := 0
	err := s.inTx(ctx, readWrite, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT count(*) FROM (SELECT 1 FROM checkpoint_heads `+where+` ORDER BY thread, ns FOR UPDATE) AS h`, args...); err != nil {
			return err
		}
		n := len(args)
		rows, _ := tx.Query(ctx, fmt.Sprintf(`DELETE FROM checkpoints c
USING (
	SELECT thread, ns, id, created, row_number() OVER (PARTITION BY thread, ns ORDER BY id DESC) AS rn
	FROM checkpoints %s
) AS r
WHERE c.thread = r.thread AND c.ns = r.ns AND c.id = r.id AND r.rn > 1
	AND (($%d::bigint > 0 AND r.rn > $%d::bigint) OR ($%d::boolean AND r.created < $%d::timestamptz))
RETURNING c.thread, c.ns`, where, n+1, n+1, n+2, n+3),
			append(args, int64(opts.KeepLatest), opts.OlderThan > 0, cutoff)...)
		affected := make(map[nsKey]bool)
		var k nsKey
		if _, err := pgx.ForEachRow(rows, []any{&k.thread, &k.ns}, func() error {
			removed++
			affected[k] = true
			return nil
		}); err != nil {
			return err
		}
		if len(affected) == 0 {
			return nil
		}
		return collectBlobs(ctx, tx, affected)
	})
	if err != nil {
		var own *rowError
		if errors.As(err, &own) {
			return 0, own.err
		}
		return 0, fmt.Errorf("checkpoint: prune: %w", err)
	}
	return removed, nil
}

// DeleteRun removes every checkpoint of thread threadID whose run ID is
// runID, in every namespace, with their pending writes and the blobs no
// remaining checkpoint of those namespaces needs, in one transaction; see
// checkpoint.Saver. It locks the thread's heads rows first, as
// DeleteThread does, then points each touched namespace's head at its
// newest remaining checkpoint (or removes the head of a namespace left
// empty), so the next Put there names that checkpoint as its parent. A
// remaining checkpoint of a touched namespace whose versions do not decode
// fails the call, which then removes nothing. It returns how many
// checkpoints it removed.
func (s *Saver) DeleteRun(ctx context.Context, threadID, runID string) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if threadID == "" {
		return 0, errEmptyThread
	}
	if runID == "" {
		return 0, fmt.Errorf("checkpoint: delete run in %s: run ID is empty", checkpoint.Ref{ThreadID: threadID})
	}
	removed := 0
	err := s.inTx(ctx, readWrite, func(tx pgx.Tx) error {
		removed = 0
		if _, err := tx.Exec(ctx, `SELECT count(*) FROM (SELECT 1 FROM checkpoint_heads WHERE thread = $1 ORDER BY ns FOR UPDATE) AS h`, threadID); err != nil {
			return err
		}
		// Pending writes go with their checkpoints (ON DELETE CASCADE).
		rows, _ := tx.Query(ctx, `DELETE FROM checkpoints WHERE thread = $1 AND run_id = $2 RETURNING ns`, threadID, runID)
		affected := make(map[nsKey]bool)
		var ns string
		if _, err := pgx.ForEachRow(rows, []any{&ns}, func() error {
			removed++
			affected[nsKey{threadID, ns}] = true
			return nil
		}); err != nil {
			return err
		}
		if len(affected) == 0 {
			return nil
		}
		nss := make([]string, 0, len(affected))
		for k := range affected {
			nss = append(nss, k.ns)
		}
		b := &pgx.Batch{}
		b.Queue(`DELETE FROM checkpoint_heads h WHERE h.thread = $1 AND h.ns = ANY($2)
AND NOT EXISTS (SELECT 1 FROM checkpoints c WHERE c.thread = h.thread AND c.ns = h.ns)`, threadID, nss)
		b.Queue(`UPDATE checkpoint_heads h SET latest_id = (SELECT max(c.id) FROM checkpoints c WHERE c.thread = h.thread AND c.ns = h.ns)
WHERE h.thread = $1 AND h.ns = ANY($2)`, threadID, nss)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		return collectBlobs(ctx, tx, affected)
	})
	if err != nil {
		var own *rowError
		if errors.As(err, &own) {
			return 0, own.err
		}
		return 0, fmt.Errorf("checkpoint: delete run %q of %s: %w", runID, checkpoint.Ref{ThreadID: threadID}, err)
	}
	return removed, nil
}

// nsKey is a thread namespace.
type nsKey struct{ thread, ns string }

// collectBlobs deletes the blobs of the namespaces in affected that no
// checkpoint left there needs. It marks each chain as far as it goes, as
// checkpoint.Memory does: a broken chain is Get's to report, not Prune's.
func collectBlobs(ctx context.Context, tx pgx.Tx, affected map[nsKey]bool) error {
	var threads, nss []string
	for k := range affected {
		threads = append(threads, k.thread)
		nss = append(nss, k.ns)
	}
	type blobRef struct {
		nsKey
		blobKey
	}
	type blobInfo struct {
		kind checkpoint.BlobKind
		base uint64
	}
	var needed []blobRef // versions in force of the kept checkpoints
	blobs := make(map[blobRef]blobInfo)
	b := &pgx.Batch{}
	b.Queue(`SELECT c.thread, c.ns, c.id, c.checkpoint->'versions'
FROM checkpoints c JOIN unnest($1::text[], $2::text[]) AS a(thread, ns) ON c.thread = a.thread AND c.ns = a.ns`,
		threads, nss).Query(func(rows pgx.Rows) error {
		var k nsKey
		var id string
		var raw []byte
		_, err := pgx.ForEachRow(rows, []any{&k.thread, &k.ns, &id, &raw}, func() error {
			var versions map[string]uint64
			if raw == nil || json.Unmarshal(raw, &versions) != nil {
				ref := checkpoint.Ref{ThreadID: k.thread, Namespace: k.ns, ID: id}
				return &rowError{checkpoint.Corruptf(ref, "the stored checkpoint's versions do not decode, so the blobs it needs are unknown")}
			}
			for key, v := range versions {
				needed = append(needed, blobRef{k, blobKey{key, v}})
			}
			return nil
		})
		return err
	})
	b.Queue(`SELECT b.thread, b.ns, b.key, b.version, b.kind, b.base
FROM checkpoint_blobs b JOIN unnest($1::text[], $2::text[]) AS a(thread, ns) ON b.thread = a.thread AND b.ns = a.ns`,
		threads, nss).Query(func(rows pgx.Rows) error {
		var r blobRef
		var version, base int64
		var kind int16
		_, err := pgx.ForEachRow(rows, []any{&r.thread, &r.ns, &r.key, &version, &kind, &base}, func() error {
			r.version = uint64(version)
			blobs[r] = blobInfo{kind: checkpoint.BlobKind(kind), base: uint64(base)}
			return nil
		})
		return err
	})
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}

	marked := make(map[blobRef]bool, len(blobs))
	for _, r := range needed {
		for {
			info, ok := blobs[r]
			if !ok || marked[r] {
				break
			}
			marked[r] = true
			if info.kind != checkpoint.Delta || info.base >= r.version {
				break
			}
			r.version = info.base
		}
	}
	var dt, dn, dk []string
	var dv []int64
	for r := range blobs {
		if !marked[r] {
			dt, dn, dk, dv = append(dt, r.thread), append(dn, r.ns), append(dk, r.key), append(dv, int64(r.version))
		}
	}
	if len(dt) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `DELETE FROM checkpoint_blobs b
USING unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS d(thread, ns, key, version)
WHERE b.thread = d.thread AND b.ns = d.ns AND b.key = d.key AND b.version = d.version`, dt, dn, dk, dv)
	return err
}
