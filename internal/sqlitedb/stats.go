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
	// InSQL is the part of Held spent in SQLite, running the callers'
	// statements; the rest is the callers' own work between statements,
	// waiting to be scheduled, and the group protocol.
	InSQL time.Duration
	// Committing is the time spent in physical COMMITs (part of Held).
	Committing time.Duration
	// Handoff is the part of Held from the moment a caller handed the
	// turn to a waiting one until that one ran: time the Go scheduler
	// (or, on a loaded machine, the OS) kept the turn unused.
	Handoff time.Duration
	// Transactions counts the callers' write transactions.
	Transactions uint64
	// Commits counts the physical COMMITs: fewer than Transactions when
	// transactions were committed in groups.
	Commits uint64
}

var writeHeld, writeInSQL, writeCommitting, writeHandoff, writeTxs, writeCommits atomic.Int64

// ReadWriteStats returns the counts since the process started; subtract
// two readings for an interval.
func ReadWriteStats() WriteStats {
	return WriteStats{Held: time.Duration(writeHeld.Load()), InSQL: time.Duration(writeInSQL.Load()),
		Committing: time.Duration(writeCommitting.Load()), Handoff: time.Duration(writeHandoff.Load()), Transactions: uint64(writeTxs.Load()), Commits: uint64(writeCommits.Load())}
}

// Sub returns s minus an earlier reading.
func (s WriteStats) Sub(earlier WriteStats) WriteStats {
	return WriteStats{Held: s.Held - earlier.Held, InSQL: s.InSQL - earlier.InSQL, Committing: s.Committing - earlier.Committing,
		Handoff:      s.Handoff - earlier.Handoff,
		Transactions: s.Transactions - earlier.Transactions, Commits: s.Commits - earlier.Commits}
}
