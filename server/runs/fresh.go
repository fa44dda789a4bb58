package runs

import (
	"context"

	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/server/db"
)

// A run accepted on a thread with no other live run, by the transaction
// that wrote its pre-claim, is the run the hand-off's Advance will find
// first (nextPending): runs accepted after it are newer, and no other run
// of the thread can start while its pre-claim lives (a claim of the
// oldest pending run, which is it, is refused). Create notes such a run,
// and the hand-off's Advance of its thread takes it instead of reading
// the thread's pending runs again: one read fewer a run. It is a hint
// only: Advance uses it only while the hand-off holds the run's pre-claim
// (txhook.HeldBy), and the run's deferred claim checks in its first
// write, as for any run, that it is still pending and unclaimed.

// freshLimit bounds the runs noted and not yet taken (their thread's
// Advance happened elsewhere, or never): past it the notes are dropped.
const freshLimit = 1024

// freshRun is a run Create noted for its thread's next Advance.
type freshRun struct {
	run db.Run
	pre *db.Assistant // the run's assistant as it was accepted; nil when it names a version
}

// threadKey is a tenant's thread as a map key.
func threadKey(tenant, thread string) string { return tenant + "\x00" + thread }

// noteFresh records run, accepted with no other live run on its thread,
// for the thread's next Advance in this process.
func (s *Service) noteFresh(tenant string, run db.Run, pre *db.Assistant) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fresh == nil || len(s.fresh) >= freshLimit {
		s.fresh = map[string]freshRun{}
	}
	s.fresh[threadKey(tenant, run.ThreadID)] = freshRun{run: run, pre: pre}
}

// forgetFresh drops the note of the thread's run runID, if it is noted:
// it was cancelled, or deleted with its thread ("" drops any run's), and
// an Advance must not execute it from the note.
func (s *Service) forgetFresh(tenant, thread, runID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := threadKey(tenant, thread)
	if f, ok := s.fresh[k]; ok && (runID == "" || f.run.ID == runID) {
		delete(s.fresh, k)
	}
}

// takeFresh returns and forgets the run noted for the thread, when ctx's
// hand-off holds its pre-claim and runs may execute before their claim.
func (s *Service) takeFresh(ctx context.Context, tenant, thread string) (freshRun, bool) {
	s.mu.Lock()
	f, ok := s.fresh[threadKey(tenant, thread)]
	if ok {
		delete(s.fresh, threadKey(tenant, thread))
	}
	s.mu.Unlock()
	if !ok || !s.deferClaims() || !txhook.HeldBy(ctx, tenant, f.run.ID) {
		return freshRun{}, false
	}
	return f, true
}
