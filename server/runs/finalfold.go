package runs

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/db"
)

// A run that completes ends in one transaction: its last checkpoint, the
// events of its last step, its end with the thread's result, and its
// job's completion (the end hook). The engine holds the last checkpoint
// back (graph.WithFinalWrite) and the finish writes it through the
// fenced saver, whose transaction hook then also finishes the run
// (db.TxResultFinisher). A run that does not complete (an interrupt, an
// error, a cancel, a worker stopping) writes the held checkpoint at once,
// as before, and finishes as before; a lost lease writes neither.

// foldsFinish reports whether the run's end can commit with its last
// checkpoint: the DB finishes inside the saver's transactions, which
// already carry the run's events.
func (s *Service) foldsFinish(log *eventLog) bool {
	_, tx := s.cfg.DB.(db.TxResultFinisher)
	_, rf := s.cfg.DB.(db.ResultFinisher)
	return tx && rf && log.joint != nil
}

// finishKey carries the finish that fencedSaver's transaction hook runs
// with the run's events.
type finishKey struct{}

// finishFunc finishes a run in tx under lease l, without running ctx's
// end hooks (txhook.WithoutEnd), and returns what it ended for them.
type finishFunc func(ctx context.Context, tx any, l db.Lease) (ended any, err error)

// runFinish calls the finish ctx carries, if any, with the run's lease
// as the transaction holds it (claimed in it, when it is the run's first
// write), and reports whether there was one. ctx's end hooks (the
// queue's job completion, the online samples) do not run in it: the
// caller runs them with endHooks once the transaction's other statements
// (the events' append) are in, so that no hook marks its work done while
// a statement that can fail is still to come.
func runFinish(ctx context.Context, tx any, l db.Lease) (ended any, finished bool, err error) {
	fn, _ := ctx.Value(finishKey{}).(finishFunc)
	if fn == nil {
		return nil, false, nil
	}
	ended, err = fn(txhook.WithoutEnd(ctx), tx, l)
	return ended, true, err
}

// endHooks runs ctx's end hooks in tx for the run a finish ended: the
// last statements before the commit.
func endHooks(ctx context.Context, tx any, ended any) error {
	return txhook.RunEndOf(ctx, tx, ended)
}

// hasFinish reports whether ctx carries a finish for runFinish.
func hasFinish(ctx context.Context) bool {
	fn, _ := ctx.Value(finishKey{}).(finishFunc)
	return fn != nil
}

// settleFinal writes the held last checkpoint now unless the run
// completed (no error, no interrupt, not stopped): then it stays held for
// finishFinal. A lost lease writes nothing. It returns the run's error,
// which a failed write becomes when the run had none.
func settleFinal(ctx, outer context.Context, log *eventLog, streamErr error, interrupted bool) error {
	fw := log.final
	if fw == nil {
		return streamErr
	}
	cause := context.Cause(ctx)
	if streamErr == nil && !interrupted && cause == nil && outer.Err() == nil {
		return nil
	}
	log.final = nil
	if errors.Is(cause, errLeaseLost) {
		return streamErr
	}
	if err := fw.Put(context.WithoutCancel(ctx)); err != nil && streamErr == nil {
		return err
	}
	return streamErr
}

// writeHeldFinal writes the run's held last checkpoint on its own, if
// one is still held: the run did not finish as one that completed (its
// stream failed after the engine handed the checkpoint over). A lost
// lease writes nothing.
func writeHeldFinal(ctx context.Context, log *eventLog) {
	fw := log.final
	if fw == nil {
		return
	}
	log.final = nil
	if !errors.Is(context.Cause(ctx), errLeaseLost) {
		// A failure is the run's own already; the fenced saver refuses
		// the write once the lease is lost.
		_ = fw.Put(context.WithoutCancel(ctx))
	}
}

// finalResult is the thread's result after a run that completed, from the
// state its held checkpoint saves: what record reads back once it is
// written.
func (s *Service) finalResult(fw *graph.FinalWrite) (*db.ThreadResult, error) {
	res := db.ThreadResult{Status: db.ThreadIdle}
	var err error
	if res.Values, err = s.cfg.Wire.State(fw.State); err != nil {
		return nil, err
	}
	res.Interrupts, _ = json.Marshal(map[string][]map[string]any{})
	return &res, nil
}

// finishFinal writes the run's held last checkpoint with its buffered
// events and, in the same transaction, its end (done reports that it
// did), and returns what the finish read (db.TxResultFinisher). When the saver did not run the hook (the run's end is then not
// written), done is false with a nil error and the caller finishes as
// usual. An error wrapping errFenced is a lost lease: nothing was
// written. Another error leaves the checkpoint unwritten and the run
// running; the caller finishes it as failed.
func (s *Service) finishFinal(ctx context.Context, log *eventLog, status db.RunStatus, usage json.RawMessage, errMsg string, res db.ThreadResult) (db.Run, db.Thread, db.Pending, bool, error) {
	fw := log.final
	log.final = nil
	fin := s.cfg.DB.(db.TxResultFinisher)
	var (
		run db.Run
		th  db.Thread
		p   db.Pending
		ran bool
	)
	fctx := context.WithValue(ctx, finishKey{}, finishFunc(func(ctx context.Context, tx any, l db.Lease) (any, error) {
		r, t, pp, err := fin.FinishRunWithResultTx(ctx, tx, l, status, usage, errMsg, res)
		if err != nil {
			return nil, err
		}
		run, th, p, ran = r, t, pp, true
		return r, nil
	}))
	if err := fw.Put(fctx); err != nil {
		return db.Run{}, db.Thread{}, db.Pending{}, false, err
	}
	return run, th, p, ran, nil
}
