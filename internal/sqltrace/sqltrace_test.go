package sqltrace

import (
	"strings"
	"testing"
)

// The recorder groups statements by connection into explicit and
// autocommit transactions, and counts only those that changed rows and
// committed.
func TestRecorderGroupsTransactions(t *testing.T) {
	r := NewRecorder()
	stop := Observe(r.Observe)
	defer stop()
	ev := func(conn uint64, k Kind, sql string, changed int64) {
		Emit(Event{Backend: "x", Conn: conn, Kind: k, SQL: sql, Changed: changed})
	}
	ev(1, Begin, "", 0)
	ev(2, Statement, "SELECT 1", 0)             // autocommit read
	ev(1, Statement, "SELECT token FROM l", 0)  // in tx 1
	ev(2, Statement, "UPDATE q SET a = 1", 1)   // autocommit write
	ev(1, Statement, "INSERT INTO t VALUES", 1) // in tx 1
	ev(1, Commit, "", -1)
	ev(3, Begin, "", 0)
	ev(3, Statement, "INSERT INTO t VALUES", 1)
	ev(3, Rollback, "", 0) // rolled back: wrote nothing
	ev(4, Begin, "", 0)
	ev(4, Commit, "", 2) // SQLite: the transaction's own count
	txs := r.Take()
	if len(txs) != 5 {
		t.Fatalf("%d transactions, want 5: %+v", len(txs), txs)
	}
	s := Summarize(txs, nil)
	if s.Statements != 5 || s.WriteTx != 3 || s.WriteStmts != 3 {
		t.Errorf("summary %+v, want 5 statements, 3 write transactions, 3 statements in them", s)
	}
	skipQ := func(tx Tx) bool { return Touches(tx, " q ") }
	if s := Summarize(txs, skipQ); s.WriteTx != 2 {
		t.Errorf("skipping q: %d write transactions, want 2", s.WriteTx)
	}
	b := Breakdown(txs, nil, 13)
	if !strings.Contains(b, "write 1 (autocommit, 1 statements)") || !strings.Contains(b, "* INSERT INTO t…") {
		t.Errorf("breakdown:\n%s", b)
	}
	if len(r.Take()) != 0 {
		t.Error("Take kept what it returned")
	}
	stop()
	if Active() {
		t.Error("the observer is still set after stop")
	}
}

// Reads lists only the statements of transactions that wrote nothing,
// counted by text, the most frequent first.
func TestReads(t *testing.T) {
	txs := []Tx{
		{Stmts: []Stmt{{SQL: "SELECT a"}, {SQL: "SELECT  b"}}},
		{Stmts: []Stmt{{SQL: "SELECT b"}}},
		{Committed: true, Changed: 1, Stmts: []Stmt{{SQL: "SELECT c"}, {SQL: "UPDATE x", Changed: 1}}},
	}
	want := "    2x SELECT b\n    1x SELECT a\n"
	if got := Reads(txs, nil, 0); got != want {
		t.Errorf("Reads = %q, want %q", got, want)
	}
}
