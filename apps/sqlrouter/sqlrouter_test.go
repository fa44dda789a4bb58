package sqlrouter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/apps/sqlread"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/tool"
)

// The scripted scenario end to end: discovery, a generated query SQLite
// rejects, the fix, and one execution of the fixed query whose summary
// holds the database's real figures.
func TestScriptedScenario(t *testing.T) {
	ro, _ := sample(t)
	db := &recordingDB{Database: ro}
	sm := Script().(*scripted)
	s := run(t, sm, db, Question)
	model := sm.rules // the sub-agents' requests

	o, ok := router.Finished(s)
	if !ok || o.Reason != router.ReasonTerminal || o.Tool != ExecuteAgent || o.CallID != executeCall || o.Failed() {
		t.Fatalf("outcome %+v (finished %v); want the terminal execute_sql call", o, ok)
	}
	if a, _ := react.Answer(s); a != o.Answer {
		t.Errorf("the history ends with %q, not the outcome's answer", a)
	}
	// Every figure of the answer is the database's, computed here with a
	// query of our own.
	rows, err := ro.Query(t.Context(), `SELECT genre, count(*) FROM books JOIN loans ON loans.book_id = books.id
		WHERE substr(loaned_on, 1, 4) = '2025' GROUP BY genre`, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows.Rows) != 5 {
		t.Fatalf("the sample has loans in %d genres in 2025, want 5", len(rows.Rows))
	}
	total := 0
	for _, r := range rows.Rows {
		want := fmt.Sprintf("%s: %s loans", *r[0], *r[1])
		if !strings.Contains(o.Answer, want) {
			t.Errorf("the answer lacks %q:\n%s", want, o.Answer)
		}
		var n int
		fmt.Sscan(*r[1], &n)
		total += n
	}
	if !strings.Contains(o.Answer, fmt.Sprintf("of the year's %d loans", total)) {
		t.Errorf("the answer's total is not %d:\n%s", total, o.Answer)
	}

	// The chain: each call used the outputs it should have, by reference.
	chain := Chain(s)
	var tools []string
	uses := map[string][]string{}
	for _, l := range chain {
		tools = append(tools, l.Tool)
		uses[l.CallID] = l.Uses
		if l.Failed {
			t.Errorf("call %s (%s) failed: %s", l.CallID, l.Tool, l.Result)
		}
	}
	if d := cmp.Diff([]string{DiscoveryAgent, GenerateAgent, ValidateSQLName, FixAgent, ExecuteAgent}, tools); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
	wantUses := map[string][]string{
		discoverCall: nil,
		generateCall: {discoverCall},
		validateCall: {generateCall},
		fixCall:      {generateCall, validateCall, discoverCall},
		executeCall:  {fixCall},
	}
	if d := cmp.Diff(wantUses, uses, cmp.Comparer(func(a, b []string) bool { return slices.Equal(a, b) })); d != "" {
		t.Errorf("references (-want +got):\n%s", d)
	}

	// The generated query failed validation with SQLite's own error.
	rec := record(t, s, validateCall)
	if !strings.HasPrefix(rec.Result, Invalid) || !strings.Contains(rec.Result, "no such column: b.category") {
		t.Errorf("validate_sql said %q; want SQLite's error about b.category", rec.Result)
	}
	if got := record(t, s, generateCall).Result; got != badSQL {
		t.Errorf("generate_sql returned %q", got)
	}
	if got := record(t, s, fixCall).Result; got != fixedSQL {
		t.Errorf("fix_sql returned %q", got)
	}

	// The agents received the outputs themselves, not the references.
	task := func(agent string) string {
		reqs := requestsIn(model, agent)
		if len(reqs) == 0 {
			t.Fatalf("agent %s was never asked", agent)
		}
		return reqs[0].LastUser()
	}
	if got := task(GenerateAgent); !strings.Contains(got, discoveryAnswer) || strings.Contains(got, "{{call:") {
		t.Errorf("generate_sql's task:\n%s", got)
	}
	if got := task(FixAgent); !strings.Contains(got, badSQL) || !strings.Contains(got, "no such column: b.category") || !strings.Contains(got, discoveryAnswer) {
		t.Errorf("fix_sql's task:\n%s", got)
	}
	if got := task(ExecuteAgent); !strings.Contains(got, fixedSQL) || strings.Contains(got, "b.category") {
		t.Errorf("execute_sql's task:\n%s", got)
	}

	// The bad query was only ever explained, never run; the fixed one was
	// validated by fix_sql and run once, by execute_sql.
	if n := db.ran(badSQL); n != 0 {
		t.Errorf("the rejected query ran %d times", n)
	}
	if n := db.ran("EXPLAIN QUERY PLAN " + badSQL); n != 1 {
		t.Errorf("the rejected query was validated %d times, want 1", n)
	}
	if n := db.ran(fixedSQL); n != 1 {
		t.Errorf("the fixed query ran %d times, want 1 (queries: %q)", n, db.all())
	}
	if n := db.ran("EXPLAIN QUERY PLAN " + fixedSQL); n != 1 {
		t.Errorf("the fixed query was validated %d times, want 1", n)
	}
	// execute_sql saw the rows it summarised.
	exec := requestsIn(model, ExecuteAgent)
	if len(exec) != 2 {
		t.Fatalf("execute_sql asked its model %d times, want 2", len(exec))
	}
	if res := toolResults(exec[1]); len(res) != 1 || !strings.Contains(res[0], "fiction | 8\nmystery | 7") {
		t.Errorf("execute_sql's query returned %q", res)
	}
	if n := model.Pending(); n != 0 {
		t.Errorf("%d scripted replies were never asked for", n)
	}

	out := Render(s)
	for _, want := range []string{"Answer (terminal, from execute_sql):", "fiction: 8 loans",
		"call_fix fix_sql", "uses call_generate, call_validate, call_discover", "→ invalid: SQLite cannot compile the query: SQL logic error: no such column: b.category"} {
		if !strings.Contains(out, want) {
			t.Errorf("Render lacks %q:\n%s", want, out)
		}
	}
}

func record(t *testing.T, s graph.State, id string) tool.Record {
	t.Helper()
	rec, ok := tool.LookupCall(s, react.Calls, id)
	if !ok {
		t.Fatalf("no record of call %s", id)
	}
	return rec
}

// A request naming an agent goes straight to it: the router model is not
// asked, and the agent's answer is the turn's.
func TestDirectRoute(t *testing.T) {
	ro, _ := sample(t)
	m := llmtest.New()
	m.When(llmtest.Namespace(DiscoveryAgent+":"),
		llmtest.ToolCalls(llmtest.Call(ListTablesName, `{}`)),
		llmtest.Text("Loans are in the loans table (30 rows), joined to books by book_id."))
	s := run(t, m, ro, "@discovery Which table holds the loans?")

	for _, r := range m.Requests() {
		if r.Node == router.RouterNode {
			t.Fatalf("the router model was asked: %q", r.LastUser())
		}
	}
	o, ok := router.Finished(s)
	if !ok || o.Reason != router.ReasonDirect || o.Tool != DiscoveryAgent || o.Answer != "Loans are in the loans table (30 rows), joined to books by book_id." {
		t.Fatalf("outcome %+v", o)
	}
	reqs := requestsIn(m, DiscoveryAgent)
	if len(reqs) != 2 || reqs[0].LastUser() != "Which table holds the loans?" {
		t.Fatalf("discovery was asked %d times, first with %q", len(reqs), reqs[0].LastUser())
	}
	want := "authors (6 rows)\nbooks (12 rows)\nbranches (3 rows)\nloans (30 rows)\nmembers (8 rows)"
	if res := toolResults(reqs[1]); len(res) != 1 || res[0] != want {
		t.Errorf("list_tables returned %q, want %q", res, want)
	}
	if chain := Chain(s); len(chain) != 1 || chain[0].Tool != DiscoveryAgent || len(chain[0].Uses) != 0 {
		t.Errorf("chain %+v", chain)
	}
}

// generate_sql proposes an UPDATE; the read-only layer refuses it when the
// router validates it, the refusal matches an error pattern, and the turn
// ends with an error answer. Nothing reached the database, which is
// unchanged.
func TestWriteAttemptRefused(t *testing.T) {
	ro, path := sample(t)
	db := &recordingDB{Database: ro}
	before := fingerprint(t, ro)
	const update = "UPDATE loans SET returned_on = '2025-10-01' WHERE returned_on IS NULL"
	m := llmtest.New()
	m.When(llmtest.Namespace(GenerateAgent+":"), llmtest.Text(update))
	m.When(llmtest.Node(router.RouterNode),
		llmtest.ToolCalls(call(generateCall, GenerateAgent, obj{"task": "Write SQL that marks every open loan as returned today."})),
		llmtest.ToolCalls(call(validateCall, ValidateSQLName, obj{"sql": router.Ref(generateCall)})),
		llmtest.Text("not reached: the error pattern ends the turn first"))
	s := run(t, m, db, "Mark every open loan as returned.")

	o, ok := router.Finished(s)
	if !ok || !o.Failed() || o.Pattern != RefusedPattern || o.Tool != ValidateSQLName || o.CallID != validateCall {
		t.Fatalf("outcome %+v; want an error by the refused-write pattern on validate_sql", o)
	}
	if !strings.Contains(o.Answer, "could not be completed") || !strings.Contains(o.Answer, "query refused: UPDATE is not a read statement") {
		t.Errorf("answer:\n%s", o.Answer)
	}
	if rec := record(t, s, validateCall); rec.Error == "" || !strings.Contains(rec.Result, "read-only") {
		t.Errorf("validate_sql's record: %+v", rec)
	}
	var routerAsked int
	for _, r := range m.Requests() {
		if r.Node == router.RouterNode {
			routerAsked++
		}
	}
	if routerAsked != 2 {
		t.Errorf("the router model was asked %d times, want 2 (the refusal ends the turn)", routerAsked)
	}
	for _, q := range db.all() {
		if strings.Contains(strings.ToUpper(q), "UPDATE") {
			t.Errorf("a write reached the database: %q", q)
		}
	}
	if _, ok := tool.LookupCall(s, react.Calls, executeCall); ok {
		t.Error("execute_sql ran")
	}
	// Checked through a new connection too, after the run.
	again, err := sqlread.OpenReadOnly(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if after := fingerprint(t, again); after != before {
		t.Fatalf("the database changed:\nbefore %s\nafter %s", before, after)
	}
}

// A discovery answer saying the data is not there ends the turn with an
// error answer.
func TestDataUnavailable(t *testing.T) {
	ro, _ := sample(t)
	m := llmtest.New()
	m.When(llmtest.Namespace(DiscoveryAgent+":"),
		llmtest.ToolCalls(llmtest.Call(ListTablesName, `{}`)),
		llmtest.Text(Unavailable+" no table records late fees; the tables are authors, books, branches, loans and members."))
	m.When(llmtest.Node(router.RouterNode),
		llmtest.ToolCalls(call(discoverCall, DiscoveryAgent, obj{"task": "Find where late fees are recorded."})),
		llmtest.Text("not reached"))
	s := run(t, m, ro, "How much was collected in late fees?")
	o, ok := router.Finished(s)
	if !ok || !o.Failed() || o.Pattern != UnavailablePattern || o.Tool != DiscoveryAgent {
		t.Fatalf("outcome %+v", o)
	}
	if !strings.Contains(o.Answer, "no table records late fees") || !strings.Contains(Render(s), "FAILED (discovery matched") {
		t.Errorf("answer %q, rendered:\n%s", o.Answer, Render(s))
	}
}

func TestNewReportsWhatIsMissing(t *testing.T) {
	_, err := NewGraph(nil, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "the model is nil") || !strings.Contains(err.Error(), "sqlread.OpenReadOnly") {
		t.Errorf("NewGraph(nil, nil, nil) = %v", err)
	}
	if _, err := New(t.Context(), Config{Model: Script()}); err == nil || !strings.Contains(err.Error(), "Config.Database") {
		t.Errorf("New without a database = %v", err)
	}
	if _, err := NewGraph(Script(), emptyDB{}, map[string]llm.Model{"discover": Script()}); err == nil || !strings.Contains(err.Error(), `names "discover", which is no agent`) {
		t.Errorf("a misnamed agent model = %v", err)
	}
}

// emptyDB is a database with no tables, for checks that fail before a
// query runs.
type emptyDB struct{}

func (emptyDB) Tables(context.Context) ([]sqlread.Table, error) { return nil, nil }
func (emptyDB) Query(context.Context, string, int) (*sqlread.Rows, error) {
	return nil, errors.New("emptyDB holds nothing")
}
