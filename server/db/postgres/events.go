package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// AppendEvents appends events to the lease's run, fenced by the lease,
// with Seq following the run's last one (gap-free even when the holder
// appends from several goroutines or processes: the lease row is locked
// for the append); it returns them with Seq and CreatedAt set. Every event
// needs a name; Data must be JSON (null when empty) and is stored as
// given.
func (d *DB) AppendEvents(ctx context.Context, l db.Lease, events []db.Event) ([]db.Event, error) {
	out, names, datas, err := eventRows(l, events)
	if err != nil {
		return nil, err
	}
	if err := d.write(ctx, func(tx pgx.Tx) error { return appendEvents(ctx, tx, l, out, names, datas) }); err != nil {
		return nil, err
	}
	return out, nil
}

// AppendEventsTx is AppendEvents inside tx, a pgx.Tx of a write
// transaction on this DB's database and schema (another backend's, see
// internal/txhook), which the caller commits. With no events it checks
// the lease alone.
func (d *DB) AppendEventsTx(ctx context.Context, tx any, l db.Lease, events []db.Event) ([]db.Event, error) {
	ptx, ok := tx.(pgx.Tx)
	if !ok || ptx == nil {
		return nil, fmt.Errorf("server/db/postgres: AppendEventsTx needs a pgx.Tx of the same database, got %T", tx)
	}
	out, names, datas, err := eventRows(l, events)
	if err != nil {
		return nil, err
	}
	if err := appendEvents(ctx, ptx, l, out, names, datas); err != nil {
		return nil, err
	}
	return out, nil
}

// eventRows checks events and returns them as they are stored, with their
// names and data as columns.
func eventRows(l db.Lease, events []db.Event) (out []db.Event, names []string, datas [][]byte, err error) {
	out = make([]db.Event, len(events))
	names = make([]string, len(events))
	datas = make([][]byte, len(events))
	for i, e := range events {
		if e.Event == "" {
			return nil, nil, nil, dbutil.Invalid("event %d has no name", i)
		}
		data, err := dbutil.OptionalJSON("event data", e.Data)
		if err != nil {
			return nil, nil, nil, err
		}
		if data == nil {
			data = []byte("null")
		}
		out[i] = db.Event{RunID: l.RunID, Event: e.Event, Data: data}
		names[i], datas[i] = e.Event, data
	}
	return out, names, datas, nil
}

// appendEvents checks the lease and appends out in tx, setting their Seq
// and CreatedAt.
func appendEvents(ctx context.Context, tx pgx.Tx, l db.Lease, out []db.Event, names []string, datas [][]byte) error {
	if err := fence(ctx, tx, l); err != nil {
		return err
	}
	if len(out) == 0 {
		return nil
	}
	var last int64
	if err := tx.QueryRow(ctx, `UPDATE trellis_runs SET event_seq = event_seq + $1 WHERE tenant = $2 AND run_id = $3 RETURNING event_seq`,
		len(out), l.Tenant, l.RunID).Scan(&last); err != nil {
		return wrap(err, "append events to run %q", l.RunID)
	}
	now := dbutil.Now()
	first := last - int64(len(out)) + 1
	for i := range out {
		out[i].Seq, out[i].CreatedAt = first+int64(i), now
	}
	_, err := tx.Exec(ctx, `INSERT INTO trellis_run_events (tenant, run_id, seq, event, data, created_at)
			SELECT $1, $2, $3 + u.ord - 1, u.event, u.data, $4 FROM unnest($5::text[], $6::bytea[]) WITH ORDINALITY AS u(event, data, ord)`,
		l.Tenant, l.RunID, first, now, names, datas)
	return wrap(err, "append events to run %q", l.RunID)
}
