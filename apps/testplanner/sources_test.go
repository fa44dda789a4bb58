package testplanner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/sqlread"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/pgdb"
	"github.com/trellis-agents/trellis/internal/testenv"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/tool"
	"github.com/trellis-agents/trellis/tool/mcp"
)

// dbServer serves db as an MCP server with list_tables and query, the
// protocol MCPDatabase speaks.
func dbServer(t *testing.T, db sqlread.Database) *mcp.Client {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "db", Version: "1"}, nil)
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	srv.AddTool(&sdk.Tool{Name: "list_tables", Description: "List the tables.", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			ts, err := db.Tables(ctx)
			if err != nil {
				return nil, err
			}
			b, _ := json.Marshal(ts)
			return text(string(b)), nil
		})
	srv.AddTool(&sdk.Tool{Name: "query", Description: "Run a read-only query.", InputSchema: json.RawMessage(`{"type":"object","properties":{"sql":{"type":"string"},"max_rows":{"type":"integer"}},"required":["sql"]}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var a struct {
				SQL     string `json:"sql"`
				MaxRows int    `json:"max_rows"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
				return nil, err
			}
			rows, err := db.Query(ctx, a.SQL, a.MaxRows)
			if err != nil {
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}, nil
			}
			b, _ := json.Marshal(rows)
			return text(string(b)), nil
		})
	c, err := mcp.Connect(t.Context(), mcp.TransportFunc(func(ctx context.Context) (sdk.Transport, error) {
		client, server := sdk.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, server, nil); err != nil {
			return nil, err
		}
		return client, nil
	}), mcp.WithName("db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// The rows come from an MCP server: the scripted scenario plans every
// tool, each plan carries the model's confidence and the rows it was
// based on, and a write sent through the MCP source is refused before the
// server sees it.
func TestRowsFromAnMCPServer(t *testing.T) {
	e := newEnv(t)
	mdb := MCPDatabase{Server: dbServer(t, e.db)}
	cfg := e.config(ScriptedModel())
	cfg.DB = mdb
	g, err := NewGraph(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(t.Context(), Input(thread), e.durable()...)
	if err != nil {
		t.Fatal(err)
	}
	plans := Plans(res.State)
	if len(plans) != len(SampleToolNames()) {
		t.Fatalf("%d plans, want %d", len(plans), len(SampleToolNames()))
	}
	for _, p := range plans {
		if p.Confidence != 0.8 {
			t.Errorf("%s: confidence %v, want the model's 0.8", p.Tool, p.Confidence)
		}
		if len(p.Data) == 0 || p.Data[0].Rows == nil || len(p.Data[0].Rows.Rows) == 0 {
			t.Errorf("%s: the plan does not carry the rows it was based on: %+v", p.Tool, p.Data)
		}
	}
	if _, err := mdb.Query(t.Context(), "DELETE FROM orders", 1); !errors.Is(err, sqlread.ErrNotReadOnly) {
		t.Errorf("a write through the MCP source: %v", err)
	}
	stored, err := LoadPlans(t.Context(), e.store, e.namespace())
	if err != nil || len(stored) != len(plans) || stored[0].Confidence != 0.8 || len(stored[0].Data) == 0 {
		t.Errorf("stored plans lack confidence or data: %v", err)
	}
}

// countingDB counts schema reads, and can fail them.
type countingDB struct {
	sqlread.Database
	tables atomic.Int32
	fail   bool
}

func (c *countingDB) Tables(ctx context.Context) ([]sqlread.Table, error) {
	c.tables.Add(1)
	if c.fail {
		return nil, errors.New("permission denied for the schema")
	}
	return c.Database.Tables(ctx)
}

// The schema is read once per run, not once per tool.
func TestSchemaIsReadOncePerRun(t *testing.T) {
	e := newEnv(t)
	db := &countingDB{Database: e.db}
	cfg := e.config(ScriptedModel())
	cfg.DB = db
	g, err := NewGraph(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Invoke(t.Context(), Input(thread), e.durable()...); err != nil {
		t.Fatal(err)
	}
	if n := db.tables.Load(); n != 1 {
		t.Errorf("the schema was read %d times for %d tools; want once", n, len(SampleToolNames()))
	}
}

// genericModel assesses every tool as enough and plans one case.
func genericModel() *llmtest.Model {
	m := llmtest.New()
	m.When(llmtest.LastUserContains("TASK: assess"), llmtest.JSON(Assessment{Enough: true, Reason: "ok"})).Repeat()
	m.When(llmtest.LastUserContains("TASK: write the test plan"), llmtest.JSON(PlanReply{Tool: "x", Confidence: 0.5,
		Cases: CaseReplies{{Name: "call it", Arguments: map[string]any{}, Expected: "works"}}})).Repeat()
	return m
}

// A schema that cannot be read does not stop the run: every tool is
// planned from its description, and the plan says what could not be read.
func TestSchemaReadFailureDegrades(t *testing.T) {
	e := newEnv(t)
	cfg := e.config(genericModel())
	cfg.DB = &countingDB{Database: e.db, fail: true}
	g, err := NewGraph(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(t.Context(), Input(thread), e.durable()...)
	if err != nil {
		t.Fatal(err)
	}
	plans := Plans(res.State)
	if len(plans) != len(SampleToolNames()) {
		t.Fatalf("%d plans, want every tool planned", len(plans))
	}
	for _, p := range plans {
		if !strings.Contains(p.Note, SchemaUnreadable) || !strings.Contains(p.Note, "permission denied") {
			t.Errorf("%s: note %q does not say what could not be read", p.Tool, p.Note)
		}
	}
}

// failingSource cannot list its tools.
type failingSource struct{}

func (failingSource) Tools(context.Context) ([]tool.Tool, error) {
	return nil, errors.New("connection refused")
}

// A catalogue that cannot be read: a thread with an earlier record plans
// the tools it recorded, saying so; a thread without one fails with an
// error that says what is missing.
func TestCatalogueReadFailureDegrades(t *testing.T) {
	e := newEnv(t)
	ns := e.namespace()
	if err := store.Put(t.Context(), e.store, ns, BatchItem, BatchState{Tools: []string{"cancel_order", "get_order"}, BatchSize: 5, Batches: 1}, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := e.config(genericModel())
	cfg.Tools = failingSource{}
	g, err := NewGraph(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var progress []string
	var final graph.State
	for ev, err := range g.Stream(t.Context(), Input(thread), append(e.durable(), graph.WithEvents(graph.EventCustom|graph.EventValues))...) {
		if err != nil {
			t.Fatal(err)
		}
		if p, ok := ev.Custom.(Progress); ok {
			progress = append(progress, p.Message)
		}
		if ev.Kind == graph.EventValues && ev.Namespace == "" {
			final = ev.State
		}
	}
	if plans := Plans(final); len(plans) != 2 {
		t.Errorf("%d plans, want the 2 recorded tools", len(plans))
	}
	if !strings.Contains(strings.Join(progress, "\n"), "the tool catalogue could not be read (connection refused)") {
		t.Errorf("progress does not say the catalogue could not be read:\n%s", strings.Join(progress, "\n"))
	}
	_, err = g.Invoke(t.Context(), Input("other"), graph.WithStore(e.store))
	if err == nil || !strings.Contains(err.Error(), "no earlier list") {
		t.Errorf("a thread with no record: %v", err)
	}
}

// inflight is a model that records how many requests run at once.
type inflight struct {
	llm.Model
	mu       sync.Mutex
	now, top int
}

func (m *inflight) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	m.mu.Lock()
	m.now++
	m.top = max(m.top, m.now)
	m.mu.Unlock()
	defer func() { m.mu.Lock(); m.now--; m.mu.Unlock() }()
	time.Sleep(time.Millisecond) // give parallel tasks a chance to overlap
	return m.Model.Generate(ctx, req)
}

// Concurrency bounds how many tools of a batch are planned at once.
func TestConcurrencyBoundsParallelTools(t *testing.T) {
	e := newEnv(t)
	m := &inflight{Model: ScriptedModel()}
	cfg := e.config(m)
	cfg.BatchSize, cfg.Concurrency = 7, 1
	g, err := NewGraph(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Invoke(t.Context(), Input(thread), e.durable()...); err != nil {
		t.Fatal(err)
	}
	if m.top != 1 {
		t.Errorf("%d model calls ran at once with Concurrency 1", m.top)
	}
	cfg.Concurrency = -1
	if _, err := NewGraph(cfg); err == nil || !strings.Contains(err.Error(), "Concurrency") {
		t.Errorf("a negative concurrency: %v", err)
	}
}

// PostgreSQL as the source of both the catalogue (a table) and the rows.
func TestPostgresSources(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	schema := testenv.Name(t, fmt.Sprint(time.Now().UnixNano()%1e9), pgdb.MaxIdentifierLen)
	pool, err := pgdb.Connect(t.Context(), dsn, schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`)
		pool.Close()
	})
	if _, err := pool.Exec(t.Context(), `
		CREATE TABLE tool_catalogue (name text PRIMARY KEY, description text, input_schema text, read_only boolean);
		INSERT INTO tool_catalogue VALUES
			('get_user', 'Read a user by ID.', '{"type":"object","properties":{"id":{"type":"integer"}}}', true),
			('ban_user', 'Ban a user.', NULL, false);
		CREATE TABLE users (id int PRIMARY KEY, email text NOT NULL);
		INSERT INTO users VALUES (7, 'ann@example.com');`); err != nil {
		t.Fatal(err)
	}
	db, err := sqlread.OpenPostgres(t.Context(), dsn, schema)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e := newEnv(t)
	cfg := e.config(genericModel())
	cfg.Tools, cfg.DB = TableCatalogue{DB: db}, db
	g, err := NewGraph(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(t.Context(), Input(thread), e.durable()...)
	if err != nil {
		t.Fatal(err)
	}
	plans := Plans(res.State)
	if len(plans) != 2 || plans[0].Tool != "ban_user" || plans[1].Tool != "get_user" {
		t.Fatalf("plans %+v", plans)
	}
	var sawUser bool
	for _, f := range plans[1].Data {
		if f.Rows != nil && strings.Contains(f.Rows.Render(), "ann@example.com") {
			sawUser = true
		}
	}
	if !sawUser {
		t.Errorf("get_user's plan is not based on the users rows: %+v", plans[1].Data)
	}
}

// trellis.yaml's apps.testplanner: prompts are templates, options reach
// the planner, and bad settings are errors that say what to fix.
func TestEntrySettings(t *testing.T) {
	dir := t.TempDir()
	m := ScriptedModel()
	app, err := Entry().Open(t.Context(), apps.Env{Model: m, DataDir: dir,
		Settings: json.RawMessage(`{"batch_size": 3, "concurrency": 2, "prompts": {"system": "You plan tests on {{.Dialect}}; at most {{.MaxQueries}} queries."}}`)})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	st := newEnv(t).store
	if _, err := app.Graph.Invoke(t.Context(), app.Input("t1"), graph.WithStore(st)); err != nil {
		t.Fatal(err)
	}
	if got := m.Requests()[0].System(); got != "You plan tests on SQLite; at most 5 queries." {
		t.Errorf("system prompt %q", got)
	}
	bs, ok, err := LoadBatchState(t.Context(), st, Config{Project: "shop", Environment: "dev"}.Namespace("t1"))
	if err != nil || !ok || bs.BatchSize != 3 || !bs.Complete {
		t.Errorf("batch state %+v %v %v", bs, ok, err)
	}
	for settings, want := range map[string]string{
		`{"batchsize": 3}`:                     "batchsize",
		`{"prompts": {"judge": "x"}}`:          `no prompt "judge"`,
		`{"prompts": {"plan": "{{.Nope}}"}}`:   "testplanner.plan",
		`{"database": "` + dir + `/other.db"}`: "catalogue_table",
	} {
		if _, err := Entry().Open(t.Context(), apps.Env{Model: m, DataDir: dir, Settings: json.RawMessage(settings)}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("settings %s: %v, want an error containing %q", settings, err, want)
		}
	}
}
