package runs

import (
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/internal/sqltrace"
	"github.com/trellis-agents/trellis/server/db"
)

// With JoinStepWrites a run's events commit inside the saver's
// transactions: every event is stored once, in order, with gap-free
// sequence numbers, and no write transaction holds events alone. A saver
// that does not run the hook (the in-memory one) gets the events flushed
// after its writes instead, none lost.
func TestJoinStepWrites(t *testing.T) {
	for _, c := range []struct {
		name   string
		memory bool
	}{{"sqlite saver", false}, {"memory saver", true}} {
		t.Run(c.name, func(t *testing.T) {
			// Observed from the start: the saver prepares its statements
			// when it opens.
			rec := sqltrace.NewRecorder()
			stop := sqltrace.Observe(rec.Observe)
			defer stop()
			e := newEnv(t)
			saver := e.saver
			if c.memory {
				saver = checkpoint.NewMemory()
			}
			svc, err := New(Config{DB: e.db, Saver: saver, Graphs: e.reg, LeaseTTL: 3 * time.Second, CancelPoll: 20 * time.Millisecond, JoinStepWrites: true})
			if err != nil {
				t.Fatal(err)
			}
			e.svc = svc
			r := e.mustCreate("acme", "joined", "chat-a", Kwargs{Input: []byte(`{"log":["start"]}`), StreamMode: []string{"values", "updates"}}, "")
			rec.Take()
			if got := e.advance("acme", "joined"); got != Idle {
				t.Fatalf("advance = %v, want Idle", got)
			}
			txs := rec.Take()
			stop()
			if r = e.run("acme", "joined", r.ID); r.Status != db.RunSuccess {
				t.Fatalf("status %s (%s)", r.Status, r.Error)
			}
			evs := e.events("acme", r.ID)
			if len(evs) < 4 || evs[0].Event != "metadata" || evs[len(evs)-1].Event != "values" {
				t.Fatalf("events %v: want metadata first and values last", evs)
			}
			for i, ev := range evs {
				if ev.Seq != int64(i+1) {
					t.Errorf("event %d has seq %d", i, ev.Seq)
				}
			}
			alone, joined := 0, 0
			for _, tx := range txs {
				if !tx.Wrote() {
					continue
				}
				var events, checkpoints bool
				for _, st := range tx.Stmts {
					events = events || strings.Contains(st.SQL, "INSERT INTO trellis_run_events")
					checkpoints = checkpoints || strings.Contains(st.SQL, "INSERT INTO checkpoints")
				}
				switch {
				case events && checkpoints:
					joined++
				case events:
					alone++
				}
			}
			if c.memory && (joined != 0 || alone == 0) {
				t.Errorf("memory saver: %d joined, %d separate event writes; want 0 and some", joined, alone)
			}
			if !c.memory && (joined == 0 || alone != 0) {
				t.Errorf("sqlite saver: %d joined, %d separate event writes; want some and 0", joined, alone)
			}
		})
	}
}

// JoinStepWrites needs a DB that can append events in another backend's
// transaction.
func TestJoinStepWritesNeedsTxEvents(t *testing.T) {
	e := newEnv(t)
	_, err := New(Config{DB: onlyDB{e.db}, Saver: e.saver, Graphs: e.reg, JoinStepWrites: true})
	if err == nil || !strings.Contains(err.Error(), "db.TxEvents") {
		t.Errorf("New = %v; want an error naming db.TxEvents", err)
	}
}

// onlyDB hides every optional interface of a DB.
type onlyDB struct{ db.DB }
