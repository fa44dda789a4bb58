// Package sqlrouter is the SQL router app: a router agent
// (agent/router) answers questions about a database (a sample library by
// default) by calling sub-agents, each a ReAct agent with its own prompt
// and tools; the defaults are four:
//
//   - discovery finds the tables and columns a question needs (list_tables,
//     describe_table, sample_rows);
//   - generate_sql writes one SELECT for a question from the schema it is
//     handed (describe_table, validate_sql);
//   - fix_sql repairs a query given the error SQLite gave for it
//     (describe_table, validate_sql);
//   - execute_sql runs a query and summarises the rows (query_sql). It is
//     terminal: its answer ends the turn.
//
// The router also has validate_sql itself, to check a generated query
// before running it. Outputs travel between calls as call-chain references:
// the router hands the discovery output to generate_sql as {{call:ID}}, the
// generated query to validate_sql and, when it is invalid, the query and
// the error to fix_sql, and the valid query to execute_sql. The records of
// the router's calls keep those references, so the chain can be shown
// (Chain).
//
// Every statement goes through the shared read-only layer (sqlread): the
// database file is opened read-only and anything but a single read is
// refused before SQLite sees it. A refused write, or a discovery answer
// saying the data is not there, matches one of the router's error patterns
// and ends the turn with an error answer.
//
// A request of the form "@agent task" goes straight to that agent, without
// the router model (router.Mentions).
//
// # Configuration
//
// The sub-agents above are the defaults (DefaultAgents): Config.Agents
// replaces them with AgentSpecs (name, description, prompt template,
// tools by name, terminal), Config.Extra adds any other sub-agent — a
// compiled graph, or a function through RunnableAgent — and in `trellis
// serve` Settings.Assistants offers other assistants. Config.Routes maps
// route keys to agents ("@key task" skips the router model). Every prompt
// is a template over PromptData (Config.Prompts).
//
// The database is SQLite (sqlread.OpenReadOnly) or PostgreSQL
// (sqlread.OpenPostgres); validate_sql asks the engine itself. A schema
// read that fails is answered with what could be seen and a
// SchemaUnreadable line, and the turn goes on.
//
// Each sub-agent tool call emits a CallEvent; Tree joins them with the
// router's records into the chain per tool-call ID.
//
// # Embedding
//
//	app, err := sqlrouter.New(ctx, sqlrouter.Config{
//		Model:  model,
//		DB:     pg, // sqlread.OpenPostgres(ctx, dsn, "public")
//		Routes: map[string]string{"fix": sqlrouter.FixAgent},
//		Extra:  []router.Agent{helpdesk},
//		AgentSettings:  map[string]llm.Settings{sqlrouter.GenerateAgent: {Model: strong, MaxTokens: 800}},
//		RouterSettings: llm.Settings{Model: fast},
//		History:        history.LastTurns{N: 10},
//	})
//
// New(ctx, Config{Model, Database or DB}) builds the app; AgentModels and
// AgentSettings give sub-agents models and options of their own,
// RouterSettings the routing call, History bounds the routing call's view
// of a long thread. Runs need a checkpointer and a thread (the router may
// ask a person). trellis.yaml's apps.sqlrouter carries Settings, models by
// name (resolved through apps.Env.Resolve):
//
//	apps:
//	  sqlrouter:
//	    database: postgres://reader@db:5432/library
//	    routes: {fix: fix_sql}
//	    agent_settings: {generate_sql: {model: strong, max_tokens: 800}}
//	    router_settings: {model: fast, temperature: 0}
//	    history: {policy: last_turns, turns: 10}
//	    agents:   # or replace the sub-agents, each with its settings
//	      - {name: lister, description: "Lists tables.", prompt: "List.", tools: [list_tables], settings: {model: fast}}
//
// See Example and Config.
package sqlrouter

import (
	"time"

	"github.com/trellis-agents/trellis/apps/sqlread"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
)

// Question is the question the example asks.
const Question = "Which book genres were borrowed most in 2025? Give the number of loans for each genre."

// The sub-agents' names: the names the router model calls them by, the
// nodes their calls run in, and the prefixes of their namespaces
// ("discovery:...").
const (
	DiscoveryAgent = "discovery"
	GenerateAgent  = "generate_sql"
	FixAgent       = "fix_sql"
	ExecuteAgent   = "execute_sql"
)

// Unavailable starts the discovery agent's answer when the database holds
// no data for the task.
const Unavailable = "DATA UNAVAILABLE:"

// The router's error patterns: a call result matching one ends the turn
// with an error answer (router.Outcome.Pattern names the one matched).
const (
	// RefusedPattern matches the read-only layer's refusal of a statement
	// that could write (sqlread.RefusedError).
	RefusedPattern = `query refused: [^\n]*read-only`
	// UnavailablePattern matches an answer saying the data is not there.
	UnavailablePattern = `(?m)^\s*DATA UNAVAILABLE:`
)

// Deadline bounds each run of the router.
const Deadline = 5 * time.Minute

// agentSteps is each sub-agent's step limit (a nested run does not
// inherit the router's).
const agentSteps = 24

// NewGraph builds the router over model and db with the default
// sub-agents (DefaultAgents), the router's own validate_sql, the error
// patterns and the deadline. db is read through the read-only layer only
// (sqlread.OpenReadOnly or sqlread.OpenPostgres); ask_human needs a
// checkpointer and a thread on the run. agentModels, when it names a
// sub-agent, gives that agent its own model (a cheaper one for discovery,
// say); the others use model. Build returns the same from a whole Config.
func NewGraph(model llm.Model, db sqlread.Database, agentModels map[string]llm.Model) (*graph.Graph, error) {
	return Build(Config{Model: model, DB: db, AgentModels: agentModels})
}
