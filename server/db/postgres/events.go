package postgres

import (
	"context"
	"fmt"
	"time"

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

// ReadEvents returns the run's events with Seq > after, in order, at most
// limit (0: all); an unknown run is ErrNotFound.
func (d *DB) ReadEvents(ctx context.Context, tenant, runID string, after int64, limit int) ([]db.Event, error) {
	if limit < 0 {
		return nil, dbutil.Invalid("limit %d must not be negative", limit)
	}
	var lim any
	if limit > 0 {
		lim = limit
	}
	out := []db.Event{}
	err := d.read(ctx, func(tx pgx.Tx) error {
		if _, err := getRun(ctx, tx, tenant, "", runID, false); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT seq, event, data, created_at FROM trellis_run_events
			WHERE tenant = $1 AND run_id = $2 AND seq > $3 ORDER BY seq LIMIT $4`, tenant, runID, after, lim)
		if err != nil {
			return wrap(err, "read the events of run %q", runID)
		}
		defer rows.Close()
		for rows.Next() {
			e := db.Event{RunID: runID}
			var data []byte
			if err := rows.Scan(&e.Seq, &e.Event, &data, &e.CreatedAt); err != nil {
				return wrap(err, "read the events of run %q", runID)
			}
			e.Data, e.CreatedAt = data, utc(e.CreatedAt)
			out = append(out, e)
		}
		return wrap(rows.Err(), "read the events of run %q", runID)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteEvents removes the run's events and reports how many; later
// appends still continue the Seq numbering, so an SSE id is never reused.
func (d *DB) DeleteEvents(ctx context.Context, tenant, runID string) (int, error) {
	var n int64
	err := d.write(ctx, func(tx pgx.Tx) error {
		if _, err := getRun(ctx, tx, tenant, "", runID, false); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM trellis_run_events WHERE tenant = $1 AND run_id = $2`, tenant, runID)
		if err != nil {
			return wrap(err, "delete the events of run %q", runID)
		}
		n = tag.RowsAffected()
		return nil
	})
	return int(n), err
}

// PruneEvents removes the events of runs (of every tenant) that ended
// before endedBefore and reports how many.
func (d *DB) PruneEvents(ctx context.Context, endedBefore time.Time) (int, error) {
	tag, err := d.pool.Exec(ctx, `DELETE FROM trellis_run_events e USING trellis_runs r
		WHERE r.tenant = e.tenant AND r.run_id = e.run_id AND r.ended_at IS NOT NULL AND r.ended_at < $1`, endedBefore)
	if err != nil {
		return 0, wrap(err, "prune events")
	}
	return int(tag.RowsAffected()), nil
}
