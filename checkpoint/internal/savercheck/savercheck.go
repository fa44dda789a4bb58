// Package savercheck holds the argument checks every checkpoint saver
// makes before it prunes or removes checkpoints, written once so that the
// savers refuse the same calls with the same errors. It takes plain values
// (not checkpoint's types), so package checkpoint's own Memory can use it
// too.
package savercheck

import (
	"context"
	"fmt"
	"time"
)

// Prune checks a Prune call: a done context is its error; a negative
// limit is an error whose message starts with prefix (the saver's package,
// "checkpoint" or "checkpoint/redis"). run is false when both limits are
// 0, where Prune removes nothing and returns 0.
func Prune(ctx context.Context, prefix string, keepLatest int, olderThan time.Duration) (run bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if keepLatest < 0 || olderThan < 0 {
		return false, fmt.Errorf("%s: prune: negative limit (keep latest %d, older than %s)", prefix, keepLatest, olderThan)
	}
	return keepLatest != 0 || olderThan != 0, nil
}

// Remove checks a RemoveCheckpoints call on ref (its thread ID thread): a
// done context is its error, an empty thread is emptyThread, an empty ID
// among ids an error whose message starts with prefix. run is false when
// ids is empty, where RemoveCheckpoints removes nothing and returns 0.
func Remove(ctx context.Context, prefix string, ref fmt.Stringer, thread string, emptyThread error, ids []string) (run bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if thread == "" {
		return false, emptyThread
	}
	for _, id := range ids {
		if id == "" {
			return false, fmt.Errorf("%s: remove checkpoints of %s: an ID is empty", prefix, ref)
		}
	}
	return len(ids) > 0, nil
}
