package sqlrouter

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/sqlread"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// invoke builds cfg and runs one turn of input.
func invoke(t *testing.T, cfg Config, input string) graph.State {
	t.Helper()
	g, err := Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(t.Context(), react.Input(input), graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t"))
	if err != nil {
		t.Fatal(err)
	}
	return res.State
}

// Sub-agents and route keys are data: an agent declared in Config.Agents
// gets its prompt (a template over the dialect), its tools by name and a
// route key that skips the router model.
func TestAgentsAndRoutesAreConfiguration(t *testing.T) {
	ro, _ := sample(t)
	m := llmtest.New()
	m.When(llmtest.And(llmtest.Namespace("tables:"), llmtest.HasTool(ListTablesName)), llmtest.ToolCalls(llmtest.Call(ListTablesName, `{}`)))
	m.When(llmtest.Namespace("tables:"), llmtest.Text("five tables")).Repeat()
	s := invoke(t, Config{Model: m, DB: ro,
		Agents: []AgentSpec{{Name: "tables", Description: "Lists tables.", Prompt: "You list the tables of a {{.Dialect}} database.", Tools: []string{ListTablesName}, Terminal: true}},
		Routes: map[string]string{"t": "tables"},
	}, "@t what is there?")
	o, ok := router.Finished(s)
	if !ok || o.Answer != "five tables" || o.Tool != "tables" {
		t.Fatalf("outcome %+v %v; want the tables agent's answer by the route key", o, ok)
	}
	reqs := requestsIn(m, "tables")
	if len(reqs) != 2 {
		t.Fatalf("the agent made %d requests, want 2", len(reqs))
	}
	if got := reqs[0].System(); got != "You list the tables of a SQLite database." {
		t.Errorf("the agent's prompt is %q; want the template rendered with the dialect", got)
	}
	if got := reqs[0].ToolNames(); len(got) != 1 || got[0] != ListTablesName {
		t.Errorf("the agent's tools are %v, want only %s", got, ListTablesName)
	}
	if res := toolResults(reqs[1]); len(res) != 1 || !strings.Contains(res[0], "loans (") {
		t.Errorf("list_tables gave %q", res)
	}
	for _, r := range m.Requests() {
		if r.Namespace == "" {
			t.Errorf("the router model was asked (%s); the route key should skip it", r.Node)
		}
	}
}

// A configuration naming what is not there fails when the app is built,
// naming the culprit.
func TestBadConfigurationIsAnError(t *testing.T) {
	ro, _ := sample(t)
	for name, c := range map[string]struct {
		cfg  Config
		want string
	}{
		"tool":     {Config{Agents: []AgentSpec{{Name: "a", Tools: []string{"drop_table"}}}}, `there is no tool "drop_table"`},
		"route":    {Config{Routes: map[string]string{"x": "nobody"}}, `sends "x" to "nobody", which is no agent`},
		"prompt":   {Config{Prompts: map[string]string{"nope": "x"}}, `there is no prompt "nope"`},
		"template": {Config{Prompts: map[string]string{RouterPromptName: "{{.Nope}}"}}, "prompt sqlrouter.router"},
		"twice":    {Config{Agents: []AgentSpec{{Name: "a"}, {Name: "a"}}}, `names "a" twice`},
	} {
		c.cfg.Model, c.cfg.DB = llmtest.New(), ro
		if _, err := Build(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Build = %v, want an error containing %q", name, err, c.want)
		}
	}
}

// Any function (another assistant, a service) is a sub-agent through
// RunnableAgent: the router model calls it with a task like any agent.
func TestRunnableAgentIsASubAgent(t *testing.T) {
	ro, _ := sample(t)
	var gotTask string
	ext, err := RunnableAgent("librarian", "Answers questions about opening hours.", func(_ context.Context, task string) (string, error) {
		gotTask = task
		return "open 9 to 17", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	m := llmtest.New()
	m.When(llmtest.And(llmtest.Namespace(""), llmtest.Node(router.RouterNode), llmtest.HasTool("librarian")),
		llmtest.ToolCalls(llmtest.Call("librarian", `{"task":"When is the library open?"}`)),
		llmtest.Text("The library is open 9 to 17."))
	s := invoke(t, Config{Model: m, DB: ro, Extra: []router.Agent{ext}}, "When are you open?")
	if gotTask != "When is the library open?" {
		t.Errorf("the runnable got task %q", gotTask)
	}
	if a, _ := react.Answer(s); a != "The library is open 9 to 17." {
		t.Errorf("answer %q", a)
	}
}

// The chain per tool-call ID: the scripted scenario's discovery call is
// the parent of the list_tables, describe_table and sample_rows calls its
// agent made, as the CallEvents and the router's records say together.
func TestTreeHangsSubAgentCallsUnderTheRouterCall(t *testing.T) {
	ro, _ := sample(t)
	g, err := Build(Config{Model: Script(), DB: ro})
	if err != nil {
		t.Fatal(err)
	}
	var events []graph.Event
	var final graph.State
	for ev, err := range g.Stream(t.Context(), react.Input(Question), graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t"),
		graph.WithEvents(graph.EventCustom|graph.EventValues)) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == graph.EventValues && ev.Namespace == "" {
			final = ev.State
		}
		events = append(events, ev)
	}
	tree := Tree(final, events)
	byTool := map[string]Link{}
	for _, l := range tree {
		byTool[l.Tool] = l
	}
	var sub []string
	for _, c := range byTool[DiscoveryAgent].Calls {
		if c.Agent != DiscoveryAgent || c.CallID == "" {
			t.Errorf("sub-call %+v: want agent %s and a call ID", c, DiscoveryAgent)
		}
		sub = append(sub, c.Tool)
	}
	// The describe_table calls run in parallel: compare as a multiset.
	counts := map[string]int{}
	for _, s := range sub {
		counts[s]++
	}
	if counts[ListTablesName] != 1 || counts[DescribeTableName] != 2 || counts[SampleRowsName] != 1 || len(sub) != 4 {
		t.Errorf("discovery's calls %v; want list_tables, 2× describe_table, sample_rows", sub)
	}
	if ex := byTool[ExecuteAgent].Calls; len(ex) != 1 || ex[0].Tool != sqlread.SQLToolName {
		t.Errorf("execute_sql's calls %+v; want one query_sql", ex)
	}
	if len(byTool[GenerateAgent].Calls) != 0 {
		t.Errorf("generate_sql made calls %+v; its script makes none", byTool[GenerateAgent].Calls)
	}
}

// failingDB reads no schema: listing the tables fails, and so does every
// count.
type failingDB struct{ sqlread.Database }

func (failingDB) Tables(context.Context) ([]sqlread.Table, error) {
	return nil, errors.New("permission denied for the catalogue")
}

// countFailDB lists the tables but cannot count them.
type countFailDB struct{ sqlread.Database }

func (d countFailDB) Query(ctx context.Context, q string, n int) (*sqlread.Rows, error) {
	if strings.HasPrefix(q, "SELECT count(*)") {
		return nil, errors.New("permission denied for table")
	}
	return d.Database.Query(ctx, q, n)
}

// A schema read that fails does not end the turn: the tool says what
// could not be seen, and the agent goes on and answers.
func TestSchemaReadFailureDegrades(t *testing.T) {
	ro, _ := sample(t)
	for name, db := range map[string]sqlread.Database{"tables": failingDB{ro}, "counts": countFailDB{ro}} {
		m := llmtest.New()
		m.When(llmtest.And(llmtest.Namespace(DiscoveryAgent+":"), llmtest.Not(llmtest.LastIsToolResult())), llmtest.ToolCalls(llmtest.Call(ListTablesName, `{}`)))
		m.When(llmtest.Namespace(DiscoveryAgent+":"), llmtest.Text("I could not read the schema.")).Repeat()
		s := invoke(t, Config{Model: m, DB: db, Routes: map[string]string{"d": DiscoveryAgent}, Agents: []AgentSpec{
			{Name: DiscoveryAgent, Description: "Finds tables.", Prompt: DefaultDiscoveryPrompt, Tools: []string{ListTablesName}, Terminal: true}}}, "@d which tables?")
		o, ok := router.Finished(s)
		if !ok || o.Failed() || o.Answer != "I could not read the schema." {
			t.Errorf("%s: outcome %+v %v; want the agent's answer", name, o, ok)
		}
		res := toolResults(requestsIn(m, DiscoveryAgent)[1])
		if len(res) != 1 || !strings.Contains(res[0], SchemaUnreadable) || !strings.Contains(res[0], "permission denied") {
			t.Errorf("%s: list_tables said %q; want what could not be read and why", name, res)
		}
		if name == "counts" && !strings.Contains(res[0], "loans (") {
			t.Errorf("counts: the tables that were seen are missing: %q", res)
		}
	}
}

// trellis.yaml's apps.sqlrouter section reaches the app through
// Env.Settings: agents, routes and prompts; an unknown key is an error.
func TestEntryReadsSettings(t *testing.T) {
	dir := t.TempDir()
	settings, _ := json.Marshal(map[string]any{
		"agents":   []map[string]any{{"name": "lister", "description": "Lists.", "prompt": "List ({{.Dialect}}).", "tools": []string{"list_tables"}, "terminal": true}},
		"routes":   map[string]string{"ls": "lister"},
		"deadline": "30s",
	})
	m := llmtest.New()
	m.When(llmtest.Namespace("lister:"), llmtest.Text("listed")).Repeat()
	app, err := Entry().Open(t.Context(), apps.Env{Model: m, DataDir: dir, Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	res, err := app.Graph.Invoke(t.Context(), app.Input("@ls tables"), graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t"))
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := react.Answer(res.State); a != "listed" {
		t.Errorf("answer %q", a)
	}
	if got := m.Requests()[0].System(); got != "List (SQLite)." {
		t.Errorf("prompt %q", got)
	}
	if _, err := Entry().Open(t.Context(), apps.Env{Model: m, DataDir: dir, Settings: json.RawMessage(`{"agentz": []}`)}); err == nil || !strings.Contains(err.Error(), "agentz") {
		t.Errorf("an unknown setting: %v", err)
	}
	if _, err := Entry().Open(t.Context(), apps.Env{Model: m, DataDir: dir, Settings: json.RawMessage(`{"deadline": "soon"}`)}); err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("a bad deadline: %v", err)
	}
}

// The tracing wrapper keeps a tool's own argument checks and summaries.
func TestTracedToolKeepsItsChecks(t *testing.T) {
	ro, _ := sample(t)
	tr := traced(DiscoveryAgent, SampleRowsTool(ro))
	if _, okS := tr.(interface{ Summarize(json.RawMessage) string }); !okS {
		t.Error("the wrapper lost the tool's Summarize")
	}
	val, okV := tr.(interface{ ValidateArguments(json.RawMessage) error })
	if !okV {
		t.Fatal("the wrapper lost the tool's ValidateArguments")
	}
	if err := val.ValidateArguments(json.RawMessage(`{"table":"loans","limit":"x"}`)); err == nil {
		t.Error("a bad limit passed the tool's own check")
	}
}
