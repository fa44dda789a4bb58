package testplanner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/sqlread"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/store"
)

// Assessment is the model's judgement of the data gathered for a tool.
type Assessment struct {
	Enough  bool     `json:"enough" jsonschema:"true when the rows are enough to write the test cases with real values"`
	Queries []string `json:"queries,omitempty" jsonschema:"when not enough: read-only SQLite SELECT statements that would fill the gap"`
	Reason  string   `json:"reason" jsonschema:"what is there, or what is missing"`
}

// PlanReply is the test plan the model writes for a tool.
type PlanReply struct {
	Tool  string      `json:"tool" jsonschema:"the tool's name"`
	Cases CaseReplies `json:"cases"`
	// Confidence is the model's own confidence that the cases are right
	// and runnable on this data, from 0 to 1.
	Confidence float64 `json:"confidence,omitempty" jsonschema:"from 0 to 1: how sure you are that the cases are right and runnable on this data"`
}

// CaseReply is one case of a PlanReply.
type CaseReply struct {
	Name      string         `json:"name" jsonschema:"what the case checks, in a few words"`
	Arguments map[string]any `json:"arguments" jsonschema:"the call's arguments, using values from the rows"`
	Expected  string         `json:"expected" jsonschema:"the observable result the test asserts"`
	DataUsed  []string       `json:"data_used" jsonschema:"the rows the values come from, as table.column=value"`
}

// CaseReplies is a PlanReply's cases: at least one.
type CaseReplies []CaseReply

// JSONSchema asks for at least one case.
func (CaseReplies) JSONSchema() *jsonschema.Schema {
	s, err := jsonschema.For[[]CaseReply](nil)
	if err != nil {
		s = &jsonschema.Schema{Type: "array"}
	}
	s.Type, s.Types = "array", nil // never null
	s.MinItems = jsonschema.Ptr(1)
	return s
}

// Finding is one statement run for a tool and what came back.
type Finding struct {
	// Round is 0 for the sample rows, then 1, 2, ... for targeted rounds.
	Round int           `json:"round"`
	SQL   string        `json:"sql"`
	Rows  *sqlread.Rows `json:"rows,omitempty"`
	// Error is why the statement was refused or failed.
	Error string `json:"error,omitempty"`
}

// Keys of the per-tool graph.
var (
	toolKey     = graph.NewKey[ToolInfo]("tool")
	tablesKey   = graph.NewKey[runSchema]("run_schema")
	batchIdxKey = graph.NewKey[int]("batch_index")
	nsKey       = graph.NewKey[[]string]("store_namespace")
	schemaKey   = graph.NewKey[string]("schema")
	findingsKey = graph.NewKey("findings", graph.Concat[Finding]())
	roundKey    = graph.NewKey[int]("round")
	pendingKey  = graph.NewKey[[]string]("pending_queries")
	reasonKey   = graph.NewKey[string]("reason")
	planKey     = graph.NewKey[Plan]("plan")
)

func (p *planner) toolGraph() (*graph.Graph, error) {
	b := graph.New(toolKey, tablesKey, batchIdxKey, nsKey, schemaKey, findingsKey, roundKey, pendingKey, reasonKey, planKey)
	b.SetName("testplanner.tool")
	b.AddNode("query", p.query)
	b.AddNode("assess", p.assess)
	b.AddNode("plan", p.plan)
	b.SetEntry("query")
	b.AddConditionalEdges("query", func(_ context.Context, s graph.State) (string, error) {
		if roundKey.Get(s) >= p.cfg.MaxQueryRounds {
			return "plan", nil // the budget is used up: plan with what there is
		}
		return "assess", nil
	}, map[string]string{"assess": "assess", "plan": "plan"})
	b.AddConditionalEdges("assess", func(_ context.Context, s graph.State) (string, error) {
		if len(pendingKey.Get(s)) > 0 {
			return "query", nil
		}
		return "plan", nil
	}, map[string]string{"query": "query", "plan": "plan"})
	b.AddEdge("plan", graph.END)
	// A tool's planning loop has its own step budget: a nested run would
	// otherwise inherit the whole run's limit, which counts batches.
	return b.Compile(graph.WithStepLimit(graph.DefaultStepLimit))
}

// query reads the schema and sample rows the first time, then the pending
// targeted queries as one more round.
func (p *planner) query(ctx context.Context, s graph.State) (graph.Output, error) {
	t := toolKey.Get(s)
	if _, ok := schemaKey.Lookup(s); !ok {
		// The run's schema, read once by the load node; a tool graph run
		// on its own reads it here.
		rs, ok := tablesKey.Lookup(s)
		if !ok {
			rs = readSchema(ctx, p.cfg.DB)
		}
		if rs.Err != "" {
			// Degrade: plan from the tool's description, and say what
			// could not be seen.
			graph.Emit(ctx, Progress{Batch: batchIdxKey.Get(s), Tool: t.Name, Message: "the database schema could not be read: " + rs.Err})
			return graph.Writes(schemaKey.Set(SchemaUnreadable + " " + rs.Err)), nil
		}
		tables := rs.Tables
		var ddl []string
		var found []Finding
		for _, tb := range tables {
			ddl = append(ddl, tb.SQL+";")
			q := fmt.Sprintf("SELECT * FROM %s LIMIT %d", sqlread.QuoteIdent(tb.Name), p.cfg.SampleRows)
			found = append(found, p.run(ctx, 0, q, p.cfg.SampleRows))
		}
		if err := ctx.Err(); err != nil {
			return nil, context.Cause(ctx)
		}
		return graph.Writes(schemaKey.Set(strings.Join(ddl, "\n")), graph.Append(findingsKey, found...)), nil
	}
	round := roundKey.Get(s) + 1
	var found []Finding
	for _, q := range pendingKey.Get(s) {
		found = append(found, p.run(ctx, round, q, p.cfg.MaxRows))
	}
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx) // the run is ending: keep no half-read round
	}
	graph.Emit(ctx, Progress{Batch: batchIdxKey.Get(s), Tool: t.Name, Message: fmt.Sprintf("query round %d: %s", round, count(len(found), "statement", "statements"))})
	return graph.Writes(graph.Append(findingsKey, found...), roundKey.Set(round), pendingKey.Set(nil)), nil
}

// run runs one statement; a refusal or failure is kept as the finding's
// error, for the model to read.
func (p *planner) run(ctx context.Context, round int, q string, maxRows int) Finding {
	f := Finding{Round: round, SQL: q}
	rows, err := p.cfg.DB.Query(ctx, q, maxRows)
	if err != nil {
		f.Error = err.Error()
	}
	f.Rows = rows
	return f
}

// The prompt names Config.Prompts may override.
const (
	PromptSystem = "system"
	PromptAssess = "assess"
	PromptPlan   = "plan"
)

// PromptData is what the prompt templates see.
type PromptData struct {
	// Dialect is the database's SQL dialect ("SQLite", "PostgreSQL").
	Dialect string
	// MaxQueries is Config.MaxQueries: the most statements one round may
	// ask for.
	MaxQueries int
}

// DefaultSystemPrompt is the system prompt of both model calls.
const DefaultSystemPrompt = `You write test plans for the tools of an API. Each plan must run against the API's real database, so use values that exist in the rows you are shown (IDs, emails, amounts, statuses) for cases that should succeed, and values you have seen to be missing or against a rule for cases that should fail. Never invent a value that the rows could have given you. The database is read-only: only SELECT statements are run. Reply with the JSON object asked for, and nothing else.`

// DefaultAssessPrompt instructs the assessment (after AssessPrompt and
// RoundsPrompt, before the tool and the data).
const DefaultAssessPrompt = "Decide whether the data below is enough to write test cases for this tool with real values: " +
	"values that exist for cases that should succeed, and values that are missing or break a rule for cases that should fail. " +
	"If it is not enough, ask for at most {{.MaxQueries}} read-only {{.Dialect}} SELECT statements that would fill the gap (anything else is refused).\n" +
	`Reply as {"enough": true or false, "queries": ["SELECT ..."], "reason": "..."}.`

// DefaultPlanPrompt instructs the plan (after PlanPrompt, before the tool
// and the data).
const DefaultPlanPrompt = "Write 3 to 8 test cases: the main success path, each rule in the description, and invalid input. " +
	"Arguments are a JSON object for the tool's input schema (break the schema only in cases that test invalid input) " +
	"and take their values from the rows below; data_used names the rows they come from (table.column=value). " +
	"Expected is what the call must return or change.\n" +
	"Confidence is how sure you are, from 0 to 1, that the cases are right and can run on this data.\n" +
	`Reply as {"tool": "...", "cases": [{"name": "...", "arguments": {...}, "expected": "...", "data_used": ["..."]}], "confidence": 0.0}.`

// renderPrompts renders the prompt templates once, at build time.
func (p *planner) renderPrompts() error {
	texts, err := apps.Prompts(map[string]string{PromptSystem: DefaultSystemPrompt, PromptAssess: DefaultAssessPrompt, PromptPlan: DefaultPlanPrompt}, p.cfg.Prompts)
	if err != nil {
		return fmt.Errorf("testplanner: Config.%w", err)
	}
	data := PromptData{Dialect: sqlread.Dialect(p.cfg.DB), MaxQueries: p.cfg.MaxQueries}
	p.prompts = map[string]string{}
	for name, text := range texts {
		if p.prompts[name], err = apps.Prompt("testplanner."+name, text, data); err != nil {
			return fmt.Errorf("testplanner: %w", err)
		}
	}
	return nil
}

// AssessPrompt and PlanPrompt begin the user messages of the two model
// calls; scripted models match on them.
const (
	AssessPrompt = "TASK: assess data for tool %q"
	PlanPrompt   = "TASK: write the test plan for tool %q"
	// RoundsPrompt follows AssessPrompt with the rounds used so far.
	RoundsPrompt = "Targeted query rounds used: %d of %d."
)

func (p *planner) assess(ctx context.Context, s graph.State) (graph.Output, error) {
	t, round := toolKey.Get(s), roundKey.Get(s)
	var b strings.Builder
	fmt.Fprintf(&b, AssessPrompt+"\n", t.Name)
	fmt.Fprintf(&b, RoundsPrompt+"\n", round, p.cfg.MaxQueryRounds)
	b.WriteString(p.prompts[PromptAssess] + "\n\n")
	writeTool(&b, t)
	writeData(&b, schemaKey.Get(s), findingsKey.Get(s))
	req := &llm.Request{Messages: []llm.Message{llm.System(p.prompts[PromptSystem]), llm.User(b.String())}}
	res, err := middleware.GenerateJSON[Assessment](ctx, p.chain, &middleware.ModelCall{Request: req, Model: p.cfg.Model, State: s})
	if err != nil {
		return nil, fmt.Errorf("testplanner: assess the data for %s: %w", t.Name, err)
	}
	a := res.Value
	var queries []string
	if !a.Enough {
		seen := map[string]bool{}
		for _, f := range findingsKey.Get(s) {
			seen[normSQL(f.SQL)] = true
		}
		for _, q := range a.Queries {
			n := normSQL(q)
			if n == "" || seen[n] {
				continue // nothing new to learn from it
			}
			seen[n] = true
			if queries = append(queries, q); len(queries) == p.cfg.MaxQueries {
				break
			}
		}
	}
	msg := "the data is enough"
	if len(queries) > 0 {
		msg = fmt.Sprintf("not enough, %s more", count(len(queries), "query", "queries"))
	} else if !a.Enough {
		msg = "not enough, but no new query to run"
	}
	graph.Emit(ctx, Progress{Batch: batchIdxKey.Get(s), Tool: t.Name, Message: msg + ": " + a.Reason})
	return graph.Writes(pendingKey.Set(queries), reasonKey.Set(a.Reason)), nil
}

func normSQL(q string) string {
	return strings.TrimRight(strings.Join(strings.Fields(strings.ToLower(q)), " "), "; ")
}

func (p *planner) plan(ctx context.Context, s graph.State) (graph.Output, error) {
	t, ns := toolKey.Get(s), nsKey.Get(s)
	st := graph.StoreFrom(ctx)
	if st == nil {
		return nil, errNoStore
	}
	key := planPrefix + t.Name
	// A plan already stored was accepted by an earlier attempt of this
	// step that did not commit (a crash): reuse it, never plan twice.
	if prior, err := store.Get[Plan](ctx, st, ns, key); err == nil {
		graph.Emit(ctx, Progress{Batch: prior.Batch, Tool: t.Name, Message: "plan found in the store, not asked again"})
		return graph.Writes(planKey.Set(prior)), nil
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("testplanner: %s: read the stored plan: %w", t.Name, err)
	}
	findings := findingsKey.Get(s)
	round := roundKey.Get(s)
	note := reasonKey.Get(s)
	if round >= p.cfg.MaxQueryRounds && len(pendingKey.Get(s)) == 0 {
		note = fmt.Sprintf("the %d rounds of queries are used up; planned with the data gathered", p.cfg.MaxQueryRounds)
	}
	var b strings.Builder
	fmt.Fprintf(&b, PlanPrompt+"\n", t.Name)
	b.WriteString(p.prompts[PromptPlan] + "\n\n")
	writeTool(&b, t)
	writeData(&b, schemaKey.Get(s), findings)
	if note != "" {
		fmt.Fprintf(&b, "\nNote: %s\n", note)
	}
	req := &llm.Request{Messages: []llm.Message{llm.System(p.prompts[PromptSystem]), llm.User(b.String())}}
	res, err := middleware.GenerateJSON[PlanReply](ctx, p.chain, &middleware.ModelCall{Request: req, Model: p.cfg.Model, State: s})
	if err != nil {
		return nil, fmt.Errorf("testplanner: write the plan for %s: %w", t.Name, err)
	}
	values := seenValues(findings)
	if strings.HasPrefix(schemaKey.Get(s), SchemaUnreadable) {
		note = strings.TrimSpace(note + " " + schemaKey.Get(s) + "; planned from the tool's description only.")
	}
	plan := Plan{Tool: t.Name, Batch: batchIdxKey.Get(s), QueryRounds: round, Note: note,
		Confidence: min(max(res.Value.Confidence, 0), 1), Data: findings}
	for _, f := range findings {
		if f.Round > 0 {
			plan.Queries++
		}
	}
	grounded := 0
	for _, c := range res.Value.Cases {
		pc := Case{Name: c.Name, Arguments: c.Arguments, Expected: c.Expected, DataUsed: c.DataUsed, Grounded: usesSeen(c.Arguments, values)}
		if pc.Arguments == nil {
			pc.Arguments = map[string]any{}
		}
		if pc.Grounded {
			grounded++
		}
		plan.Cases = append(plan.Cases, pc)
	}
	if err := store.Put(ctx, st, ns, key, plan, store.PutOptions{}); err != nil {
		return nil, fmt.Errorf("testplanner: %s: save the plan: %w", t.Name, err)
	}
	graph.Emit(ctx, Progress{Batch: plan.Batch, Tool: t.Name, Message: fmt.Sprintf("planned %s, %d with values from the rows", count(len(plan.Cases), "case", "cases"), grounded)})
	return graph.Writes(planKey.Set(plan)), nil
}

func writeTool(b *strings.Builder, t ToolInfo) {
	fmt.Fprintf(b, "Tool: %s\n", t.Name)
	if t.Description != "" {
		fmt.Fprintf(b, "Description: %s\n", t.Description)
	}
	if len(t.InputSchema) > 0 {
		fmt.Fprintf(b, "Input schema: %s\n", strings.Join(strings.Fields(string(t.InputSchema)), " "))
	}
	if t.ReadOnly {
		b.WriteString("It only reads.\n")
	} else {
		b.WriteString("It changes data.\n")
	}
}

func writeData(b *strings.Builder, schema string, findings []Finding) {
	b.WriteString("\nDatabase schema:\n")
	b.WriteString(schema)
	b.WriteString("\n")
	for _, f := range findings {
		if f.Round == 0 {
			fmt.Fprintf(b, "\n-- sample: %s\n", f.SQL)
		} else {
			fmt.Fprintf(b, "\n-- round %d: %s\n", f.Round, f.SQL)
		}
		switch {
		case f.Error != "":
			fmt.Fprintf(b, "error: %s\n", f.Error)
		case f.Rows != nil:
			b.WriteString(f.Rows.Render())
			b.WriteString("\n")
		}
	}
}

// seenValues collects every non-NULL value the queries returned.
func seenValues(findings []Finding) map[string]bool {
	out := map[string]bool{}
	for _, f := range findings {
		if f.Rows == nil {
			continue
		}
		for _, r := range f.Rows.Rows {
			for _, v := range r {
				if v != nil && *v != "" {
					out[*v] = true
				}
			}
		}
	}
	return out
}

// usesSeen reports whether some string or number among the arguments
// (nested ones included) was seen in the rows.
func usesSeen(v any, seen map[string]bool) bool {
	switch v := v.(type) {
	case map[string]any:
		for _, e := range v {
			if usesSeen(e, seen) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if usesSeen(e, seen) {
				return true
			}
		}
	case string:
		return seen[v]
	case float64:
		return seen[strconv.FormatFloat(v, 'f', -1, 64)]
	}
	return false
}

// SchemaUnreadable starts the schema text a tool is planned with when the
// database's schema could not be read; the plan's Note says so too.
const SchemaUnreadable = "SCHEMA UNREADABLE:"

// runSchema is the database schema as read once per run (Err when it
// could not be read).
type runSchema struct {
	Tables []sqlread.Table `json:"tables,omitempty"`
	Err    string          `json:"err,omitempty"`
}

func readSchema(ctx context.Context, db sqlread.Database) runSchema {
	tables, err := db.Tables(ctx)
	if err != nil {
		return runSchema{Err: err.Error()}
	}
	return runSchema{Tables: tables}
}
