package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// AppendEvents appends events to the lease's run, fenced by the lease,
// with Seq following the run's last one (gap-free even when the holder
// appends from several goroutines); it returns them with Seq and
// CreatedAt set. Every event needs a name; Data must be JSON (null when
// empty).
func (d *DB) AppendEvents(ctx context.Context, l db.Lease, events []db.Event) ([]db.Event, error) {
	out, err := eventRows(l, events)
	if err != nil {
		return nil, err
	}
	if err := d.write(ctx, func(tx *sql.Tx) error { return appendEvents(ctx, tx, l, out) }); err != nil {
		return nil, err
	}
	return out, nil
}

// AppendEventsTx is AppendEvents inside tx, a *sql.Tx of a write
// transaction on this DB's file (another backend's, see internal/txhook),
// which the caller commits. With no events it checks the lease alone.
func (d *DB) AppendEventsTx(ctx context.Context, tx any, l db.Lease, events []db.Event) ([]db.Event, error) {
	stx, ok := tx.(*sql.Tx)
	if !ok || stx == nil {
		return nil, fmt.Errorf("server/db/sqlite: AppendEventsTx needs a *sql.Tx of the same file, got %T", tx)
	}
	out, err := eventRows(l, events)
	if err != nil {
		return nil, err
	}
	if err := appendEvents(ctx, stx, l, out); err != nil {
		return nil, classify(err, d.sq.Path())
	}
	return out, nil
}

// eventRows checks events and returns them as they are stored.
func eventRows(l db.Lease, events []db.Event) ([]db.Event, error) {
	out := make([]db.Event, len(events))
	for i, e := range events {
		if e.Event == "" {
			return nil, dbutil.Invalid("event %d has no name", i)
		}
		data, err := dbutil.OptionalJSON("event data", e.Data)
		if err != nil {
			return nil, err
		}
		if data == nil {
			data = []byte("null")
		}
		out[i] = db.Event{RunID: l.RunID, Event: e.Event, Data: data}
	}
	return out, nil
}

// appendEvents checks the lease and appends out in tx, setting their Seq
// and CreatedAt.
func appendEvents(ctx context.Context, tx *sql.Tx, l db.Lease, out []db.Event) error {
	if err := fence(ctx, tx, l); err != nil {
		return err
	}
	if len(out) == 0 {
		return nil
	}
	var last int64
	if err := tx.QueryRowContext(ctx, `UPDATE trellis_runs SET event_seq = event_seq + ? WHERE tenant = ? AND run_id = ? RETURNING event_seq`,
		len(out), l.Tenant, l.RunID).Scan(&last); err != nil {
		return wrap(err, "append events to run %q", l.RunID)
	}
	now := dbutil.Now()
	first := last - int64(len(out)) + 1
	const cols = 6
	for start := 0; start < len(out); start += 100 {
		batch := out[start:min(start+100, len(out))]
		args := make([]any, 0, cols*len(batch))
		for i := range batch {
			batch[i].Seq = first + int64(start+i)
			batch[i].CreatedAt = now
			args = append(args, l.Tenant, l.RunID, batch[i].Seq, batch[i].Event, []byte(batch[i].Data), micros(now))
		}
		q := `INSERT INTO trellis_run_events (tenant, run_id, seq, event, data, created_at) VALUES ` +
			strings.TrimSuffix(strings.Repeat(`(?, ?, ?, ?, ?, ?), `, len(batch)), ", ")
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return wrap(err, "append events to run %q", l.RunID)
		}
	}
	return nil
}
