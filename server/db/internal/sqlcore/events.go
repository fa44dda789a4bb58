package sqlcore

import (
	"context"
	"time"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// ReadEvents returns the run's events with Seq > after, in order, at most
// limit (0: all); an unknown run is ErrNotFound.
func (s *Store) ReadEvents(ctx context.Context, tenant, runID string, after int64, limit int) ([]db.Event, error) {
	if limit < 0 {
		return nil, dbutil.Invalid("limit %d must not be negative", limit)
	}
	var lim any
	if limit > 0 {
		lim = limit
	}
	var out []db.Event
	err := s.d.Read(ctx, func(tx Conn) error {
		if err := s.runExists(ctx, tx, tenant, "", runID, false); err != nil {
			return err
		}
		scan := func(r Row) (db.Event, error) {
			e := db.Event{RunID: runID}
			var data []byte
			err := r.Scan(&e.Seq, &e.Event, &data, s.d.ScanTime(&e.CreatedAt))
			e.Data = data
			return e, err
		}
		var err error
		out, err = collect(ctx, tx, scan, s.q.ReadEvents, tenant, runID, after, lim)
		return s.wrap(err, "read the events of run %q", runID)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
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
