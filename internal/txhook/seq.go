package txhook

import (
	"context"
	"reflect"
)

// Seqs asks the statement of a transaction that already writes a run's
// row (its claim, its finish) to also reserve the Seq numbers of the
// events the same transaction appends, so the append bumps nothing: one
// statement fewer in the writer's turn. The caller makes one per
// transaction with the count of events it will append (WithSeqs); the
// first statement that reserves them (Reserve) records the last Seq it
// reserved, and the append takes them (Take).
type Seqs struct {
	tx            any
	tenant, runID string
	n             int
	last          int64
	reserved      bool
	taken         bool
}

type seqsKey struct{}

// WithSeqs returns ctx asking the statement of tx that writes tenant's run
// runID to reserve n event Seq numbers, and the reservation it fills. n <=
// 0 asks nothing (ctx is returned as it is, with a nil reservation).
func WithSeqs(ctx context.Context, tx any, tenant, runID string, n int) (context.Context, *Seqs) {
	if n <= 0 || tx == nil {
		return ctx, nil
	}
	s := &Seqs{tx: tx, tenant: tenant, runID: runID, n: n}
	return context.WithValue(ctx, seqsKey{}, s), s
}

// Want returns how many event Seq numbers ctx asks the statement of tx
// that writes tenant's run runID to reserve: 0 when it asks none, or when
// they are reserved already. A backend that folds the reservation into
// the statement passes the count to it and then calls Reserve.
func Want(ctx context.Context, tx any, tenant, runID string) int {
	s := seqsOf(ctx, tx, tenant, runID)
	if s == nil || s.reserved {
		return 0
	}
	return s.n
}

// Reserve records that the statement of tx reserved the Want(ctx, tx,
// tenant, runID) Seq numbers ending at last (the run's event Seq after
// it). It does nothing when ctx asked for none.
func Reserve(ctx context.Context, tx any, tenant, runID string, last int64) {
	if s := seqsOf(ctx, tx, tenant, runID); s != nil && !s.reserved {
		s.last, s.reserved = last, true
	}
}

// Take returns the last of the n Seq numbers a statement of tx reserved
// for tenant's run runID, and true, once: the append of those n events
// numbers them last-n+1..last and bumps nothing. It is false when nothing
// was reserved for tx, for another count, or when they were taken.
func Take(ctx context.Context, tx any, tenant, runID string, n int) (int64, bool) {
	s := seqsOf(ctx, tx, tenant, runID)
	if s == nil || !s.reserved || s.taken || s.n != n {
		return 0, false
	}
	s.taken = true
	return s.last, true
}

// seqsOf is ctx's reservation when it is for tx and tenant's run runID.
func seqsOf(ctx context.Context, tx any, tenant, runID string) *Seqs {
	s, _ := ctx.Value(seqsKey{}).(*Seqs)
	if s == nil || tx == nil || s.tenant != tenant || s.runID != runID {
		return nil
	}
	if t := reflect.TypeOf(tx); t != reflect.TypeOf(s.tx) || !t.Comparable() || s.tx != tx {
		return nil
	}
	return s
}

// Unused reports whether s holds Seq numbers a statement reserved that no
// append took: the transaction must then fail, or the run's event Seqs
// would skip them. A nil s holds none.
func (s *Seqs) Unused() bool {
	return s != nil && s.reserved && !s.taken
}
