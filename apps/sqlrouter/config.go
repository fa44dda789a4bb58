package sqlrouter

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/sqlread"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
	"github.com/trellis-agents/trellis/tool"
)

// AgentSpec declares one sub-agent as data: a ReAct agent with a prompt
// and some of the router's database tools. The default sub-agents are
// AgentSpecs (DefaultAgents); Config.Agents (or trellis.yaml's
// apps.sqlrouter.agents) replaces them.
type AgentSpec struct {
	// Name is the tool name the router model calls the agent by (letters,
	// digits, '_' and '-').
	Name string `json:"name" yaml:"name"`
	// Description tells the router model what the agent is for and what
	// its task must hold.
	Description string `json:"description" yaml:"description"`
	// Prompt is the agent's system prompt, a template (see PromptData).
	Prompt string `json:"prompt" yaml:"prompt"`
	// Tools name the agent's tools among ToolNames.
	Tools []string `json:"tools" yaml:"tools"`
	// Terminal says the agent's successful answer ends the turn.
	Terminal bool `json:"terminal,omitempty" yaml:"terminal"`
	// MaxSteps is the agent's step limit (0: 24).
	MaxSteps int `json:"max_steps,omitempty" yaml:"max_steps"`
	// Settings are the agent's model settings: a model by name (a name
	// under trellis.yaml's models, resolved by Config.Resolve),
	// temperature, top-p, max tokens, reasoning effort. Zero: the
	// router's model with the provider's defaults.
	Settings llm.SettingsSpec `json:"settings,omitzero" yaml:"settings"`
}

// PromptData is what every prompt template of the app sees.
type PromptData struct {
	// Dialect is the database's SQL dialect: "SQLite" or "PostgreSQL".
	Dialect string
	// Unavailable is the line prefix of the discovery agent's answer when
	// the data is not there (Unavailable).
	Unavailable string
	// Agents lists the sub-agents, "name: description" per line (the
	// router prompt's use).
	Agents string
}

// The prompt names Config.Prompts may override: the router's own and one
// per default sub-agent (a sub-agent's AgentSpec.Prompt also overrides
// its prompt).
const (
	RouterPromptName = "router"
)

// DefaultRouterPrompt is the router's default system prompt template.
const DefaultRouterPrompt = `You answer questions about a lending library's {{.Dialect}} database by delegating to specialist agents and tools. ` +
	`The agents do not see this conversation: give each one a complete task.

Work in this order:
1. Call discovery to find the tables and columns the question needs.
2. Call generate_sql with the question and the discovery output, passed as {{"{{"}}call:ID{{"}}"}} with the discovery call's ID.
3. Call validate_sql with {"sql": "{{"{{"}}call:ID{{"}}"}}"}, the ID being the generate_sql call's.
4. If the result starts with "invalid:", call fix_sql with the query, the error and the discovery output, all as references. It checks its repair itself.
5. Call execute_sql with the valid query as a reference, and the question. Its answer is the final answer.

The database is read-only: nothing can change its data. If a tool says part of the schema could not be read, work with what was seen and say in the answer what could not be checked. Ask the person (ask_human) only when the question cannot be understood without them.`

// The default sub-agents' prompt templates.
const (
	DefaultDiscoveryPrompt = `You find where data lives in a {{.Dialect}} database, with list_tables, describe_table and sample_rows. ` +
		`Answer with what the task needs: the relevant tables, their relevant columns with types, how the tables join, and the formats of values you saw in sample rows (dates, codes). ` +
		`If a tool says part of the schema could not be read, use what you could see and say what you could not. ` +
		`If the database holds no data for the task, answer with one line starting with "{{.Unavailable}}" followed by what is missing.`
	DefaultGeneratePrompt = `You write one {{.Dialect}} SELECT statement that answers a question, from the schema you are given; describe_table shows a table you need to check, and validate_sql checks a query. ` +
		`Reply with only the SQL: no prose and no code fence. The database is read-only: never write a statement that changes data.`
	DefaultFixPrompt = `You repair {{.Dialect}} queries. You get a query, the error {{.Dialect}} gave for it and usually the schema. ` +
		`Find the cause (a wrong table or column name, a bad join, a syntax error), check the columns with describe_table, and confirm the repaired query with validate_sql. ` +
		`Reply with only the corrected SQL: no prose and no code fence.`
	DefaultExecutePrompt = `You run one read-only {{.Dialect}} query with query_sql and answer a question from its rows. ` +
		`Run the query you are given as it is. Then answer in a few lines: the figures the rows show (never figures they do not show) and one sentence of analysis. ` +
		`If the query fails, say so and quote the error.`
)

// ToolNames are the database tools an AgentSpec may name.
var ToolNames = []string{ListTablesName, DescribeTableName, SampleRowsName, ValidateSQLName, sqlread.SQLToolName}

// DefaultAgents returns the four default sub-agents: discovery,
// generate_sql, fix_sql and execute_sql (terminal).
func DefaultAgents() []AgentSpec {
	return []AgentSpec{
		{Name: DiscoveryAgent, Description: "Finds the tables and columns of the database that a question needs, with their types, joins and value formats. Task: the question.",
			Prompt: DefaultDiscoveryPrompt, Tools: []string{ListTablesName, DescribeTableName, SampleRowsName}},
		{Name: GenerateAgent, Description: "Writes one SELECT for a question. Task: the question and the relevant schema. Answers with only the SQL.",
			Prompt: DefaultGeneratePrompt, Tools: []string{DescribeTableName, ValidateSQLName}},
		{Name: FixAgent, Description: "Repairs a query that failed. Task: the query, the database's error and the relevant schema. Answers with only the corrected SQL.",
			Prompt: DefaultFixPrompt, Tools: []string{DescribeTableName, ValidateSQLName}},
		{Name: ExecuteAgent, Description: "Runs one read-only query and answers the question from its rows. Task: the question and the query. Its answer is the final answer.",
			Prompt: DefaultExecutePrompt, Tools: []string{sqlread.SQLToolName}, Terminal: true},
	}
}

// Settings is the part of Config that is plain data, so trellis.yaml can
// carry it (apps.sqlrouter in the file; see Entry). Every field is
// optional.
type Settings struct {
	// Database is the database to answer from: a SQLite file path, or a
	// postgres:// URL ("" : the sample SQLite library under the data
	// directory).
	Database string `json:"database,omitempty" yaml:"database"`
	// Schema is the PostgreSQL schema to read ("" : the server's search
	// path).
	Schema string `json:"schema,omitempty" yaml:"schema"`
	// Agents replace the default sub-agents (DefaultAgents) when set.
	Agents []AgentSpec `json:"agents,omitempty" yaml:"agents"`
	// RouterTools are the database tools the router itself has (nil:
	// validate_sql).
	RouterTools []string `json:"router_tools,omitempty" yaml:"router_tools"`
	// Routes are route keys: a request "@key task" goes straight to the
	// agent Routes[key], without the router model. Every agent's own name
	// is a key too.
	Routes map[string]string `json:"routes,omitempty" yaml:"routes"`
	// ErrorPatterns replace the default error patterns (RefusedPattern,
	// UnavailablePattern) when set.
	ErrorPatterns []string `json:"error_patterns,omitempty" yaml:"error_patterns"`
	// Prompts override prompt templates by name: RouterPromptName, or a
	// default agent's name.
	Prompts map[string]string `json:"prompts,omitempty" yaml:"prompts"`
	// Deadline bounds each run ("" : 5m), as a Go duration.
	Deadline string `json:"deadline,omitempty" yaml:"deadline"`
	// Assistants are other assistants of the service offered as
	// sub-agents (a service only: apps.Env.Assistant resolves them). Each
	// one's graph must keep its conversation in react.Messages and answer
	// there, as the agent graph, this app and the builder app do.
	Assistants []AssistantAgent `json:"assistants,omitempty" yaml:"assistants"`
	// AgentSettings give sub-agents, by name, model settings (the
	// default agents included; see Config.AgentSettings), models by name.
	AgentSettings map[string]llm.SettingsSpec `json:"agent_settings,omitempty" yaml:"agent_settings"`
	// RouterSettings are the routing call's settings (Config.RouterSettings).
	RouterSettings llm.SettingsSpec `json:"router_settings,omitzero" yaml:"router_settings"`
	// History is the routing call's history policy (Config.History), as
	// {"policy": "last_turns", "turns": 10}.
	History *history.Spec `json:"history,omitempty" yaml:"history"`
}

// AssistantAgent offers another assistant as a sub-agent.
type AssistantAgent struct {
	// Name is the tool name the router model calls it by; Description
	// tells the model what it is for.
	Name        string `json:"name" yaml:"name"`
	Description string `json:"description" yaml:"description"`
	// Assistant is the assistant's ID.
	Assistant string `json:"assistant" yaml:"assistant"`
	// Terminal says its answer ends the turn.
	Terminal bool `json:"terminal,omitempty" yaml:"terminal"`
}

// Build builds the router's graph from cfg (Config.DB must be open: New
// opens it from Database).
func Build(cfg Config) (*graph.Graph, error) {
	var errs []error
	if cfg.Model == nil {
		errs = append(errs, errors.New("sqlrouter: the model is nil; pass the llm.Model that plays the router and its agents (Script() for the scripted one)"))
	}
	if cfg.DB == nil {
		errs = append(errs, errors.New("sqlrouter: the database is nil; open one with sqlread.OpenReadOnly or sqlread.OpenPostgres (CreateSampleDB makes the sample)"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	db := cfg.DB
	specs := cfg.Agents
	if specs == nil {
		specs = DefaultAgents()
	}
	defaults := map[string]string{RouterPromptName: DefaultRouterPrompt}
	for _, a := range DefaultAgents() {
		defaults[a.Name] = a.Prompt
	}
	prompts, err := apps.Prompts(defaults, cfg.Prompts)
	if err != nil {
		return nil, fmt.Errorf("sqlrouter: Config.%w", err)
	}
	var lines []string
	for _, s := range specs {
		lines = append(lines, s.Name+": "+s.Description)
	}
	for _, a := range cfg.Extra {
		lines = append(lines, a.Name+": "+a.Description)
	}
	data := PromptData{Dialect: sqlread.Dialect(db), Unavailable: Unavailable, Agents: strings.Join(lines, "\n")}

	known := map[string]bool{}
	var agents []router.Agent
	var terminal []string
	for i, s := range specs {
		if s.Name == "" {
			return nil, fmt.Errorf("sqlrouter: Config.Agents[%d] has no name", i)
		}
		if known[s.Name] {
			return nil, fmt.Errorf("sqlrouter: Config.Agents names %q twice", s.Name)
		}
		known[s.Name] = true
		text := s.Prompt
		if p, ok := cfg.Prompts[s.Name]; ok && strings.TrimSpace(p) != "" {
			text = p
		} else if text == "" {
			text = prompts[s.Name]
		}
		system, err := apps.Prompt("sqlrouter."+s.Name, text, data)
		if err != nil {
			return nil, fmt.Errorf("sqlrouter: %w", err)
		}
		tools, err := dbTools(db, s.Tools)
		if err != nil {
			return nil, fmt.Errorf("sqlrouter: agent %s: %w", s.Name, err)
		}
		m := cfg.Model
		if am := cfg.AgentModels[s.Name]; am != nil {
			m = am
		}
		set, err := s.Settings.Settings("agent "+s.Name+".settings", cfg.Resolve)
		if err != nil {
			return nil, fmt.Errorf("sqlrouter: %w", err)
		}
		m = llm.WithSettings(m, cfg.AgentSettings[s.Name].Or(set))
		for j, t := range tools {
			tools[j] = traced(s.Name, t)
		}
		g, err := react.New(react.Config{Name: "sqlrouter." + s.Name, Model: m, System: system, Tools: tools, MaxSteps: cmp.Or(s.MaxSteps, agentSteps),
			Middleware: cfg.Middleware})
		if err != nil {
			return nil, fmt.Errorf("sqlrouter: the %s agent: %w", s.Name, err)
		}
		agents = append(agents, router.Agent{Name: s.Name, Description: s.Description, Graph: g})
		if s.Terminal {
			terminal = append(terminal, s.Name)
		}
	}
	for _, a := range cfg.Extra {
		if known[a.Name] {
			return nil, fmt.Errorf("sqlrouter: Config.Extra names %q, which is already an agent", a.Name)
		}
		known[a.Name] = true
		agents = append(agents, a)
	}
	terminal = append(terminal, cfg.ExtraTerminal...)
	for name := range cfg.AgentModels {
		if !known[name] {
			return nil, fmt.Errorf("sqlrouter: Config.AgentModels names %q, which is no agent; the agents are %s", name, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.AgentSettings)) {
		if !known[name] || slices.ContainsFunc(cfg.Extra, func(a router.Agent) bool { return a.Name == name }) {
			return nil, fmt.Errorf("sqlrouter: Config.AgentSettings names %q, which is no sub-agent the app builds; the agents are %s", name, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
		}
		if err := cfg.AgentSettings[name].Check("sqlrouter: Config.AgentSettings[" + name + "]"); err != nil {
			return nil, err
		}
	}
	for key, name := range cfg.Routes {
		if !known[name] {
			return nil, fmt.Errorf("sqlrouter: Config.Routes sends %q to %q, which is no agent; the agents are %s", key, name, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
		}
	}
	system, err := apps.Prompt("sqlrouter.router", prompts[RouterPromptName], data)
	if err != nil {
		return nil, fmt.Errorf("sqlrouter: %w", err)
	}
	rtNames := cfg.RouterTools
	if rtNames == nil {
		rtNames = []string{ValidateSQLName}
	}
	rtools, err := dbTools(db, rtNames)
	if err != nil {
		return nil, fmt.Errorf("sqlrouter: router tools: %w", err)
	}
	patterns := cfg.ErrorPatterns
	if patterns == nil {
		patterns = []string{RefusedPattern, UnavailablePattern}
	}
	deadline := cfg.Deadline
	if deadline == 0 {
		deadline = Deadline
	}
	g, err := router.New(router.Config{
		Name:          "sqlrouter",
		Model:         cfg.Model,
		System:        system,
		Agents:        agents,
		Tools:         rtools,
		Terminal:      terminal,
		ErrorPatterns: patterns,
		AskHuman:      true,
		Deadline:      deadline,
		DirectRoutes:  routeKeys(cfg.Routes),
		Settings:      cfg.RouterSettings,
		History:       cfg.History,
		Middleware:    middleware.CallWrappers(cfg.Middleware),
	})
	if err != nil {
		return nil, fmt.Errorf("sqlrouter: %w", err)
	}
	return g, nil
}

// routeKeys is router.Mentions with the keys of routes mapped to their
// agents.
func routeKeys(routes map[string]string) router.DirectRoute {
	if len(routes) == 0 {
		return nil
	}
	return func(request string) (string, string, bool) {
		agent, task, ok := router.Mentions(request)
		if !ok {
			return "", "", false
		}
		if a, ok := routes[agent]; ok {
			agent = a
		}
		return agent, task, true
	}
}

// dbTools returns the named database tools over db.
func dbTools(db sqlread.Database, names []string) ([]tool.Tool, error) {
	var out []tool.Tool
	for _, n := range names {
		switch n {
		case ListTablesName:
			out = append(out, ListTablesTool(db))
		case DescribeTableName:
			out = append(out, DescribeTableTool(db))
		case SampleRowsName:
			out = append(out, SampleRowsTool(db))
		case ValidateSQLName:
			out = append(out, ValidateSQLTool(db))
		case sqlread.SQLToolName:
			out = append(out, sqlread.SQLTool(db, MaxResultRows))
		default:
			return nil, fmt.Errorf("there is no tool %q; the tools are %s", n, strings.Join(ToolNames, ", "))
		}
	}
	return out, nil
}

// apply returns cfg with the settings st carries (Database and Schema
// are Entry's business).
func (st Settings) apply(cfg Config) (Config, error) {
	if st.Agents != nil {
		cfg.Agents = st.Agents
	}
	if st.RouterTools != nil {
		cfg.RouterTools = st.RouterTools
	}
	if st.Routes != nil {
		cfg.Routes = st.Routes
	}
	if st.ErrorPatterns != nil {
		cfg.ErrorPatterns = st.ErrorPatterns
	}
	if st.Prompts != nil {
		cfg.Prompts = st.Prompts
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(st.AgentSettings)) {
		s, err := st.AgentSettings[name].Settings("agent_settings."+name, cfg.Resolve)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if cfg.AgentSettings == nil {
			cfg.AgentSettings = map[string]llm.Settings{}
		}
		cfg.AgentSettings[name] = s
	}
	if st.RouterSettings != (llm.SettingsSpec{}) {
		s, err := st.RouterSettings.Settings("router_settings", cfg.Resolve)
		errs = append(errs, err)
		cfg.RouterSettings = s
	}
	if st.History != nil {
		p, err := st.History.Build("history", cfg.Model, cfg.Resolve)
		errs = append(errs, err)
		cfg.History = p
	}
	if err := errors.Join(errs...); err != nil {
		return cfg, fmt.Errorf("sqlrouter: %w", err)
	}
	if st.Deadline != "" {
		d, err := time.ParseDuration(st.Deadline)
		if err != nil || d <= 0 {
			return cfg, fmt.Errorf("sqlrouter: deadline %q is not a positive duration (write 90s or 5m)", st.Deadline)
		}
		cfg.Deadline = d
	}
	return cfg, nil
}
