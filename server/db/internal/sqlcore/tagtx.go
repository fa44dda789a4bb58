package sqlcore

import (
	"context"

	"github.com/trellis-agents/trellis/server/db/internal/dbutil"
)

// TagThreadTx records the graph and assistant of the thread's latest run
// in its metadata inside tx, a write transaction of the same database
// someone else opened (db.TxThreadTagger): the run's accept. Nothing
// reads its result, so it travels with the transaction's next statement
// or its COMMIT where the connection can defer it.
func (s *Store) TagThreadTx(ctx context.Context, tx any, tenant, threadID, graphID, assistantID string) error {
	c, err := s.d.Wrap(tx)
	if err != nil {
		return s.wrap(err, "TagThreadTx")
	}
	if err := execLater(ctx, c, s.q.TagThread, graphID, assistantID, s.d.Time(dbutil.Now()), tenant, threadID); err != nil {
		return s.wrap(err, "record the graph and assistant of thread %q", threadID)
	}
	return nil
}
