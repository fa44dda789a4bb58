package sqlite

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/internal/sqlitedb"
	"github.com/trellis-agents/trellis/internal/txhook"
)

// record is what the checkpoint column holds: the checkpoint without its ID
// (a column of its own) and without its blobs (rows of their own).
// Created is always written, so a record without it (such as "{}" or
// "null") is damaged.
type record struct {
	Versions map[string]uint64   `json:"versions,omitempty"`
	Next     []checkpoint.Task   `json:"next,omitempty"`
	Waiting  map[string][]string `json:"waiting,omitempty"`
	Deferred []string            `json:"deferred,omitempty"`
	Created  *time.Time          `json:"created"`
}

// rowSum is the checksum of a checkpoint row: its metadata columns, extra
// and the record.
func rowSum(parent string, step int, source, runID string, extra, rec []byte) uint32 {
	sum := checkpoint.ChecksumString(0, parent, "\x00", source, "\x00", runID, "\x00")
	sum = checkpoint.ChecksumUint64(sum, uint64(step), uint64(len(extra)))
	return checkpoint.Checksum(sum, extra, rec)
}

// encodeJSON encodes v without escaping HTML characters, so that stored
// strings and raw JSON keep their bytes.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Put stores cp after the latest checkpoint of ref's thread namespace, in
// one transaction that holds the database's write lock from its first read:
// the checkpoint row is inserted only if the latest checkpoint is still the
// one the writer read, then the new blobs (already stored ones are compared,
// not written again).
// ref.ID must be the ID of that latest checkpoint ("" when the namespace has
// none), otherwise Put returns an error wrapping checkpoint.ErrConflict.
// md.Parent is stored as given. cp.ID must be new and sort after the latest
// ID. Each blob must be Full, or Delta with a Base below its Version; a blob
// whose key and version are already stored in the namespace must be
// identical to the stored one. When Put fails it has written nothing.
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
	p, err := s.preparePut(ctx, out, cp, md)
	if err != nil {
		return checkpoint.Ref{}, err
	}
	tx, err := s.db.Write.BeginTx(ctx, nil)
	if err != nil {
		return checkpoint.Ref{}, fmt.Errorf("checkpoint: put %s: %w", out, err)
	}
	defer tx.Rollback()
	if err := s.putTx(ctx, tx, ref, p); err != nil {
		return checkpoint.Ref{}, err
	}
	if err := txhook.Run(ctx, tx); err != nil {
		return checkpoint.Ref{}, fmt.Errorf("checkpoint: put %s: %w", out, err)
	}
	if err := tx.Commit(); err != nil {
		return checkpoint.Ref{}, fmt.Errorf("checkpoint: put %s: %w", out, err)
	}
	s.db.Committed()
	return out, nil
}

// preparedPut is a checkpoint encoded and checked for putTx, with the
// statements that insert its blobs.
type preparedPut struct {
	out     checkpoint.Ref
	cp      checkpoint.Checkpoint
	md      checkpoint.Metadata
	blobs   []checkpoint.Blob
	rec     []byte
	extra   []byte
	sum     int64 // rowSum of the row
	inserts []*sql.Stmt
	// blobArgs are the arguments of inserts, one list per statement,
	// checksums computed: built before the write transaction begins, as
	// every caller of the one write connection waits while it is held.
	blobArgs [][]any
}

// preparePut encodes and checks cp for the checkpoint out names, and
// prepares its blob statements: they must be prepared before a
// transaction holds the only write connection.
func (s *Saver) preparePut(ctx context.Context, out checkpoint.Ref, cp checkpoint.Checkpoint, md checkpoint.Metadata) (preparedPut, error) {
	p := preparedPut{out: out, cp: cp, md: md}
	blobs, err := checkpoint.CheckBlobs(cp.Blobs)
	if err != nil {
		return p, fmt.Errorf("checkpoint: put %s: %w", out, err)
	}
	p.blobs = blobs
	if p.rec, err = encodeJSON(record{Versions: cp.Versions, Next: cp.Next, Waiting: cp.Waiting, Deferred: cp.Deferred, Created: &cp.Created}); err != nil {
		return p, fmt.Errorf("checkpoint: put %s: encode: %w", out, err)
	}
	if len(md.Extra) > 0 {
		if p.extra, err = encodeJSON(md.Extra); err != nil {
			return p, fmt.Errorf("checkpoint: put %s: encode metadata: %w", out, err)
		}
	}
	if err := checkpoint.CheckSize(out, "put", "the checkpoint row", len(p.rec)+len(p.extra), s.maxBytes); err != nil {
		return p, err
	}
	if err := checkpoint.CheckBlobSizes(out, "put", blobs, s.maxBytes); err != nil {
		return p, err
	}
	if p.inserts, err = s.blobInserts(ctx, len(blobs)); err != nil {
		return p, fmt.Errorf("checkpoint: put %s: %w", out, err)
	}
	p.sum = int64(rowSum(md.Parent, md.Step, string(md.Source), md.RunID, p.extra, p.rec))
	p.blobArgs = blobArgs(out, blobs)
	return p, nil
}

// putTx inserts a prepared checkpoint after ref.ID in tx, a write
// transaction: the row only if ref.ID is still the namespace's latest,
// then its new blobs.
func (s *Saver) putTx(ctx context.Context, tx *sql.Tx, ref checkpoint.Ref, p preparedPut) error {
	cp, md, out := p.cp, p.md, p.out
	res, err := tx.StmtContext(ctx, s.insertCP).ExecContext(ctx, ref.ThreadID, ref.Namespace, cp.ID,
		md.Parent, md.Step, string(md.Source), md.RunID, p.extra, p.rec, unixNano(cp.Created), ref.ID, p.sum)
	if err != nil {
		return fmt.Errorf("checkpoint: put %s: %w", out, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("checkpoint: put %s: %w", out, err)
	} else if n == 0 {
		return s.refused(ctx, tx, ref, out)
	}
	if err := s.insertBlobsTx(ctx, tx, p.inserts, p.blobArgs, ref, p.blobs); err != nil {
		return fmt.Errorf("checkpoint: put %s: %w", out, err)
	}
	return nil
}

// refused returns the error of a Put whose checkpoint was not inserted:
// the writer did not read the latest checkpoint (ErrConflict), or the new ID
// does not sort after it. tx still holds the write lock, so the latest
// checkpoint is the one the insert saw.
func (s *Saver) refused(ctx context.Context, tx *sql.Tx, ref, out checkpoint.Ref) error {
	var latest string
	err := tx.QueryRowContext(ctx, qLatest, ref.ThreadID, ref.Namespace).Scan(&latest)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("checkpoint: put %s: %w", out, err)
	}
	if ref.ID != latest {
		if latest == "" {
			return fmt.Errorf("checkpoint: put %s: the writer read checkpoint %q as the latest, but the namespace has none: %w", out, ref.ID, checkpoint.ErrConflict)
		}
		return fmt.Errorf("checkpoint: put %s: the writer read checkpoint %q as the latest, but the latest is %s: %w", out, ref.ID, latest, checkpoint.ErrConflict)
	}
	// Every stored ID is at most latest, so only an ID at most latest
	// can exist; look it up for the right message.
	var one int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM checkpoints WHERE thread = ? AND ns = ? AND id = ?`, ref.ThreadID, ref.Namespace, out.ID).Scan(&one)
	switch {
	case err == nil:
		return fmt.Errorf("checkpoint: put %s: a checkpoint with this ID already exists", out)
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("checkpoint: put %s: %w", out, err)
	}
	return fmt.Errorf("checkpoint: put %s: the ID sorts before the latest checkpoint %s; IDs must grow (use NewID)", out, latest)
}

// blobInserts returns the statements that insert n blobs: one per chunk of
// maxBlobRows, see insertBlobsTx.
func (s *Saver) blobInserts(ctx context.Context, n int) ([]*sql.Stmt, error) {
	var out []*sql.Stmt
	for n > 0 {
		st, err := s.blobInsert(ctx, min(n, maxBlobRows))
		if err != nil {
			return nil, err
		}
		out = append(out, st)
		n -= maxBlobRows
	}
	return out, nil
}

// blobArgs returns the arguments of the statements blobInserts returns
// for blobs of the namespace out names: one list per chunk of maxBlobRows.
func blobArgs(out checkpoint.Ref, blobs []checkpoint.Blob) [][]any {
	var all [][]any
	for i := 0; i < len(blobs); i += maxBlobRows {
		chunk := blobs[i:min(len(blobs), i+maxBlobRows)]
		args := make([]any, 0, 2+6*len(chunk))
		args = append(args, out.ThreadID, out.Namespace)
		for _, b := range chunk {
			args = append(args, b.Key, int64(b.Version), int64(b.Kind), int64(b.Base), []byte(b.Data), int64(checkpoint.BlobChecksum(b)))
		}
		all = append(all, args)
	}
	return all
}

// insertBlobsTx inserts blobs with the statements blobInserts returned and
// their arguments from blobArgs, skipping the blobs already stored. When
// some were already stored (fewer rows inserted than given), it checks
// that every blob equals the stored one; the transaction is rolled back by
// the caller on error.
func (s *Saver) insertBlobsTx(ctx context.Context, tx *sql.Tx, inserts []*sql.Stmt, args [][]any, ref checkpoint.Ref, blobs []checkpoint.Blob) error {
	inserted := int64(0)
	for i, st := range inserts {
		res, err := tx.StmtContext(ctx, st).ExecContext(ctx, args[i]...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		inserted += n
	}
	if inserted == int64(len(blobs)) {
		return nil
	}
	get := tx.StmtContext(ctx, s.getBlob)
	for _, b := range blobs {
		var kind, base int64
		var data []byte
		if err := get.QueryRowContext(ctx, ref.ThreadID, ref.Namespace, b.Key, int64(b.Version)).Scan(&kind, &base, &data); err != nil {
			return fmt.Errorf("read back blob %q version %d: %w", b.Key, b.Version, err)
		}
		if checkpoint.BlobKind(kind) != b.Kind || uint64(base) != b.Base || !bytes.Equal(data, b.Data) {
			return fmt.Errorf("key %q version %d is already stored with other content; blob versions must not be reused", b.Key, b.Version)
		}
	}
	return nil
}

type blobID struct {
	key     string
	version uint64
}

// PutWrites replaces the pending writes of task taskID after the checkpoint
// ref names; ref.ID is required. It returns an error wrapping
// checkpoint.ErrNotFound when that checkpoint does not exist. Each write's
// TaskID must be taskID or empty (it is then filled in), and no two writes
// may share an Index. Writing an empty list removes the task's writes.
// Without a transaction hook in ctx, a non-empty list is written on the
// write connection directly, as AppendWrites does.
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
	ws := slices.Clone(writes)
	indexes := make(map[int]bool, len(writes))
	for i, w := range ws {
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
		ws[i].TaskID = taskID
	}
	slices.SortFunc(ws, func(a, b checkpoint.PendingWrite) int { return cmp.Compare(a.Index, b.Index) })

	if len(ws) > 0 && !txhook.Has(ctx) {
		// As AppendWrites: on the write connection directly, the
		// checkpoint's existence checked by the INSERTs' foreign key; a
		// failure is explained by doing it again below.
		if done, err := s.writeDirect(ctx, "put writes", ref, taskID, ws, true); done {
			return err
		}
	}
	err := s.inWriteTx(ctx, func(tx *sql.Tx) error {
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM checkpoints WHERE thread = ? AND ns = ? AND id = ?`,
			ref.ThreadID, ref.Namespace, ref.ID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound(ref)
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, qDeleteWrites, ref.ThreadID, ref.Namespace, ref.ID, taskID); err != nil {
			return err
		}
		if len(ws) == 0 {
			return txhook.Run(ctx, tx)
		}
		ins := tx.StmtContext(ctx, s.insertW)
		for _, w := range ws {
			if _, err := ins.ExecContext(ctx, ref.ThreadID, ref.Namespace, ref.ID, taskID, w.Index, w.Key, []byte(w.Value), int64(checkpoint.WriteChecksum(w))); err != nil {
				return err
			}
		}
		return txhook.Run(ctx, tx)
	})
	if err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
		return fmt.Errorf("checkpoint: put writes of task %q for %s: %w", taskID, ref, err)
	}
	return err
}

const (
	qInsertWrite  = `INSERT INTO writes (thread, ns, checkpoint_id, task_id, idx, key, value, sum) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`
	qDeleteWrites = `DELETE FROM writes WHERE thread = ? AND ns = ? AND checkpoint_id = ? AND task_id = ?`
)

// writeDirect stores ws as the task's writes in a transaction on the write
// connection directly (sqlitedb.DB.WriteTx), first deleting the task's
// writes when replace is set. done reports that the call is over, with err
// its outcome; otherwise (a statement failed) the caller does the write
// again on its *sql.Tx path, which explains the failure.
func (s *Saver) writeDirect(ctx context.Context, what string, ref checkpoint.Ref, taskID string, ws []checkpoint.PendingWrite, replace bool) (done bool, err error) {
	err = s.db.WriteTx(ctx, func(d *sqlitedb.Direct) error {
		if replace {
			if _, err := d.Exec(qDeleteWrites, ref.ThreadID, ref.Namespace, ref.ID, taskID); err != nil {
				return err
			}
		}
		for _, w := range ws {
			if _, err := d.Exec(qInsertWrite, ref.ThreadID, ref.Namespace, ref.ID, taskID, int64(w.Index), w.Key, []byte(w.Value), int64(checkpoint.WriteChecksum(w))); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		s.db.Committed()
		return true, nil
	}
	if ctx.Err() != nil || errors.Is(err, sqlitedb.ErrClosed) {
		return true, fmt.Errorf("checkpoint: %s of task %q for %s: %w", what, taskID, ref, err)
	}
	return false, nil
}

// AppendWrites adds writes to the task's pending writes
// (checkpoint.WriteAppender): one write transaction of one prepared INSERT
// per write, no read and no delete, so a durable step costs one row. The
// checkpoint's existence is the writes table's foreign key; the checks
// that explain a failed INSERT run only then. Without a transaction hook
// in ctx (internal/txhook) the transaction runs on the write connection
// directly (sqlitedb.DB.WriteTx), not through database/sql.
func (s *Saver) AppendWrites(ctx context.Context, ref checkpoint.Ref, taskID string, writes []checkpoint.PendingWrite) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ws, err := checkpoint.CheckWrites(ref, "append writes", taskID, writes, s.maxBytes)
	if err != nil {
		return err
	}
	if !txhook.Has(ctx) {
		// No hook needs a *sql.Tx: the INSERTs run on the write connection
		// directly. When one fails, the append is done again below, where
		// a failed INSERT is explained in its transaction.
		if done, err := s.writeDirect(ctx, "append writes", ref, taskID, ws, false); done {
			return err
		}
	}
	err = s.inWriteTx(ctx, func(tx *sql.Tx) error {
		ins := tx.StmtContext(ctx, s.insertW)
		for _, w := range ws {
			if _, err := ins.ExecContext(ctx, ref.ThreadID, ref.Namespace, ref.ID, taskID, w.Index, w.Key, []byte(w.Value), int64(checkpoint.WriteChecksum(w))); err != nil {
				return explainAppend(ctx, tx, ref, taskID, w.Index, err)
			}
		}
		return txhook.Run(ctx, tx)
	})
	if err != nil && !errors.Is(err, checkpoint.ErrNotFound) {
		return fmt.Errorf("checkpoint: append writes of task %q for %s: %w", taskID, ref, err)
	}
	return err
}

// explainAppend tells a missing checkpoint or a stored index from other
// causes of a failed INSERT of a pending write.
func explainAppend(ctx context.Context, tx *sql.Tx, ref checkpoint.Ref, taskID string, idx int, cause error) error {
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM checkpoints WHERE thread = ? AND ns = ? AND id = ?`, ref.ThreadID, ref.Namespace, ref.ID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound(ref)
	}
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM writes WHERE thread = ? AND ns = ? AND checkpoint_id = ? AND task_id = ? AND idx = ?`,
		ref.ThreadID, ref.Namespace, ref.ID, taskID, idx).Scan(&one)
	if err == nil {
		return fmt.Errorf("index %d is stored already: %w", idx, checkpoint.ErrConflict)
	}
	return cause
}

// inWriteTx runs fn in a write transaction (BEGIN IMMEDIATE) and commits it
// when fn returns nil.
func (s *Saver) inWriteTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.Write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.db.Committed()
	return nil
}
