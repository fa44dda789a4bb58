package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/internal/hoptrace"
)

// eventLog buffers a run's events and appends them to its durable log,
// fenced by the run's lease, then hands them to live subscribers. Events
// are flushed in batches (token chunks add up quickly) and always before
// the engine saves pending writes or a checkpoint (see fencedSaver), so a
// task's events are durable no later than its writes.
type eventLog struct {
	db     db.Events
	broker *Broker
	// joint, when set, appends events inside the saver's transaction
	// (Config.JoinStepWrites): events that arrive while no task runs wait
	// for the step's checkpoint and commit with it.
	joint db.TxEvents

	mu     sync.Mutex
	l      db.Lease
	buf    []db.Event
	last   time.Time
	lost   bool
	failed error // the first append error: the run stops on it
	tasks  int   // tasks of the root graph running now (joint only)
	// pending is the run's claim while it waits for the run's first
	// write (see deferredClaim); l holds no token until it commits.
	pending *deferredClaim
	// unclaimed is the failure of that claim: nothing more is written.
	unclaimed error
	// seq is the Seq of the last event this log appended (0: none).
	seq int64
	// final is the run's last checkpoint, held for the transaction that
	// finishes the run (see finalfold.go); set by the engine, read once
	// the run's stream has ended.
	final *graph.FinalWrite
	// timer flushes chunks left in the buffer when no event follows them
	// within flushAfter (a model pausing mid-reply, or waiting on
	// something), so a streaming client never waits on a quiet model.
	timer *time.Timer
}

// flushEvery bounds how long and how many events wait in the buffer.
const (
	flushAfter = 50 * time.Millisecond
	flushBatch = 64
)

func newEventLog(d db.Events, b *Broker, l db.Lease) *eventLog {
	return &eventLog{db: d, broker: b, l: l, last: time.Now()}
}

func (e *eventLog) lease() db.Lease {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.l
}

func (e *eventLog) setLease(l db.Lease) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.l = l
}

// lose marks the lease lost: nothing more is written.
func (e *eventLog) lose() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lost = true
}

// add buffers an event, flushing when the buffer is due. Message chunks
// wait for the next flush; every other event flushes at once, so a
// joiner sees run-level events promptly.
func (e *eventLog) add(ctx context.Context, name string, data json.RawMessage) {
	e.mu.Lock()
	e.buf = append(e.buf, db.Event{RunID: e.l.RunID, Event: name, Data: data})
	due := len(e.buf) >= flushBatch || time.Since(e.last) >= flushAfter || !isChunk(name) && (e.joint == nil || e.tasks > 0)
	if !due && e.timer == nil {
		e.timer = time.AfterFunc(flushAfter, func() { e.flushLate(ctx) })
	}
	e.mu.Unlock()
	if due {
		if ctx.Err() != nil {
			// The run was cancelled (or timed out): the events that tell
			// how its tasks ended are still its own, fenced by its lease,
			// and a failed append here would leave the run unfinished.
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
		}
		if err := e.flush(ctx); err != nil {
			e.mu.Lock()
			if e.failed == nil {
				e.failed = err
			}
			e.mu.Unlock()
		}
	}
}

// flushLate flushes the chunks the timer found waiting. It ignores a
// failed append (the buffer is kept, and the next add or flush retries and
// reports it), so a timer firing as the run ends cannot fail the run.
func (e *eventLog) flushLate(ctx context.Context) {
	e.mu.Lock()
	e.timer = nil
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_ = e.flush(ctx)
}

// taskStarted and taskEnded count the root graph's running tasks: while
// one runs, its events are flushed at once (a node may run for long);
// between tasks they wait for the step's checkpoint.
func (e *eventLog) taskStarted() {
	e.mu.Lock()
	e.tasks++
	e.mu.Unlock()
}

func (e *eventLog) taskEnded() {
	e.mu.Lock()
	e.tasks = max(0, e.tasks-1)
	e.mu.Unlock()
}

// noteSeqLocked records the Seq of the last of evs, just appended. e.mu
// is held.
func (e *eventLog) noteSeqLocked(evs []db.Event) {
	if len(evs) > 0 {
		e.seq = evs[len(evs)-1].Seq
	}
}

// lastSeq returns the Seq of the last event the log appended (0: none).
func (e *eventLog) lastSeq() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.seq
}

func isChunk(name string) bool {
	return name == "messages" || len(name) > 9 && name[:9] == "messages|"
}

// flush appends the buffered events.
func (e *eventLog) flush(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.last = time.Now()
	if e.failed != nil {
		return e.failed
	}
	if len(e.buf) == 0 {
		return nil
	}
	if e.lost {
		return db.ErrLeaseLost
	}
	if e.unclaimed != nil {
		return e.unclaimed
	}
	if err := e.claimNowLocked(ctx); err != nil {
		return err
	}
	evs, err := e.db.AppendEvents(ctx, e.l, e.buf)
	if err != nil {
		if errors.Is(err, db.ErrLeaseLost) {
			e.lost = true
		}
		return err
	}
	e.buf = e.buf[:0]
	e.noteSeqLocked(evs)
	e.broker.Publish(e.l.RunID, evs...)
	return nil
}

// fencedSaver is the run's view of the checkpoint saver: it flushes the
// run's events before every write, and refuses writes once the run's
// lease is lost (another worker owns the run; the saver's head check
// covers the moments before this worker notices).
type fencedSaver struct {
	checkpoint.Saver
	log *eventLog
}

var errFenced = errors.New("runs: the run's lease was lost; this worker must not write")

func (f *fencedSaver) before(ctx context.Context) error {
	if err := f.log.flush(ctx); err != nil {
		if errors.Is(err, db.ErrLeaseLost) {
			return errFenced
		}
		return err
	}
	return nil
}

// joined runs put, a write of the saver, with the buffered events and the
// lease check added to its transaction (internal/txhook). A saver that
// does not run the hook gets the events flushed after its write instead,
// as before it when not joined.
func (f *fencedSaver) joined(ctx context.Context, put func(ctx context.Context) error) error {
	e := f.log
	if e.joint == nil {
		if err := f.before(ctx); err != nil {
			return err
		}
		return put(ctx)
	}
	e.mu.Lock()
	if e.failed != nil {
		err := e.failed
		e.mu.Unlock()
		return err
	}
	if e.lost {
		e.mu.Unlock()
		return errFenced
	}
	if e.unclaimed != nil {
		err := e.unclaimed
		e.mu.Unlock()
		return err
	}
	var (
		called   bool
		written  []db.Event
		claimErr error
	)
	l, buf, pend := e.l, e.buf, e.pending
	err := put(txhook.With(ctx, func(ctx context.Context, tx any) error {
		called = true
		// The statement that writes the run's row in tx (its claim, or its
		// finish) also reserves the Seq numbers of the buffered events, so
		// their append bumps nothing (txhook.Seqs).
		tenant, runID := l.Tenant, l.RunID
		if pend != nil {
			tenant, runID = pend.tenant, pend.runID
		}
		ctx, seqs := txhook.WithSeqs(ctx, tx, tenant, runID, len(buf))
		var (
			ended    any
			finished bool
		)
		if pend != nil {
			// The run's claim commits with its first write.
			_, nl, err := pend.tx.ClaimRunTx(ctx, tx, pend.tenant, pend.runID, pend.owner, pend.ttl)
			if err != nil {
				claimErr = err
				return err
			}
			l = nl
			// The claim wrote the lease in tx: the checks after it
			// need not read it back.
			ctx = txhook.WithFenced(ctx, tx, l.Tenant, l.RunID, l.Token)
		} else if hasFinish(ctx) {
			// A run's end, with its last checkpoint: its UPDATE checks the
			// lease (and holds it until tx ends) and reserves the Seqs,
			// so the events come after it; its end hooks after those.
			var err error
			if ended, finished, err = runFinish(ctx, tx, l); err != nil {
				return err
			}
			ctx = txhook.WithFenced(ctx, tx, l.Tenant, l.RunID, l.Token)
		}
		evs, err := e.joint.AppendEventsTx(ctx, tx, l, buf)
		written = evs
		if err != nil {
			return err
		}
		if seqs.Unused() {
			return fmt.Errorf("runs: run %q reserved %d event Seqs its append did not take; nothing was written", l.RunID, len(buf))
		}
		if !finished {
			// The append checked the lease (and holds it until tx ends):
			// the finish's check would read the same row again.
			ctx = txhook.WithFenced(ctx, tx, l.Tenant, l.RunID, l.Token)
			// A run's end, with its last checkpoint.
			if ended, finished, err = runFinish(ctx, tx, l); err != nil {
				return err
			}
		}
		if !finished {
			return nil
		}
		// Last: what ends with the run (the queue's job, the online
		// samples) marks its work done only after every other statement
		// of tx ran.
		return endHooks(ctx, tx, ended)
	}))
	switch {
	case err == nil && called:
		if pend != nil {
			e.l, e.pending = l, nil
		}
		e.buf = e.buf[:0]
		e.last = time.Now()
		e.noteSeqLocked(written)
		// Published under the lock, as flush does: subscribers must get
		// the events in their order.
		e.broker.Publish(l.RunID, written...)
		e.mu.Unlock()
		return nil
	case claimErr != nil:
		err = e.claimFailedLocked(claimErr)
		e.mu.Unlock()
		return err
	case errors.Is(err, db.ErrLeaseLost):
		e.lost = true
		e.mu.Unlock()
		return errFenced
	}
	e.mu.Unlock()
	if err != nil {
		return err
	}
	if err := e.claimed(ctx); err != nil {
		return err
	}
	return f.before(ctx)
}

func (f *fencedSaver) Put(ctx context.Context, ref checkpoint.Ref, cp checkpoint.Checkpoint, md checkpoint.Metadata) (checkpoint.Ref, error) {
	var out checkpoint.Ref
	err := f.joined(ctx, func(ctx context.Context) error {
		var err error
		out, err = f.Saver.Put(ctx, ref, cp, md)
		return err
	})
	if err != nil {
		return checkpoint.Ref{}, err
	}
	return out, nil
}

func (f *fencedSaver) PutWrites(ctx context.Context, ref checkpoint.Ref, taskID string, writes []checkpoint.PendingWrite) error {
	return f.joined(ctx, func(ctx context.Context) error {
		return f.Saver.PutWrites(ctx, ref, taskID, writes)
	})
}

// PutBatch stores a run's successive checkpoints (its pre-input
// checkpoint and its input's) in one fenced transaction with the run's
// buffered events and, for its first write, its claim, when the saver
// stores batches (checkpoint.BatchPutter); otherwise the engine puts them
// one by one.
func (f *fencedSaver) PutBatch(ctx context.Context, ref checkpoint.Ref, entries []checkpoint.Entry) (checkpoint.Ref, error) {
	b, ok := f.Saver.(checkpoint.BatchPutter)
	if !ok {
		return checkpoint.Ref{}, fmt.Errorf("runs: %T cannot store checkpoints in batches: %w", f.Saver, errors.ErrUnsupported)
	}
	var out checkpoint.Ref
	err := f.joined(ctx, func(ctx context.Context) error {
		var err error
		out, err = b.PutBatch(ctx, ref, entries)
		return err
	})
	if err != nil {
		return checkpoint.Ref{}, err
	}
	hoptrace.Mark("first-step")
	return out, nil
}

// AppendWrites appends a durable step's write in the fenced transaction
// with the run's buffered events, when the saver can append
// (checkpoint.WriteAppender); otherwise the engine uses PutWrites.
func (f *fencedSaver) AppendWrites(ctx context.Context, ref checkpoint.Ref, taskID string, writes []checkpoint.PendingWrite) error {
	a, ok := f.Saver.(checkpoint.WriteAppender)
	if !ok {
		return fmt.Errorf("runs: %T cannot append pending writes: %w", f.Saver, errors.ErrUnsupported)
	}
	return f.joined(ctx, func(ctx context.Context) error {
		return a.AppendWrites(ctx, ref, taskID, writes)
	})
}
