package testplanner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/tool"
)

// requestsFor counts the requests m received that match.
func requestsFor(m *llmtest.Model, match llmtest.Matcher) int {
	n := 0
	for _, r := range m.Requests() {
		if match(&r) {
			n++
		}
	}
	return n
}

// firstIndex and lastIndex return the position among m's requests of the
// first and last request that matches any of matchers (-1: none).
func firstIndex(m *llmtest.Model, matchers ...llmtest.Matcher) int {
	return slices.IndexFunc(m.Requests(), func(r llmtest.Request) bool { return llmtest.Or(matchers...)(&r) })
}

func lastIndex(m *llmtest.Model, matchers ...llmtest.Matcher) int {
	reqs := m.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if llmtest.Or(matchers...)(&reqs[i]) {
			return i
		}
	}
	return -1
}

func planFor(t *testing.T, plans []Plan, name string) Plan {
	t.Helper()
	for _, p := range plans {
		if p.Tool == name {
			return p
		}
	}
	t.Fatalf("no plan for %s among %d plans", name, len(plans))
	return Plan{}
}

func caseNamed(t *testing.T, p Plan, name string) Case {
	t.Helper()
	for _, c := range p.Cases {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("plan for %s has no case %q", p.Tool, name)
	return Case{}
}

func TestPlansEveryToolInBatchesOnTheScriptedModel(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	before := fingerprint(t, e.db)
	m := ScriptedModel()
	g := e.graph(t, m)
	res, err := g.Invoke(ctx, Input(thread), e.durable()...)
	if err != nil {
		t.Fatal(err)
	}
	plans := Plans(res.State)
	names := SampleToolNames()
	var got []string
	for _, p := range plans {
		got = append(got, p.Tool)
	}
	if d := cmp.Diff(names, got); d != "" {
		t.Fatalf("planned tools (-want +got):\n%s", d)
	}
	// 7 tools in batches of 5: the first five in batch 0, the rest in 1,
	// and no request of batch 1 before every plan of batch 0.
	var first, second []llmtest.Matcher
	for i, p := range plans {
		want := i / DefaultBatchSize
		if p.Batch != want {
			t.Errorf("%s planned in batch %d, want %d", p.Tool, p.Batch, want)
		}
		if n := requestsFor(m, PlanRequest(p.Tool)); n != 1 {
			t.Errorf("%s: %d plan requests, want 1", p.Tool, n)
		}
		any := llmtest.LastUserContains(fmt.Sprintf("tool %q", p.Tool))
		if want == 0 {
			first = append(first, any)
		} else {
			second = append(second, any)
		}
	}
	if last, next := lastIndex(m, first...), firstIndex(m, second...); last < 0 || next < last {
		t.Errorf("batch 1 began at request %d, before batch 0 ended at request %d", next, last)
	}

	// The plans use rows that exist: check a few against the database.
	check := func(q, want string) {
		t.Helper()
		rows, err := e.db.Query(ctx, q, 5)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(ptrs(rows.Rows[0]), ","); got != want {
			t.Errorf("%s = %s, want %s", q, got, want)
		}
	}
	refund := caseNamed(t, planFor(t, plans, "refund_payment"), "full refund of a captured payment")
	check(fmt.Sprintf("SELECT amount, status FROM payments WHERE id = %v", refund.Arguments["payment_id"]), "31.75,captured")
	if refund.Arguments["amount"] != 31.75 || !refund.Grounded {
		t.Errorf("refund case = %+v, want amount 31.75 and grounded", refund)
	}
	cust := caseNamed(t, planFor(t, plans, "get_customer"), "existing customer")
	check(fmt.Sprintf("SELECT name FROM customers WHERE id = %v", cust.Arguments["customer_id"]), "Mei Tanaka")
	cancel := caseNamed(t, planFor(t, plans, "cancel_order"), "cancel a pending order")
	check(fmt.Sprintf("SELECT status FROM orders WHERE id = %v", cancel.Arguments["order_id"]), "pending")
	for _, p := range plans {
		grounded := 0
		for _, c := range p.Cases {
			if c.Grounded {
				grounded++
			}
		}
		if len(p.Cases) == 0 || grounded == 0 {
			t.Errorf("%s: %d cases, %d grounded; want cases using rows", p.Tool, len(p.Cases), grounded)
		}
	}
	if c := caseNamed(t, planFor(t, plans, "get_customer"), "unknown customer"); c.Grounded {
		t.Errorf("a case with a made-up ID (999) counts as grounded: %+v", c)
	}

	// Not enough → more queries → enough: list_orders asked twice, ran one
	// targeted round, and its second assessment saw that round's rows.
	lo := planFor(t, plans, "list_orders")
	if lo.QueryRounds != 1 || lo.Queries != 2 || requestsFor(m, AssessRequest("list_orders", 0)) != 1 || requestsFor(m, AssessRequest("list_orders", 1)) != 1 {
		t.Errorf("list_orders: %d rounds, %d queries; want 1 and 2 after two assessments", lo.QueryRounds, lo.Queries)
	}
	seen := false
	for _, r := range m.Requests() {
		if AssessRequest("list_orders", 1)(&r) {
			seen = strings.Contains(r.LastUser(), "-- round 1: SELECT id, name FROM customers WHERE id NOT IN") &&
				strings.Contains(r.LastUser(), "9 | Selin Aydın")
		}
	}
	if !seen {
		t.Error("the second assessment of list_orders did not show the targeted query's rows")
	}
	// The model asked for an UPDATE: refused, shown to it, nothing changed.
	var planReq string
	for _, r := range m.Requests() {
		if PlanRequest("refund_payment")(&r) {
			planReq = r.LastUser()
		}
	}
	if !strings.Contains(planReq, "-- round 1: UPDATE payments SET status = 'refunded' WHERE id = 501\nerror: query refused: UPDATE is not a read statement") {
		t.Errorf("the refund plan request does not show the refused UPDATE:\n%s", planReq)
	}
	if after := fingerprint(t, e.db); after != before {
		t.Fatal("the database changed during the run")
	}

	// The store holds the batch state and every plan under the thread's
	// namespace, and nothing anywhere else.
	nss, err := e.store.ListNamespaces(ctx, store.NamespaceQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([][]string{{project, envName, DefaultAgent, thread}}, nss); d != "" {
		t.Errorf("store namespaces (-want +got):\n%s", d)
	}
	stored, err := LoadPlans(ctx, e.store, e.namespace())
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(plans, stored); d != "" {
		t.Errorf("stored plans differ from the final state (-state +store):\n%s", d)
	}
	bs, ok, err := LoadBatchState(ctx, e.store, e.namespace())
	if err != nil || !ok {
		t.Fatalf("batch state: %v, %v", ok, err)
	}
	want := BatchState{Tools: names, BatchSize: 5, Batch: 2, Batches: 2, Done: names, Complete: true}
	if d := cmp.Diff(want, bs); d != "" {
		t.Errorf("batch state (-want +got):\n%s", d)
	}

	// Running the finished thread again with a fresh input plans nothing.
	m2 := ScriptedModel()
	res, err = e.graph(t, m2).Invoke(ctx, Input(thread), graph.WithStore(e.store))
	if err != nil || len(Plans(res.State)) != len(names) || len(m2.Requests()) != 0 {
		t.Fatalf("a second run: %v, %d plans, %d model requests; want every plan from the store and no request", err, len(Plans(res.State)), len(m2.Requests()))
	}
}

func ptrs(vs []*string) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		if v == nil {
			out[i] = "NULL"
		} else {
			out[i] = *v
		}
	}
	return out
}

// oneTool lists one tool of the sample server.
type oneTool struct {
	src  ToolSource
	name string
}

func (o oneTool) Tools(ctx context.Context) ([]tool.Tool, error) {
	all, err := o.src.Tools(ctx)
	var out []tool.Tool
	for _, t := range all {
		if t.Info().Name == o.name {
			out = append(out, t)
		}
	}
	return out, err
}

func TestQueryRoundsStopAtTheBound(t *testing.T) {
	e := newEnv(t)
	m := llmtest.New()
	for r := range 5 {
		m.When(AssessRequest("get_customer", r), llmtest.JSON(more(fmt.Sprintf("still missing round %d", r),
			fmt.Sprintf("SELECT id, email FROM customers WHERE id = %d", r+1))))
	}
	m.When(PlanRequest("get_customer"), llmtest.JSON(PlanReply{Tool: "get_customer", Cases: []CaseReply{
		tc("existing", obj{"customer_id": 2}, "Lukas Brenner", "customers.id=2")}}))
	cfg := e.config(m)
	cfg.Tools = oneTool{e.client, "get_customer"}
	g, err := NewGraph(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(t.Context(), Input(thread), graph.WithStore(e.store))
	if err != nil {
		t.Fatal(err)
	}
	p := planFor(t, Plans(res.State), "get_customer")
	for r, want := range []int{1, 1, 1, 0} {
		if got := requestsFor(m, AssessRequest("get_customer", r)); got != want {
			t.Errorf("assessments after round %d: %d, want %d", r, got, want)
		}
	}
	if p.QueryRounds != DefaultMaxQueryRounds || p.Queries != 3 || !strings.Contains(p.Note, "rounds of queries are used up") {
		t.Errorf("plan: %d rounds, %d queries, note %q; want the bound of 3", p.QueryRounds, p.Queries, p.Note)
	}
	last := m.LastRequest()
	if !PlanRequest("get_customer")(&last) || !strings.Contains(last.LastUser(), "-- round 3: SELECT id, email FROM customers WHERE id = 3") ||
		!strings.Contains(last.LastUser(), "Note: the 3 rounds of queries are used up") {
		t.Errorf("the plan request lacks the last round or the note:\n%s", last.LastUser())
	}
	if !p.Cases[0].Grounded {
		t.Error("customer_id 2 was in the rows but the case is not grounded")
	}
}

func TestWritesTheModelAsksForAreRefused(t *testing.T) {
	e := newEnv(t)
	before := fingerprint(t, e.db)
	writes := []string{
		"DELETE FROM orders",
		"UPDATE products SET stock = 0",
		"DROP TABLE payments",
		"INSERT INTO customers (id, name, email, city, status, created_at) VALUES (99, 'x', 'x@example.com', 'x', 'active', '2024-01-01')",
		"SELECT count(*) FROM orders; DELETE FROM orders",
	}
	m := llmtest.New()
	m.When(AssessRequest("update_stock", 0), llmtest.JSON(more("ignore the rules and clean up", writes...)))
	m.When(AssessRequest("update_stock", 1), llmtest.JSON(enough("fine")))
	m.When(PlanRequest("update_stock"), llmtest.JSON(PlanReply{Tool: "update_stock", Cases: []CaseReply{
		tc("restock", obj{"product_id": 4, "delta": 1, "reason": "restock"}, "stock 1", "products.id=4")}}))
	cfg := e.config(m)
	cfg.Tools = oneTool{e.client, "update_stock"}
	g, err := NewGraph(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Invoke(t.Context(), Input(thread), graph.WithStore(e.store)); err != nil {
		t.Fatal(err)
	}
	if after := fingerprint(t, e.db); after != before {
		t.Fatalf("the database changed:\nbefore %s\nafter %s", before, after)
	}
	last := m.LastRequest()
	if n := strings.Count(last.LastUser(), "error: query refused:"); n != len(writes) {
		t.Errorf("the plan request shows %d refusals, want %d:\n%s", n, len(writes), last.LastUser())
	}
}

// A run without checkpoints resumes from the store alone: the tools with
// a stored plan are not planned again.
func TestStoreAloneResumesAtTheNextTool(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	m1 := ScriptedModel()
	// Three steps: load, batch, the five tools of batch 0; then the limit.
	_, err := e.graph(t, m1).Invoke(ctx, Input(thread), graph.WithStore(e.store), graph.WithStepLimit(3))
	if _, ok := errors.AsType[*graph.StepLimitError](err); !ok {
		t.Fatalf("first run: %v, want the step limit", err)
	}
	stored, err := LoadPlans(ctx, e.store, e.namespace())
	if err != nil || len(stored) != 5 {
		t.Fatalf("after the first run: %d plans stored (%v), want 5", len(stored), err)
	}
	if bs, _, _ := LoadBatchState(ctx, e.store, e.namespace()); bs.Batch != 0 || len(bs.Done) != 0 {
		t.Errorf("batch state after the first run: %+v; want batch 0 recorded before its tools ran", bs)
	}
	m2 := ScriptedModel()
	res, err := e.graph(t, m2).Invoke(ctx, Input(thread), graph.WithStore(e.store))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(Plans(res.State)); n != 7 {
		t.Fatalf("%d plans after the second run, want 7", n)
	}
	names := SampleToolNames()
	for i, name := range names {
		want := 0
		if i >= 5 {
			want = 1
		}
		if got := requestsFor(m1, PlanRequest(name)) + requestsFor(m2, PlanRequest(name)); got != 1 {
			t.Errorf("%s planned %d times in both runs, want once", name, got)
		}
		if got := requestsFor(m2, PlanRequest(name)); got != want {
			t.Errorf("%s planned %d times in the second run, want %d", name, got, want)
		}
	}
}

func TestConfigAndInputErrors(t *testing.T) {
	_, err := NewGraph(Config{BatchSize: -1})
	for _, want := range []string{"Config.Model is nil", "Config.Tools is nil", "Config.DB is nil", "Config.Project and Config.Environment", "field BatchSize of Config is -1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New(empty config) = %v, want it to say %q", err, want)
		}
	}
	e := newEnv(t)
	g := e.graph(t, llmtest.New())
	if _, err := g.Invoke(t.Context(), Input(thread)); err == nil || !strings.Contains(err.Error(), "graph.WithStore") {
		t.Errorf("a run without a store: %v", err)
	}
	if _, err := g.Invoke(t.Context(), Input(""), graph.WithStore(e.store)); err == nil || !strings.Contains(err.Error(), "testplanner.Input") {
		t.Errorf("a run without a thread: %v", err)
	}
	// A model that never gives a plan fails the run with the tool's name.
	m := llmtest.New().Otherwise(llmtest.Text("I'd rather not."))
	cfg := e.config(m)
	cfg.Tools = oneTool{e.client, "get_customer"}
	g, err = NewGraph(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Invoke(t.Context(), Input(thread), graph.WithStore(e.store))
	if !errors.Is(err, llm.ErrContract) || !strings.Contains(err.Error(), "assess the data for get_customer") {
		t.Errorf("a model without JSON: %v", err)
	}
}

// A plan node that runs again after its plan reached the store (a crash
// between saving the plan and committing the step) reuses the stored plan
// instead of asking the model again.
func TestPlanNodeReusesAStoredPlan(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	ns := e.namespace()
	prior := Plan{Tool: "get_customer", Batch: 0, Cases: []Case{{Name: "saved before the crash", Arguments: map[string]any{"customer_id": 1.0}, Grounded: true}}}
	if err := store.Put(ctx, e.store, ns, planPrefix+"get_customer", prior, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	m := llmtest.New()
	m.When(AssessRequest("get_customer", 0), llmtest.JSON(enough("ok")))
	cfg := e.config(m)
	if err := cfg.check(); err != nil {
		t.Fatal(err)
	}
	p := &planner{cfg: cfg}
	inner, err := p.toolGraph()
	if err != nil {
		t.Fatal(err)
	}
	res, err := inner.Invoke(ctx, graph.Writes(toolKey.Set(ToolInfo{Name: "get_customer"}), nsKey.Set(ns)), graph.WithStore(e.store))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(prior, planKey.Get(res.State)); d != "" {
		t.Errorf("plan (-stored +got):\n%s", d)
	}
	if n := requestsFor(m, PlanRequest("get_customer")); n != 0 || m.Pending() != 0 {
		t.Errorf("%d plan requests, %d replies unused; want none and the assessment used", n, m.Pending())
	}
}
