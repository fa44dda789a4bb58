// Package testplanner is the test-planning app: for every tool of an
// MCP server it reads a SQL database (the schema and sample rows, then
// targeted queries for as long as the model says the data is not enough, up
// to a bound) and writes a test plan whose cases use real rows.
//
// # The graph
//
//	START → load → batch ⇄ plan_tool (one task per tool of the batch) ; batch → END
//
// load lists the server's tools (sorted by name) and reads what the store
// already holds for the thread. batch picks the first batch of BatchSize
// tools that still has tools without a plan and sends each of them to
// plan_tool; the tools of a batch are planned in parallel, and the next
// batch starts when all of them are done. plan_tool runs a graph of its own
// for one tool:
//
//	START → query → assess ⇄ query ; assess → plan → END
//
// query reads the schema and SampleRows rows of every table first, then the
// statements the assessment asked for; assess asks the model (llm.GenerateJSON
// with Assessment) whether the data is enough; after MaxQueryRounds targeted
// rounds the tool is planned with the data there is; plan asks for a
// PlanReply and checks which cases use values seen in the rows (Case.Grounded).
//
// # Read-only data
//
// Every statement goes through the shared read-only layer
// (sqlread.Database.Query). sqlread.SQLiteDB opens the file read-only
// (mode=ro, PRAGMA query_only) and refuses, before SQLite sees it,
// anything that is not a single read statement (sqlread.CheckReadOnly): a
// write the model asks for becomes a "refused" line in the data it reads
// next, never a change.
//
// # Store and checkpoints
//
// The long-term store (graph.StoreFrom; give it with graph.WithStore) keeps
// the finished work under the namespace (project, environment, agent,
// thread): one item per planned tool ("plan:<tool>", a Plan, written by the
// plan node as soon as the model's plan is accepted) and "batch" (a
// BatchState: the tools in order, the current batch, the tools done). It is
// the record other programs read, it outlives the thread's checkpoints, and
// it is enough to resume at tool granularity: a run of a thread whose
// checkpoints are gone plans only the tools without a plan item.
//
// The checkpointer (graph.WithCheckpointer and WithThread, same thread ID
// as the input) keeps the work in progress: the queries run and the
// assessments made for the tools of the current batch, in the nested runs'
// namespaces. A crashed run resumed with a nil input goes on at the step that
// was running — finished tools of the batch are not run again, a tool in the
// middle of its query rounds continues from its last round — and a plan
// node that runs again after its plan reached the store reuses the stored
// plan instead of asking the model again. So no tool is planned twice.
//
// # Sources, options and degradation
//
// The tool catalogue comes from a ToolSource (an MCP server's
// *mcp.Client, or TableCatalogue over a SQL table) and the rows from a
// sqlread.Database (sqlread.SQLiteDB, sqlread.PostgresDB, or MCPDatabase
// over an MCP server exposing the database). BatchSize and Concurrency
// (tools planned at once) are options. The schema is read once per run
// (by load) and handed to every tool. Each Plan carries the model's
// Confidence and the Data (statements and rows) it was based on.
//
// A schema that cannot be read does not stop the run: tools are planned
// from their descriptions and each plan's Note says what could not be
// read. A catalogue that cannot be read falls back to the tools an
// earlier run of the thread recorded (BatchState), saying so in the
// progress events.
//
// Prompts are templates (Config.Prompts; PromptData) over the defaults
// DefaultSystemPrompt, DefaultAssessPrompt and DefaultPlanPrompt.
//
// # Embedding
//
// New(ctx, Config{Model, Tools or Sample, DB or Database, Project,
// Environment}) builds the app; runs need a store (graph.WithStore), and
// the thread (Input, or the run's scope) names the plans' namespace:
//
//	app, err := testplanner.New(ctx, testplanner.Config{
//		Model: model, DB: pg, // sqlread.OpenPostgres(ctx, dsn, "public")
//		Tools: catalogue,     // an MCP client, or TableCatalogue
//		Project: "shop", Environment: "staging",
//		BatchSize: 10, Concurrency: 3,
//	})
//	res, err := app.Graph.Invoke(ctx, app.Input(""), graph.WithStore(st), graph.WithCheckpointer(saver), graph.WithThread(id))
//
// trellis.yaml's apps.testplanner carries the same as Settings:
//
//	apps:
//	  testplanner:
//	    database: postgres://reader@db:5432/shop
//	    catalogue_table: tool_catalogue
//	    batch_size: 10
//	    concurrency: 3
//	    prompts: {system: "You write test plans for a {{.Dialect}}-backed API. ..."}
//
// See Example and Config.
package testplanner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/sqlread"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/tool"
)

// Defaults of Config.
const (
	DefaultBatchSize      = 5
	DefaultMaxQueryRounds = 3
	DefaultSampleRows     = 5
	DefaultMaxRows        = 20
	DefaultMaxQueries     = 5
	DefaultAgent          = "testplanner"
)

// Store item keys under a thread's namespace.
const (
	BatchItem  = "batch"
	planPrefix = "plan:"
)

// ToolSource lists the tools to plan for; *mcp.Client is one.
type ToolSource interface {
	Tools(ctx context.Context) ([]tool.Tool, error)
}

// Config builds a planner graph.
type Config struct {
	// Model writes the assessments and plans (required).
	Model llm.Model
	// Middleware wraps the assessment and plan calls, in order (their
	// model hooks; see package agent/middleware).
	Middleware []middleware.Middleware
	// Tools lists the tools of the system under test (required).
	Tools ToolSource
	// DB is the system's database, read-only (required).
	DB sqlread.Database
	// Project, Environment and Agent are the first three elements of the
	// store namespace; the thread (from Input) is the fourth. Project and
	// Environment are required; Agent defaults to DefaultAgent.
	Project, Environment, Agent string
	// BatchSize is how many tools are planned together (DefaultBatchSize).
	BatchSize int
	// MaxQueryRounds bounds the rounds of targeted queries per tool
	// (DefaultMaxQueryRounds); after the last one the tool is planned with
	// the data there is.
	MaxQueryRounds int
	// SampleRows is how many rows of each table the first round reads
	// (DefaultSampleRows).
	SampleRows int
	// MaxRows bounds the rows of one targeted query (DefaultMaxRows).
	MaxRows int
	// MaxQueries bounds the statements of one round (DefaultMaxQueries);
	// further ones are dropped.
	MaxQueries int
	// Concurrency bounds how many tools of a batch are planned at once
	// (default: BatchSize, all of them).
	Concurrency int
	// Prompts override prompt templates by name: PromptSystem,
	// PromptAssess and PromptPlan (defaults DefaultSystemPrompt,
	// DefaultAssessPrompt, DefaultPlanPrompt); they see PromptData.
	Prompts map[string]string

	// The fields below are read by New only.

	// Database is the SQLite file New opens read-only when DB is nil; the
	// App closes it.
	Database string
	// Sample, for New: create the sample shop database at Database when
	// the file is missing, and when Tools is nil serve the sample shop MCP
	// server in process (default false: both must be given).
	Sample bool
}

func (c *Config) check() error {
	var errs []error
	if c.Model == nil {
		errs = append(errs, errors.New("Config.Model is nil; pass the llm.Model that writes the plans"))
	}
	if c.Tools == nil {
		errs = append(errs, errors.New("Config.Tools is nil; pass the *mcp.Client of the server to plan for"))
	}
	if c.DB == nil {
		errs = append(errs, errors.New("Config.DB is nil; pass the database to read (sqlread.OpenReadOnly)"))
	}
	if c.Project == "" || c.Environment == "" {
		errs = append(errs, errors.New("Config.Project and Config.Environment name the store namespace and must both be set"))
	}
	for _, n := range []struct {
		name string
		v    *int
		def  int
	}{{"BatchSize", &c.BatchSize, DefaultBatchSize}, {"MaxQueryRounds", &c.MaxQueryRounds, DefaultMaxQueryRounds},
		{"SampleRows", &c.SampleRows, DefaultSampleRows}, {"MaxRows", &c.MaxRows, DefaultMaxRows}, {"MaxQueries", &c.MaxQueries, DefaultMaxQueries},
		{"Concurrency", &c.Concurrency, max(c.BatchSize, DefaultBatchSize)}} {
		switch {
		case *n.v < 0:
			errs = append(errs, fmt.Errorf("field %s of Config is %d; leave it 0 for the default (%d) or make it positive", n.name, *n.v, n.def))
		case *n.v == 0:
			*n.v = n.def
		}
	}
	if c.Agent == "" {
		c.Agent = DefaultAgent
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("testplanner: %w", err)
	}
	return nil
}

// Namespace returns the store namespace of a thread's plans:
// (project, environment, agent, thread).
func (c Config) Namespace(thread string) []string {
	agent := c.Agent
	if agent == "" {
		agent = DefaultAgent
	}
	return []string{c.Project, c.Environment, agent, thread}
}

// ToolInfo is a tool of the system under test.
type ToolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	ReadOnly    bool            `json:"read_only,omitempty"`
}

// Plan is the test plan of one tool, as stored and returned.
type Plan struct {
	Tool string `json:"tool"`
	// Batch is the index (from 0) of the batch the tool was planned in.
	Batch int    `json:"batch"`
	Cases []Case `json:"cases"`
	// QueryRounds counts the rounds of targeted queries run; Queries the
	// statements (refused ones included).
	QueryRounds int `json:"query_rounds"`
	Queries     int `json:"queries"`
	// Note says how gathering data ended (the model's last reason, or that
	// the round budget ran out), and what could not be read.
	Note string `json:"note,omitempty"`
	// Confidence is the model's confidence in the plan, from 0 to 1 (0
	// when it gave none).
	Confidence float64 `json:"confidence"`
	// Data are the statements the plan was based on and the rows they
	// returned (the sample rows first, then the targeted rounds).
	Data []Finding `json:"data,omitempty"`
}

// Case is one test case of a plan.
type Case struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
	Expected  string         `json:"expected"`
	DataUsed  []string       `json:"data_used"`
	// Grounded is set by the planner, not the model: some argument value
	// appears in the rows the queries returned.
	Grounded bool `json:"grounded"`
}

// BatchState is the store's record of a thread's batches.
type BatchState struct {
	// Tools lists every tool in the order batches take them.
	Tools     []string `json:"tools"`
	BatchSize int      `json:"batch_size"`
	// Batch is the batch in progress (from 0); Batches when complete.
	Batch   int `json:"batch"`
	Batches int `json:"batches"`
	// Done lists the tools that have a plan, in tool order.
	Done     []string `json:"done"`
	Complete bool     `json:"complete"`
}

// Progress is what the planner reports as custom stream events
// (graph.EventCustom) while it runs.
type Progress struct {
	Batch   int    `json:"batch"`
	Tool    string `json:"tool,omitempty"`
	Message string `json:"message"`
}

func (p Progress) String() string {
	if p.Tool == "" {
		return fmt.Sprintf("batch %d: %s", p.Batch+1, p.Message)
	}
	return fmt.Sprintf("batch %d, %s: %s", p.Batch+1, p.Tool, p.Message)
}

// count formats n and a noun: one, or else many.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

var (
	threadKey = graph.NewKey[string]("thread")
	toolsKey  = graph.NewKey[[]ToolInfo]("tools")
	schemaRun = graph.NewKey[runSchema]("schema_of_run")
	batchKey  = graph.NewKey[int]("batch")
	plansKey  = graph.NewKey("plans", graph.MergeByIDFunc(func(p Plan) string { return p.Tool }))
)

// Input starts a run for thread: the fourth element of the store
// namespace. Use the same ID for graph.WithThread, so checkpoints and store
// items belong together. Resume a crashed run with a nil input instead.
func Input(thread string) graph.Update { return graph.Writes(threadKey.Set(thread)) }

// Plans returns the plans in a final state, by tool name.
func Plans(s graph.State) []Plan {
	return sorted(plansKey.Get(s), func(p Plan) string { return p.Tool })
}

// toolTask is plan_tool's payload.
type toolTask struct {
	Tool      ToolInfo  `json:"tool"`
	Schema    runSchema `json:"schema"`
	Batch     int       `json:"batch"`
	Namespace []string  `json:"namespace"`
}

type planner struct {
	cfg     Config
	chain   *middleware.Chain // Config.Middleware: the model calls go through its hooks
	inner   *graph.Graph
	prompts map[string]string // rendered
}

// NewGraph builds the planner graph over cfg.Model, cfg.Tools and cfg.DB
// (all required here; New fills them from the other fields). Run it with
// Input(thread) — or an empty input and the thread as the run's scope
// (apps.WithScope) —, a store (graph.WithStore) and, to resume after a
// crash, a checkpointer and the same thread (graph.WithCheckpointer,
// graph.WithThread). opts are run options for every run (see
// graph.Builder.Compile).
func NewGraph(cfg Config, opts ...graph.RunOption) (*graph.Graph, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	chain, err := middleware.NewChain(cfg.Middleware...)
	if err != nil {
		return nil, fmt.Errorf("testplanner: Config.Middleware: %w", err)
	}
	p := &planner{cfg: cfg, chain: chain}
	if err := p.renderPrompts(); err != nil {
		return nil, err
	}
	inner, err := p.toolGraph()
	if err != nil {
		return nil, err
	}
	p.inner = inner
	b := graph.New(threadKey, toolsKey, schemaRun, batchKey, plansKey)
	b.SetName("testplanner")
	b.AddNode("load", p.load)
	b.AddNode("batch", p.batch)
	graph.AddSendNode(b, "plan_tool", p.planTool)
	b.SetEntry("load")
	b.AddEdge("load", "batch")
	b.AddFanout("batch", p.dispatch, "plan_tool", graph.END)
	b.AddEdge("plan_tool", "batch")
	return b.Compile(append([]graph.RunOption{graph.WithMaxConcurrency(cfg.Concurrency)}, opts...)...)
}

var errNoStore = errors.New("testplanner: the run has no store; pass graph.WithStore (store/sqlite keeps it across crashes)")

func (p *planner) load(ctx context.Context, s graph.State) (graph.Output, error) {
	st := graph.StoreFrom(ctx)
	if st == nil {
		return nil, errNoStore
	}
	thread := threadKey.Get(s)
	if thread == "" {
		thread = apps.Scope(ctx)
	}
	if thread == "" {
		return nil, errors.New("testplanner: the run has no thread; start it with testplanner.Input(threadID), or run it with apps.WithScope(ctx, threadID)")
	}
	infos, err := p.catalogue(ctx, st, thread)
	if err != nil {
		return nil, err
	}
	known := map[string]bool{}
	for _, in := range infos {
		known[in.Name] = true
	}
	infos = sorted(infos, func(t ToolInfo) string { return t.Name })
	stored, err := LoadPlans(ctx, st, p.cfg.Namespace(thread))
	if err != nil {
		return nil, err
	}
	var plans []Plan
	for _, pl := range stored {
		if known[pl.Tool] { // plans of tools the server no longer has stay in the store only
			plans = append(plans, pl)
		}
	}
	if len(plans) > 0 {
		graph.Emit(ctx, Progress{Message: fmt.Sprintf("resuming: %d of %d tools already have a plan in the store", len(plans), len(infos))})
	}
	// The schema is read once per run and handed to every tool.
	rs := readSchema(ctx, p.cfg.DB)
	if rs.Err != "" {
		graph.Emit(ctx, Progress{Message: "the database schema could not be read (" + rs.Err + "); the tools are planned from their descriptions"})
	}
	return graph.Writes(threadKey.Set(thread), toolsKey.Set(infos), schemaRun.Set(rs), graph.Append(plansKey, plans...), batchKey.Set(0)), nil
}

// catalogue lists the tools to plan for. When the catalogue cannot be
// read, the planner degrades to the tools an earlier run of the thread
// recorded in the store (by name only), saying so; with no such record
// there is nothing to plan, and the error says why.
func (p *planner) catalogue(ctx context.Context, st store.Store, thread string) ([]ToolInfo, error) {
	list, err := p.cfg.Tools.Tools(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		prior, ok, lerr := LoadBatchState(ctx, st, p.cfg.Namespace(thread))
		if lerr != nil || !ok || len(prior.Tools) == 0 {
			return nil, fmt.Errorf("testplanner: the tool catalogue could not be read (%w), and the thread records no earlier list to plan from; check the catalogue source and run again", err)
		}
		graph.Emit(ctx, Progress{Message: fmt.Sprintf("the tool catalogue could not be read (%v); planning the %d tools an earlier run recorded, without their descriptions", err, len(prior.Tools))})
		infos := make([]ToolInfo, len(prior.Tools))
		for i, n := range prior.Tools {
			infos[i] = ToolInfo{Name: n, Description: CatalogueUnreadable}
		}
		return infos, nil
	}
	if len(list) == 0 {
		return nil, errors.New("testplanner: the server lists no tools, so there is nothing to plan")
	}
	infos := make([]ToolInfo, len(list))
	known := map[string]bool{}
	for i, t := range list {
		in := t.Info()
		if in.Name == "" || known[in.Name] {
			return nil, fmt.Errorf("testplanner: the tool list has an empty or repeated name %q; tool names must be unique to key their plans", in.Name)
		}
		infos[i] = ToolInfo{Name: in.Name, Description: in.Description, InputSchema: in.Parameters, ReadOnly: in.ReadOnly}
		known[in.Name] = true
	}
	return infos, nil
}

// CatalogueUnreadable is the description of a tool planned from an
// earlier run's record because the catalogue could not be read.
const CatalogueUnreadable = "(the tool catalogue could not be read: only the name is known)"

// batch moves to the first batch with a tool left to plan and records the
// batch state in the store.
func (p *planner) batch(ctx context.Context, s graph.State) (graph.Output, error) {
	tools, done := toolsKey.Get(s), planned(s)
	size := p.cfg.BatchSize
	batches := (len(tools) + size - 1) / size
	b := batchKey.Get(s)
	for b < batches && len(p.todo(tools, done, b)) == 0 {
		b++
	}
	state := BatchState{BatchSize: size, Batch: b, Batches: batches, Complete: b == batches, Done: []string{}}
	for _, t := range tools {
		state.Tools = append(state.Tools, t.Name)
		if done[t.Name] {
			state.Done = append(state.Done, t.Name)
		}
	}
	st := graph.StoreFrom(ctx)
	if st == nil {
		return nil, errNoStore
	}
	if err := store.Put(ctx, st, p.cfg.Namespace(threadKey.Get(s)), BatchItem, state, store.PutOptions{}); err != nil {
		return nil, fmt.Errorf("testplanner: save the batch state: %w", err)
	}
	if state.Complete {
		graph.Emit(ctx, Progress{Batch: max(batches-1, 0), Message: fmt.Sprintf("all %d tools planned", len(tools))})
	} else {
		graph.Emit(ctx, Progress{Batch: b, Message: fmt.Sprintf("planning %s (%d of %d done)", count(len(p.todo(tools, done, b)), "tool", "tools"), len(state.Done), len(tools))})
	}
	return graph.Writes(batchKey.Set(b)), nil
}

func (p *planner) dispatch(_ context.Context, s graph.State) ([]graph.Target, error) {
	tools, b := toolsKey.Get(s), batchKey.Get(s)
	todo := p.todo(tools, planned(s), b)
	if len(todo) == 0 {
		return []graph.Target{graph.To(graph.END)}, nil
	}
	ns := p.cfg.Namespace(threadKey.Get(s))
	out := make([]graph.Target, len(todo))
	for i, t := range todo {
		out[i] = graph.Send("plan_tool", toolTask{Tool: t, Schema: schemaRun.Get(s), Batch: b, Namespace: ns})
	}
	return out, nil
}

// todo returns the tools of batch b without a plan.
func (p *planner) todo(tools []ToolInfo, done map[string]bool, b int) []ToolInfo {
	lo := b * p.cfg.BatchSize
	if lo >= len(tools) {
		return nil
	}
	var out []ToolInfo
	for _, t := range tools[lo:min(lo+p.cfg.BatchSize, len(tools))] {
		if !done[t.Name] {
			out = append(out, t)
		}
	}
	return out
}

func planned(s graph.State) map[string]bool {
	done := map[string]bool{}
	for _, p := range plansKey.Get(s) {
		done[p.Tool] = true
	}
	return done
}

// planTool runs the per-tool graph as a nested run: with a checkpointer it
// checkpoints in this task's namespace, so a resumed task continues where
// it stopped.
func (p *planner) planTool(ctx context.Context, _ graph.State, t toolTask) (graph.Output, error) {
	res, err := p.inner.Invoke(ctx, graph.Writes(toolKey.Set(t.Tool), tablesKey.Set(t.Schema), batchIdxKey.Set(t.Batch), nsKey.Set(t.Namespace)))
	if err != nil {
		return nil, err
	}
	plan, ok := planKey.Lookup(res.State)
	if !ok {
		return nil, fmt.Errorf("testplanner: planning %s ended without a plan", t.Tool.Name)
	}
	return graph.Writes(graph.Append(plansKey, plan)), nil
}

// LoadPlans returns the plans stored under namespace (see
// Config.Namespace), by tool name.
func LoadPlans(ctx context.Context, st store.Store, namespace []string) ([]Plan, error) {
	var out []Plan
	const page = 100
	for off := 0; ; off += page {
		items, err := st.Search(ctx, namespace, store.Query{Limit: page, Offset: off})
		if err != nil {
			return nil, fmt.Errorf("testplanner: read the stored plans: %w", err)
		}
		for _, it := range items {
			if !slices.Equal(it.Namespace, namespace) || !strings.HasPrefix(it.Key, planPrefix) {
				continue
			}
			var pl Plan
			if err := json.Unmarshal(it.Value, &pl); err != nil {
				return nil, fmt.Errorf("testplanner: stored plan %s/%s does not decode (delete it to plan the tool again): %w", strings.Join(namespace, "/"), it.Key, err)
			}
			out = append(out, pl)
		}
		if len(items) < page {
			return sorted(out, func(p Plan) string { return p.Tool }), nil
		}
	}
}

// LoadBatchState returns the batch state stored under namespace; ok is
// false when there is none.
func LoadBatchState(ctx context.Context, st store.Store, namespace []string) (state BatchState, ok bool, err error) {
	state, err = store.Get[BatchState](ctx, st, namespace, BatchItem)
	if errors.Is(err, store.ErrNotFound) {
		return BatchState{}, false, nil
	}
	if err != nil {
		return BatchState{}, false, fmt.Errorf("testplanner: read the batch state: %w", err)
	}
	return state, true, nil
}

func sorted[T any](xs []T, key func(T) string) []T {
	out := slices.Clone(xs)
	slices.SortStableFunc(out, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
	return out
}
