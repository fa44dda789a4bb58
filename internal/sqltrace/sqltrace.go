// Package sqltrace lets a test see every statement the database backends
// send and group them into transactions, so that it can count the write
// transactions a piece of work costs and fail when they grow.
//
// The SQLite connections of internal/sqlitedb and the PostgreSQL pools of
// internal/pgdb report to the observer set with Observe. With no observer
// (production) a backend pays one atomic load per statement on SQLite and
// nothing on PostgreSQL, whose tracer is installed only in pools opened
// while an observer is set.
package sqltrace

import (
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Kind is what an Event reports.
type Kind int

// Kinds of Event.
const (
	// Statement: one statement ran.
	Statement Kind = iota
	// Begin: a transaction began on the connection.
	Begin
	// Commit: the connection's transaction committed.
	Commit
	// Rollback: the connection's transaction rolled back.
	Rollback
	// Trip: a round trip to the server that no other event of it counts
	// (a batch sent inside a transaction).
	Trip
)

// Event is one statement or transaction boundary on one connection.
type Event struct {
	// Backend is "sqlite" or "postgres".
	Backend string
	// Conn tells the connections of a backend apart.
	Conn uint64
	// Kind says what happened.
	Kind Kind
	// SQL is the statement's text (Statement only).
	SQL string
	// Changed is how many rows the statement inserted, updated or
	// deleted (Statement), or the transaction did (Commit; -1 when the
	// backend does not know and the statements tell).
	Changed int64
	// Trips is how many round trips to the server the event stands for:
	// 1 for a statement, BEGIN or COMMIT sent on its own, 0 for one that
	// travelled in a batch whose round trip another event counts. Only
	// the PostgreSQL tracer sets it (an embedded SQLite has no server).
	Trips int
}

var observer atomic.Pointer[func(Event)]

// Observe makes fn receive every event until the returned function is
// called. fn is called from many goroutines at once. One observer is set
// at a time: a second Observe replaces the first.
func Observe(fn func(Event)) (stop func()) {
	observer.Store(&fn)
	return func() { observer.CompareAndSwap(&fn, nil) }
}

// Active reports whether an observer is set.
func Active() bool { return observer.Load() != nil }

// Emit reports e to the observer, if any.
func Emit(e Event) {
	if fn := observer.Load(); fn != nil {
		(*fn)(e)
	}
}

// Stmt is a statement of a transaction, as a Recorder keeps it.
type Stmt struct {
	SQL     string
	Changed int64
}

// Tx is a finished transaction: an explicit one (BEGIN … COMMIT or
// ROLLBACK) or one statement run outside any (autocommit).
type Tx struct {
	Backend    string
	Autocommit bool
	Committed  bool // false: rolled back
	Changed    int64
	Stmts      []Stmt
	// Trips is the round trips to the server the transaction took, its
	// BEGIN and COMMIT included (see Event.Trips).
	Trips int
}

// Wrote reports whether the transaction committed a change.
func (t Tx) Wrote() bool {
	if !t.Committed {
		return false
	}
	if t.Changed > 0 {
		return true
	}
	for _, s := range t.Stmts {
		if s.Changed > 0 {
			return true
		}
	}
	return false
}

// Recorder groups the events it observes into transactions per
// connection. Its methods are safe for concurrent use.
type Recorder struct {
	mu   sync.Mutex
	open map[connKey]*Tx
	done []Tx
}

type connKey struct {
	backend string
	conn    uint64
}

// NewRecorder returns an empty Recorder; pass its Observe to Observe.
func NewRecorder() *Recorder { return &Recorder{open: map[connKey]*Tx{}} }

// Observe records e.
func (r *Recorder) Observe(e Event) {
	k := connKey{e.Backend, e.Conn}
	r.mu.Lock()
	defer r.mu.Unlock()
	tx := r.open[k]
	switch e.Kind {
	case Begin:
		if tx != nil { // a nested BEGIN: keep the outer transaction
			tx.Trips += e.Trips
			return
		}
		r.open[k] = &Tx{Backend: e.Backend, Trips: e.Trips}
	case Trip:
		if tx != nil {
			tx.Trips += e.Trips
			return
		}
		r.done = append(r.done, Tx{Backend: e.Backend, Autocommit: true, Committed: true, Trips: e.Trips})
	case Commit, Rollback:
		if tx == nil {
			return
		}
		tx.Trips += e.Trips
		delete(r.open, k)
		tx.Committed = e.Kind == Commit
		if e.Changed > 0 {
			tx.Changed = e.Changed
		}
		r.done = append(r.done, *tx)
	case Statement:
		if tx != nil {
			tx.Stmts = append(tx.Stmts, Stmt{SQL: e.SQL, Changed: e.Changed})
			tx.Trips += e.Trips
			return
		}
		r.done = append(r.done, Tx{Backend: e.Backend, Autocommit: true, Committed: true, Trips: e.Trips, Stmts: []Stmt{{SQL: e.SQL, Changed: e.Changed}}})
	}
}

// Take returns the transactions finished since the last Take, in the
// order they finished, and forgets them.
func (r *Recorder) Take() []Tx {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.done
	r.done = nil
	return d
}

// Summary counts a list of transactions.
type Summary struct {
	// Statements is every statement run, reads included.
	Statements int
	// WriteTx is the transactions that committed a change.
	WriteTx int
	// WriteStmts is the statements of those transactions.
	WriteStmts int
	// Trips is the round trips to the server, BEGIN and COMMIT included
	// (PostgreSQL only; see Event.Trips).
	Trips int
	// WriteTrips is the round trips of the write transactions.
	WriteTrips int
}

// Summarize counts txs, leaving out those skip reports (background work
// unrelated to what is measured); skip may be nil.
func Summarize(txs []Tx, skip func(Tx) bool) Summary {
	var s Summary
	for _, t := range txs {
		if skip != nil && skip(t) {
			continue
		}
		s.Statements += len(t.Stmts)
		s.Trips += t.Trips
		if t.Wrote() {
			s.WriteTx++
			s.WriteStmts += len(t.Stmts)
			s.WriteTrips += t.Trips
		}
	}
	return s
}

// Breakdown lists the write transactions of txs, one line per statement
// (its text cut to width characters on one line), for a test's log.
func Breakdown(txs []Tx, skip func(Tx) bool, width int) string {
	var b strings.Builder
	n := 0
	for _, t := range txs {
		if (skip != nil && skip(t)) || !t.Wrote() {
			continue
		}
		n++
		kind := "tx"
		if t.Autocommit {
			kind = "autocommit"
		}
		b.WriteString("write " + itoa(n) + " (" + kind + ", " + itoa(len(t.Stmts)) + " statements")
		if t.Trips > 0 {
			b.WriteString(", " + itoa(t.Trips) + " round trips")
		}
		b.WriteString("):\n")
		for _, s := range t.Stmts {
			b.WriteString("    ")
			if s.Changed > 0 {
				b.WriteString("* ")
			} else {
				b.WriteString("  ")
			}
			b.WriteString(OneLine(s.SQL, width))
			b.WriteString("\n")
		}
	}
	return b.String()
}

// Reads lists the statements of the transactions of txs that wrote
// nothing (reads, outside the write transactions), one line each with the
// number of times that text ran, most frequent first, for a test's log:
// a statement run several times in one request is a candidate for passing
// its result along instead.
func Reads(txs []Tx, skip func(Tx) bool, width int) string {
	count := map[string]int{}
	var order []string
	for _, t := range txs {
		if (skip != nil && skip(t)) || t.Wrote() {
			continue
		}
		for _, st := range t.Stmts {
			line := OneLine(st.SQL, width)
			if count[line] == 0 {
				order = append(order, line)
			}
			count[line]++
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return count[order[i]] > count[order[j]] })
	var b strings.Builder
	for _, line := range order {
		b.WriteString("    " + itoa(count[line]) + "x " + line + "\n")
	}
	return b.String()
}

// OneLine returns sql on one line with runs of white space folded, cut to
// width characters (no cut when width <= 0).
func OneLine(sql string, width int) string {
	s := strings.Join(strings.Fields(sql), " ")
	if width > 0 && len(s) > width {
		s = s[:width] + "…"
	}
	return s
}

// Touches reports whether every statement of t names one of tables, for
// a skip function.
func Touches(t Tx, tables ...string) bool {
	if len(t.Stmts) == 0 {
		return false
	}
	for _, s := range t.Stmts {
		low := strings.ToLower(s.SQL)
		hit := false
		for _, tb := range tables {
			if strings.Contains(low, tb) {
				hit = true
				break
			}
		}
		if !hit {
			return false
		}
	}
	return true
}

func itoa(n int) string { return strconv.Itoa(n) }
