package runs

import (
	"context"
	"errors"
	"time"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/internal/repeat"
)

// FollowLog is what Follow reads: the event log and the run's status.
type FollowLog interface {
	Log
	GetRun(ctx context.Context, tenant, thread, id string) (db.Run, error)
}

// DefaultFollowPoll is how often Follow looks at the run's status when the
// caller gives no interval.
const DefaultFollowPoll = 500 * time.Millisecond

// Follow hands fn the run's events with Seq > after, live, until the run
// ends — then its whole log has been handed over — or ctx ends (ctx's
// error). It is Join plus what every reader of a run needs around it: the
// run's status is also read every poll (0: DefaultFollowPoll), because a
// run executed or cancelled on another replica may end without this
// process's broker hearing of it, and the log's tail is read after the
// end. A run deleted with its thread simply ends. fn's error stops Follow
// and is returned. It returns the last Seq handed over. Every wire (the
// LangGraph API, OpenAI, AG-UI, MCP) reads runs through it.
func Follow(ctx context.Context, log FollowLog, b *Broker, tenant, thread, runID string, after int64, poll time.Duration, fn func(db.Event) error) (int64, error) {
	f, err := FollowRun(ctx, log, b, tenant, thread, runID, after, poll, fn)
	return f.Last, err
}

// Followed is what FollowRun learned of the run it followed.
type Followed struct {
	// Last is the Seq of the last event handed over.
	Last int64
	// End is how the run ended, when FollowRun learned it without a read
	// of its own (from the log's read, or from this process's executor);
	// its Status is empty when it did not, and the caller reads the run.
	End db.RunEnd
}

// FollowRun is Follow, also reporting how the run ended when it knows.
// When the join saw the whole log of the ended run (see join), the log's
// tail is not read again.
func FollowRun(ctx context.Context, log FollowLog, b *Broker, tenant, thread, runID string, after int64, poll time.Duration, fn func(db.Event) error) (Followed, error) {
	if poll <= 0 {
		poll = DefaultFollowPoll
	}
	jctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ended := func(c context.Context) (bool, error) {
		r, err := log.GetRun(c, tenant, thread, runID)
		switch {
		case errors.Is(err, db.ErrNotFound):
			return true, nil
		case err != nil:
			return false, err
		}
		return r.Status.Terminal(), nil
	}
	// The status is looked at from a timer, not a goroutine of its own:
	// a follow that starts beside its run (runs/wait) must not put one more
	// goroutine ahead of the run's own on a busy processor.
	stopPoll := pollEnd(jctx, poll, ended, cancel)
	defer func() {
		cancel() // first: a status read in progress returns at once
		stopPoll()
	}()
	last := after
	var je joinEnd
	for ev, err := range join(jctx, log, b, tenant, runID, after, ended, &je) {
		if err != nil {
			if jctx.Err() != nil || errors.Is(err, db.ErrNotFound) {
				break // ended, or deleted with its thread
			}
			return Followed{Last: last}, err
		}
		if err := fn(ev); err != nil {
			return Followed{Last: last}, err
		}
		last = ev.Seq
	}
	if err := ctx.Err(); err != nil {
		return Followed{Last: last}, err
	}
	if je.complete {
		return Followed{Last: last, End: je.end}, nil
	}
	// The run ended: hand over what the log has past last (the watcher
	// may have stopped the join before the tail was read).
	evs, err := log.ReadEvents(ctx, tenant, runID, last, 0)
	if errors.Is(err, db.ErrNotFound) {
		return Followed{Last: last}, nil // deleted with its thread
	}
	if err != nil {
		return Followed{Last: last}, err
	}
	for _, ev := range evs {
		if err := fn(ev); err != nil {
			return Followed{Last: last}, err
		}
		last = ev.Seq
	}
	return Followed{Last: last}, nil
}

// pollEnd calls ended every poll until it reports the run over (then
// cancel) or ctx ends. The returned function stops it, waiting for a call
// in progress, so ctx should end first.
func pollEnd(ctx context.Context, poll time.Duration, ended func(context.Context) (bool, error), cancel context.CancelFunc) (stop func()) {
	return repeat.Every(poll, func() bool {
		if ctx.Err() != nil {
			return false
		}
		if done, err := ended(ctx); err == nil && done {
			cancel()
			return false
		}
		return true
	})
}
