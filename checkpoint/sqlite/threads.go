package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/checkpoint/internal/savercheck"
)

// DeleteThread removes the thread with all its namespaces, checkpoints,
// blobs and writes, in one transaction. Deleting a missing thread returns
// nil.
func (s *Saver) DeleteThread(ctx context.Context, threadID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if threadID == "" {
		return errEmptyThread
	}
	err := s.inWriteTx(ctx, func(tx *sql.Tx) error {
		// Pending writes go with their checkpoints (ON DELETE CASCADE).
		if _, err := tx.ExecContext(ctx, `DELETE FROM checkpoints WHERE thread = ?`, threadID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM blobs WHERE thread = ?`, threadID)
		return err
	})
	if err != nil {
		return fmt.Errorf("checkpoint: delete %s: %w", checkpoint.Ref{ThreadID: threadID}, err)
	}
	return nil
}

// CopyThread copies every namespace, checkpoint, blob and write of thread
// from into thread to, in one transaction. It returns an error wrapping
// checkpoint.ErrNotFound when from has no checkpoint, and an error when to
// already has one.
func (s *Saver) CopyThread(ctx context.Context, from, to string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if from == "" || to == "" {
		return errEmptyThread
	}
	errTargetExists := fmt.Errorf("checkpoint: copy thread %q to %q: the target thread already has checkpoints", from, to)
	err := s.inWriteTx(ctx, func(tx *sql.Tx) error {
		has := func(thread string) (bool, error) {
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM checkpoints WHERE thread = ? LIMIT 1`, thread).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return false, nil
			}
			return err == nil, err
		}
		if ok, err := has(from); err != nil {
			return err
		} else if !ok {
			return fmt.Errorf("checkpoint: copy %s: %w", checkpoint.Ref{ThreadID: from}, checkpoint.ErrNotFound)
		}
		if ok, err := has(to); err != nil {
			return err
		} else if ok {
			return errTargetExists
		}
		for _, q := range []string{
			// Blobs cannot outlive their thread's checkpoints, but clear
			// any left by hand so the copy cannot collide with them.
			`DELETE FROM blobs WHERE thread = ?2`,
			`INSERT INTO checkpoints (thread, ns, id, parent, step, source, run_id, extra, checkpoint, created, sum)
			SELECT ?2, ns, id, parent, step, source, run_id, extra, checkpoint, created, sum FROM checkpoints WHERE thread = ?1`,
			`INSERT INTO blobs (thread, ns, key, version, kind, base, data, sum)
			SELECT ?2, ns, key, version, kind, base, data, sum FROM blobs WHERE thread = ?1`,
			`INSERT INTO writes (thread, ns, checkpoint_id, task_id, idx, key, value, sum)
			SELECT ?2, ns, checkpoint_id, task_id, idx, key, value, sum FROM writes WHERE thread = ?1`,
		} {
			if _, err := tx.ExecContext(ctx, q, from, to); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, checkpoint.ErrNotFound) && !errors.Is(err, errTargetExists) {
		return fmt.Errorf("checkpoint: copy thread %q to %q: %w", from, to, err)
	}
	return err
}

// Prune removes, in each thread namespace (only opts.ThreadID's when set),
// the checkpoints beyond the newest opts.KeepLatest and those whose Created
// is more than opts.OlderThan before now; a checkpoint is removed when
// either limit says so, and a zero Created counts as old. The latest
// checkpoint of a namespace is never removed. Pending writes of removed
// checkpoints go with them, and so do the blobs no kept checkpoint needs.
// With both limits 0 Prune removes nothing; negative limits are an error.
// Everything happens in one transaction: a kept checkpoint that does not
// decode fails the Prune, which then removes nothing. It returns how many
// checkpoints it removed.
func (s *Saver) Prune(ctx context.Context, opts checkpoint.PruneOptions) (int, error) {
	if run, err := savercheck.Prune(ctx, "checkpoint", opts.KeepLatest, opts.OlderThan); !run {
		return 0, err
	}
	cutoff := unixNano(s.now().Add(-opts.OlderThan))
	removed := 0
	err := s.inWriteTx(ctx, func(tx *sql.Tx) error {
		where, args := "", []any{opts.KeepLatest, opts.OlderThan > 0, cutoff}
		if opts.ThreadID != "" {
			where = "WHERE thread = ?4"
			args = append(args, opts.ThreadID)
		}
		// rn counts from the newest checkpoint of each namespace (1).
		rows, err := tx.QueryContext(ctx, `DELETE FROM checkpoints WHERE (thread, ns, id) IN (
			SELECT thread, ns, id FROM (
				SELECT thread, ns, id, created,
					row_number() OVER (PARTITION BY thread, ns ORDER BY id DESC) AS rn
				FROM checkpoints `+where+`
			) WHERE rn > 1 AND ((?1 > 0 AND rn > ?1) OR (?2 AND created < ?3))
		) RETURNING thread, ns`, args...)
		if err != nil {
			return err
		}
		type nsKey struct{ thread, ns string }
		touched := make(map[nsKey]bool)
		for rows.Next() {
			var k nsKey
			if err := rows.Scan(&k.thread, &k.ns); err != nil {
				rows.Close()
				return err
			}
			touched[k] = true
			removed++
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		keys := make([]nsKey, 0, len(touched))
		for k := range touched {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b nsKey) int { return cmp.Or(cmp.Compare(a.thread, b.thread), cmp.Compare(a.ns, b.ns)) })
		for _, k := range keys {
			if err := collectBlobs(ctx, tx, k.thread, k.ns); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("checkpoint: prune: %w", err)
	}
	return removed, nil
}

// DeleteRun removes every checkpoint of thread threadID whose run ID is
// runID, in every namespace, with their pending writes (ON DELETE CASCADE)
// and the blobs no remaining checkpoint of those namespaces needs, in one
// transaction; see checkpoint.Saver. Each namespace's latest checkpoint is
// then its newest remaining one. It returns how many checkpoints it
// removed. A remaining checkpoint of a touched namespace that does not
// decode fails the call, which then removes nothing.
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
	err := s.inWriteTx(ctx, func(tx *sql.Tx) error {
		removed = 0
		rows, err := tx.QueryContext(ctx, `DELETE FROM checkpoints WHERE thread = ? AND run_id = ? RETURNING ns`, threadID, runID)
		if err != nil {
			return err
		}
		touched := make(map[string]bool)
		for rows.Next() {
			var ns string
			if err := rows.Scan(&ns); err != nil {
				rows.Close()
				return err
			}
			touched[ns] = true
			removed++
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		for _, ns := range slices.Sorted(maps.Keys(touched)) {
			if err := collectBlobs(ctx, tx, threadID, ns); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("checkpoint: delete run %q of %s: %w", runID, checkpoint.Ref{ThreadID: threadID}, err)
	}
	return removed, nil
}

// collectBlobs deletes the blobs of a thread namespace that no remaining
// checkpoint needs: those outside the chains of every checkpoint's
// versions. A chain is marked as far as it goes; a broken chain is
// reported by Get, not here.
func collectBlobs(ctx context.Context, tx *sql.Tx, thread, ns string) error {
	type meta struct {
		kind checkpoint.BlobKind
		base uint64
	}
	blobs := make(map[blobID]meta)
	rows, err := tx.QueryContext(ctx, `SELECT key, version, kind, base FROM blobs WHERE thread = ? AND ns = ?`, thread, ns)
	if err != nil {
		return err
	}
	for rows.Next() {
		var key string
		var version, kind, base int64
		if err := rows.Scan(&key, &version, &kind, &base); err != nil {
			rows.Close()
			return err
		}
		blobs[blobID{key, uint64(version)}] = meta{checkpoint.BlobKind(kind), uint64(base)}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}

	needed := make(map[blobID]bool)
	rows, err = tx.QueryContext(ctx, `SELECT id, checkpoint FROM checkpoints WHERE thread = ? AND ns = ?`, thread, ns)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id string
		var raw []byte
		if err := rows.Scan(&id, &raw); err != nil {
			rows.Close()
			return err
		}
		var rec struct {
			Versions map[string]uint64 `json:"versions"`
			Created  *json.RawMessage  `json:"created"`
		}
		err := json.Unmarshal(raw, &rec)
		if err == nil && rec.Created == nil {
			err = errors.New("it has no creation time")
		}
		if err != nil {
			rows.Close()
			return checkpoint.Corruptf(checkpoint.Ref{ThreadID: thread, Namespace: ns, ID: id},
				"decode the stored checkpoint to find the blobs it needs: %v", err)
		}
		for key, v := range rec.Versions {
			for {
				id := blobID{key, v}
				b, ok := blobs[id]
				if !ok || needed[id] {
					break
				}
				needed[id] = true
				if b.kind != checkpoint.Delta || b.base >= v {
					break
				}
				v = b.base
			}
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}

	var del *sql.Stmt
	for id := range blobs {
		if needed[id] {
			continue
		}
		if del == nil {
			if del, err = tx.PrepareContext(ctx, `DELETE FROM blobs WHERE thread = ? AND ns = ? AND key = ? AND version = ?`); err != nil {
				return err
			}
			defer del.Close()
		}
		if _, err := del.ExecContext(ctx, thread, ns, id.key, int64(id.version)); err != nil {
			return err
		}
	}
	return nil
}
