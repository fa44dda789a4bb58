package sqlcore

import (
	"context"
	"time"

	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// ReadEvents returns the run's events with Seq > after, in order, at most
// limit (0: all); an unknown run is ErrNotFound.
func (s *Store) ReadEvents(ctx context.Context, tenant, runID string, after int64, limit int) ([]db.Event, error) {
	out, _, err := s.ReadEventsStatus(ctx, tenant, runID, after, limit)
	return out, err
}

// ReadEventsStatus is ReadEvents that also returns the run's status as of
// the same statement (db.EventsStatusReader): the run's row is joined to
// its events, so whether it exists and how it stands cost no read of
// their own.
func (s *Store) ReadEventsStatus(ctx context.Context, tenant, runID string, after int64, limit int) ([]db.Event, db.RunEnd, error) {
	if limit < 0 {
		return nil, db.RunEnd{}, dbutil.Invalid("limit %d must not be negative", limit)
	}
	var lim any
	if limit > 0 {
		lim = limit
	}
	var (
		end    db.RunEnd
		status string
		rows   int
	)
	scan := func(r Row) (db.Event, error) {
		e := db.Event{RunID: runID}
		var data []byte
		err := r.Scan(&status, &end.Error, &e.Seq, &e.Event, &data, s.d.ScanTime(&e.CreatedAt))
		e.Data = data
		rows++
		return e, err
	}
	out, err := collect(ctx, s.d.Reader(), scan, s.q.ReadEvents, tenant, runID, after, lim)
	if err != nil {
		return nil, db.RunEnd{}, s.wrap(err, "read the events of run %q", runID)
	}
	if rows == 0 {
		return nil, db.RunEnd{}, s.notFound("run", runID, tenant)
	}
	end.Status = db.RunStatus(status)
	if len(out) == 1 && out[0].Seq == 0 { // the run's row alone: no event
		out = out[:0]
	}
	return out, end, nil
}

// DeleteEvents removes the run's events and reports how many; later
// appends still continue the Seq numbering, so an SSE id is never reused.
func (s *Store) DeleteEvents(ctx context.Context, tenant, runID string) (int, error) {
	var n int64
	err := s.d.Write(ctx, func(tx Conn) error {
		if err := s.runExists(ctx, tx, tenant, "", runID, false); err != nil {
			return err
		}
		var err error
		n, err = tx.Exec(ctx, s.q.DeleteEvents, tenant, runID)
		return s.wrap(err, "delete the events of run %q", runID)
	})
	return int(n), err
}

// PruneEvents removes the events of runs (of every tenant) that ended
// before endedBefore and reports how many.
func (s *Store) PruneEvents(ctx context.Context, endedBefore time.Time) (int, error) {
	n, err := s.d.Exec(ctx, s.q.PruneEvents, s.d.Time(endedBefore))
	if err != nil {
		return 0, s.wrap(err, "prune events")
	}
	return int(n), nil
}

// AppendEvents appends events to the lease's run, fenced by the lease,
// with Seq following the run's last one (gap-free even when the holder
// appends from several goroutines or processes: the append holds the
// write lock, or the run's row lock); it returns them with Seq and
// CreatedAt set. Every event needs a name; Data must be JSON (null when
// empty) and is stored as given.
func (s *Store) AppendEvents(ctx context.Context, l db.Lease, events []db.Event) ([]db.Event, error) {
	out, err := eventRows(l, events)
	if err != nil {
		return nil, err
	}
	if err := s.d.Write(ctx, func(tx Conn) error { return s.appendEvents(ctx, tx, nil, l, out) }); err != nil {
		return nil, err
	}
	return out, nil
}

// AppendEventsTx is AppendEvents inside tx, the database's own open write
// transaction (another backend's, see internal/txhook), which the caller
// commits. With no events it checks the lease alone; it skips that check
// when ctx says tx already made it (txhook.WithFenced).
func (s *Store) AppendEventsTx(ctx context.Context, tx any, l db.Lease, events []db.Event) ([]db.Event, error) {
	c, err := s.d.Wrap(tx)
	if err != nil {
		return nil, s.wrap(err, "AppendEventsTx")
	}
	out, err := eventRows(l, events)
	if err != nil {
		return nil, err
	}
	if err := s.appendEvents(ctx, c, tx, l, out); err != nil {
		return nil, s.d.Classify(err)
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

// appendEvents checks the lease (raw as fence takes it) and appends out
// in c, setting their Seq and CreatedAt.
func (s *Store) appendEvents(ctx context.Context, c Conn, raw any, l db.Lease, out []db.Event) error {
	var last int64
	fenced := raw != nil && txhook.Fenced(ctx, raw, l.Tenant, l.RunID, l.Token)
	reserved := false
	if fenced && len(out) > 0 {
		// The run's claim or finish in raw reserved the Seq numbers
		// already (txhook.WithSeqs), with the lease checked.
		last, reserved = txhook.Take(ctx, raw, l.Tenant, l.RunID, len(out))
	}
	switch {
	case reserved:
	case len(out) > 0 && !fenced && s.q.FencedBumpEventSeq != "":
		// The lease's check and the Seq's bump in one statement.
		err := c.QueryRow(ctx, s.q.FencedBumpEventSeq, len(out), l.Tenant, l.RunID, l.Token).Scan(&last)
		if s.d.IsNoRows(err) {
			return s.leaseLost(l)
		}
		if err != nil {
			return s.wrap(err, "append events to run %q", l.RunID)
		}
	default:
		if err := s.fence(ctx, c, raw, l); err != nil {
			return err
		}
		if len(out) == 0 {
			return nil
		}
		if err := c.QueryRow(ctx, s.q.BumpEventSeq, len(out), l.Tenant, l.RunID).Scan(&last); err != nil {
			return s.wrap(err, "append events to run %q", l.RunID)
		}
	}
	now := dbutil.Now()
	first := last - int64(len(out)) + 1
	for i := range out {
		out[i].Seq, out[i].CreatedAt = first+int64(i), now
	}
	return s.wrap(s.d.AppendEventRows(ctx, c, l.Tenant, l.RunID, out), "append events to run %q", l.RunID)
}
