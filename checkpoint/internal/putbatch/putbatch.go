// Package putbatch holds the prelude of PutBatch that the SQL savers
// (checkpoint/postgres, checkpoint/sqlite) share: the argument checks and
// the preparation of each entry, written once so that both refuse the same
// calls with the same errors and prepare entries the same way.
package putbatch

import (
	"context"

	"github.com/trellis-agents/trellis/checkpoint"
)

// Prepare checks a PutBatch call on ref — a done context is its error,
// then checkpoint.CheckBatch — and prepares each entry in order with
// prepare, which is given the entry's own reference (ref's thread and
// namespace, the entry's ID). It returns the first error, from the checks
// or from prepare, and the prepared entries otherwise.
func Prepare[P any](ctx context.Context, ref checkpoint.Ref, entries []checkpoint.Entry, prepare func(out checkpoint.Ref, e checkpoint.Entry) (P, error)) ([]P, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkpoint.CheckBatch(ref, entries); err != nil {
		return nil, err
	}
	ps := make([]P, len(entries))
	for i, e := range entries {
		out := checkpoint.Ref{ThreadID: ref.ThreadID, Namespace: ref.Namespace, ID: e.Checkpoint.ID}
		p, err := prepare(out, e)
		if err != nil {
			return nil, err
		}
		ps[i] = p
	}
	return ps, nil
}
