package runs

import (
	"context"
	"fmt"

	"github.com/trellis-agents/trellis/server/db"
)

// TxEnqueuer enqueues a thread as an Enqueuer does, running fn in the
// queue's write transaction that inserts the job, so fn's statements and
// the job commit together (server/queue's Queue.EnqueueWith). stored says
// whether fn's statements committed.
type TxEnqueuer func(ctx context.Context, tenant, thread string, fn func(ctx context.Context, tx any) error) (stored bool, err error)

// UseTxEnqueuer makes Create store a run, and its thread when the request
// creates it, in the transaction that queues the run's job, instead of in
// two transactions of their own before it: one write to accept a run
// instead of three. The queue and DB must keep their tables in one
// database (the queue's transaction is handed to DB), and DB must
// implement db.TxRunCreator. Create then enqueues through fn instead of
// the Enqueuer it is given, for the reject and enqueue strategies (the
// others stop older runs first, so the job is queued after that as
// before). Set it once, before the service takes requests.
func (s *Service) UseTxEnqueuer(fn TxEnqueuer) error {
	if _, ok := s.cfg.DB.(db.TxRunCreator); !ok {
		return fmt.Errorf("runs: the DB (%T) cannot create runs in the queue's transaction (db.TxRunCreator)", s.cfg.DB)
	}
	s.txEnqueue.Store(&fn)
	return nil
}

// acceptTx stores run, and thread first when it is not nil, in the
// transaction that queues the thread's job, and when tag is not nil
// records its graph and assistant in the thread's metadata there too
// (db.TxThreadTagger; the caller checked). fresh, when not nil, says the
// thread had no live run: the run is noted for its thread's next Advance
// with fresh as its assistant (fresh.go; a nil *fresh for a run naming a
// version). stored says whether they were stored; err with stored set
// means the job could not be made sure of.
func (s *Service) acceptTx(ctx context.Context, txe TxEnqueuer, tenant string, thread *db.Thread, run db.Run, tag *db.Assistant, fresh **db.Assistant) (created db.Run, stored bool, err error) {
	creator := s.cfg.DB.(db.TxRunCreator) // checked by UseTxEnqueuer
	stored, err = txe(ctx, tenant, run.ThreadID, func(ctx context.Context, tx any) error {
		var err error
		if tag != nil {
			created, err = s.cfg.DB.(db.TxThreadTagger).CreateTaggedRunTx(ctx, tx, tenant, thread, run, db.ThreadTag{GraphID: tag.GraphID, AssistantID: tag.ID})
		} else {
			created, err = creator.CreateRunTx(ctx, tx, tenant, thread, run)
		}
		if err != nil {
			return err
		}
		if fresh != nil {
			// Before the commit, which may start the thread's Advance.
			s.noteFresh(tenant, created, *fresh)
		}
		return nil
	})
	return created, stored, creator.ClassifyTxError(err)
}
