package sqlitedb

import (
	"sync/atomic"
	"time"
)

// WriteStats counts, over every file this process has open, how long the
// write connection was held and how many write transactions and physical
// commits ran on it: for measuring whether the one writer is the bound of
// a workload (its busy fraction is Held over the wall time).
type WriteStats struct {
	// Held is the total time a caller held the write connection: from the
	// start of its transaction (or autocommit statement) to its end.
	Held time.Duration
	// Transactions counts the callers' write transactions.
	Transactions uint64
	// Commits counts the physical COMMITs: fewer than Transactions when
	// transactions were committed in groups.
	Commits uint64
}

var writeHeld, writeTxs, writeCommits atomic.Int64

// ReadWriteStats returns the counts since the process started; subtract
// two readings for an interval.
func ReadWriteStats() WriteStats {
	return WriteStats{Held: time.Duration(writeHeld.Load()), Transactions: uint64(writeTxs.Load()), Commits: uint64(writeCommits.Load())}
}

// Sub returns s minus an earlier reading.
func (s WriteStats) Sub(earlier WriteStats) WriteStats {
	return WriteStats{Held: s.Held - earlier.Held, Transactions: s.Transactions - earlier.Transactions, Commits: s.Commits - earlier.Commits}
}
