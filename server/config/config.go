// Package config reads trellis.yaml, the configuration file of `trellis
// serve`: the address, the database, the named models, the MCP servers
// whose tools agents use, the assistants to create at start, the threads'
// time to live and telemetry.
//
//	address: 127.0.0.1:2024
//	database: sqlite://.trellis/trellis.db   # or a file path, or postgres://...
//	redis: redis://127.0.0.1:6379            # replicas: live events between them
//	models:
//	  default: openai:gpt-4o-mini            # every assistant without its own
//	  strong: anthropic:claude-sonnet-4-5
//	  local:                                 # the long form: a server and its key
//	    provider: openai-compatible
//	    base_url: http://10.0.0.5:8000/v1
//	    model: llama-3
//	    api_key_env: VLLM_API_KEY
//	request_models:                          # specs an API client may name besides those
//	  allow: ["openai:*"]
//	assistants:
//	  - id: planner-strong                   # optional; a UUID is derived from name
//	    graph: planner
//	    name: Planner (strong model)
//	    model: strong                        # a name under models, or a spec
//	    config: {configurable: {}}
//	    context: {}
//	    metadata: {team: docs}
//	  - graph: agent                         # the configurable tool agent
//	    name: Helper
//	    system: You help with the files of this project.
//	    tools:
//	      - mcp:files                        # every tool of server "files"
//	      - {use: mcp:github/create_issue, approve: ask}
//	      - stop                             # a built-in tool
//	      - {use: remote:greeter, approve: auto}  # a remote agent under remote_agents
//	mcp_servers:
//	  files:                                 # stdio: a command
//	    command: npx
//	    args: [-y, "@modelcontextprotocol/server-filesystem", /srv/docs]
//	    env: {LOG_LEVEL: warn}
//	    timeout: 30s                         # per tool call
//	  github:                                # streamable HTTP
//	    url: https://api.githubcopilot.com/mcp/
//	    headers: {Authorization: "Bearer ${GITHUB_TOKEN}"}
//	    tool_prefix: gh_
//	remote_agents:                           # remote A2A agents (remote.go)
//	  greeter:
//	    a2a: https://agents.example/greeter
//	    headers_env: {Authorization: GREETER_AUTH}
//	threads:
//	  ttl: 24h                               # default TTL of new threads
//	  strategy: delete                       # or keep_latest
//	  sweep_interval: 1m
//	  sweep_batch: 100
//	  retention: {keep_last: 20, forks_older_than: 720h}   # off when absent
//	webhooks:
//	  secret: ${TRELLIS_WEBHOOK_SECRET}      # signs bodies (X-Trellis-Signature)
//	  allow_private: false                   # allow loopback/private URLs
//	  attempts: 5                            # tries of one webhook (1-100)
//	  retry_base: 10s                        # wait after the 1st failure, doubled after each
//	crons:
//	  interval: 10s                          # how often due crons are looked for
//	leases:
//	  ttl: 15s                               # a dead replica's runs are taken over within ttl + sweep_interval
//	  sweep_interval: 5s
//	shutdown_grace: 10s                      # SIGTERM: how long running steps may finish
//	telemetry:
//	  log_format: json                       # or text
//	  otlp_endpoint: http://127.0.0.1:4318   # export traces (OTLP/HTTP)
//	auth: {required: true}                   # see security.go: auth, cors, limits
//	cors: {allow_origins: ["https://app.example.com"]}
//	limits: {max_concurrent_runs: 4, requests_per_second: 20, run_timeout: 10m}
//	apps:                                    # each bundled app's settings
//	  sqlrouter:
//	    database: postgres://reader@db/library
//	    routes: {fix: fix_sql}
//
// The apps section is handed to each app as its Settings (see the app's
// package documentation); an app refuses keys it does not know.
//
// A tool's approve is ask (a person approves every call) or auto (none
// is asked); left out, read tools run at once and write tools ask.
//
// `${NAME}` anywhere in the file is replaced by the environment variable
// NAME before parsing (`${NAME:-fallback}` gives a default; `$$` is a
// literal `$`), so secrets stay out of the file. An unset variable without
// a default is an error naming it. Unknown keys, wrong types and bad values
// are errors naming the field (`assistants[1].graph: ...`).
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"gopkg.in/yaml.v3"
)

// File is a parsed trellis.yaml.
type File struct {
	// Address is host:port to listen on ("" : the command's default).
	Address string `yaml:"address"`
	// Database is a file path, a sqlite:// URL or a postgres:// URL ("" :
	// the command's default).
	Database string `yaml:"database"`
	// Redis is a redis:// URL; replicas on one PostgreSQL relay live
	// events and cancel requests through it ("" : none).
	Redis string `yaml:"redis"`
	// Models are the operator's named models (models.go): a spec
	// ("openai:gpt-4o-mini") or the long form with the server and the
	// environment variable of its key. The name "default" is the model of
	// every assistant that names none. An assistant created over the API
	// may name these, or a spec RequestModels allows.
	Models map[string]ModelEntry `yaml:"models"`
	// RequestModels lists the model specs requests may name besides the
	// names under models (none unless set).
	RequestModels RequestModels `yaml:"request_models"`
	// Assistants are created at start when absent, and updated (a new
	// version) when the file changed them.
	Assistants []Assistant `yaml:"assistants"`
	// MCPServers are the MCP servers the agent graph's tools come from,
	// by name; each is connected once at start and shared by every run.
	MCPServers map[string]MCPServer `yaml:"mcp_servers"`
	// RemoteAgents are remote agents the agent graph's assistants may
	// call as tools (remote:NAME), by name (remote.go).
	RemoteAgents map[string]RemoteAgent `yaml:"remote_agents"`
	// Threads sets the default time to live of threads and how the
	// sweeper treats expired ones.
	Threads Threads `yaml:"threads"`
	// Webhooks configures the webhooks sent when runs end.
	Webhooks Webhooks `yaml:"webhooks"`
	// Crons configures the loop that fires scheduled runs.
	Crons Crons `yaml:"crons"`
	// Leases bounds how soon the runs of a replica that died are taken
	// over by another.
	Leases Leases `yaml:"leases"`
	// ShutdownGrace is how long a shutdown (SIGTERM) lets requests and
	// running steps finish before cancelling them (0: the server's
	// default, 10s); a step cancelled so is taken over and run again.
	ShutdownGrace time.Duration `yaml:"shutdown_grace"`
	// Telemetry configures logs, traces and metrics.
	Telemetry Telemetry `yaml:"telemetry"`
	// Apps holds each bundled app's own settings, by app name
	// (apps.sqlrouter, apps.scheduler...): each app documents the object
	// it reads (its package's Settings type). An assistant may override
	// its app's object with config.configurable.settings.
	Apps map[string]map[string]any `yaml:"apps"`
	// Store configures the long-term store (store.go): its semantic index.
	Store Store `yaml:"store"`
	// MCP configures the /mcp endpoint (Trellis's own MCP server).
	MCP MCPEndpoint `yaml:"mcp"`
	// A2A configures the A2A endpoints (docs/a2a.md).
	A2A A2AEndpoint `yaml:"a2a"`
	// Auth, CORS and Limits are the security sections (security.go).
	Auth   Auth   `yaml:"auth"`
	CORS   CORS   `yaml:"cors"`
	Limits Limits `yaml:"limits"`
}

// MCPEndpoint is the mcp section: how /mcp serves assistants as MCP
// tools (docs/mcp-server.md).
type MCPEndpoint struct {
	// Stateless serves /mcp without sessions, so any replica answers any
	// request (a load balancer without sticky sessions); elicitation is
	// unavailable then, and a waiting run is answered by calling the tool
	// again with {thread_id, answer}.
	Stateless bool `yaml:"stateless"`
}

// A2AEndpoint is the a2a section: how the assistants are served as A2A
// agents (docs/a2a.md).
type A2AEndpoint struct {
	// PublicCard serves the agent cards to requests without an API key
	// when keys are on (the default tenant's assistants, as cards
	// describe them: names, descriptions, the endpoints' URLs); a request
	// with a key always reads its own tenant's. Off by default: a card
	// names assistants, which an operator may keep private.
	PublicCard bool `yaml:"public_card"`
}

// Webhooks is the webhooks section.
type Webhooks struct {
	// Secret, when set, signs each webhook body: the X-Trellis-Signature
	// header is "sha256=" and the hex HMAC-SHA256 of the body.
	Secret string `yaml:"secret"`
	// AllowPrivate allows webhook URLs that reach loopback, private or
	// link-local addresses (refused by default).
	AllowPrivate bool `yaml:"allow_private"`
	// Attempts bounds the tries of one webhook, 1 to 100 (0: the
	// server's default, 5).
	Attempts int `yaml:"attempts"`
	// RetryBase is the wait after a webhook's first failed try, doubled
	// after each next one (0: the server's default, 10s).
	RetryBase time.Duration `yaml:"retry_base"`
}

// Leases is the leases section. A running run's lease is renewed every
// third of TTL; when its replica dies, another takes the run over within
// TTL + SweepInterval.
type Leases struct {
	// TTL is how long a lease lives without renewal (0: 15s; at least 1s).
	TTL time.Duration `yaml:"ttl"`
	// SweepInterval is how often each replica looks for expired leases
	// (0: 5s; at least 100ms).
	SweepInterval time.Duration `yaml:"sweep_interval"`
}

// Crons is the crons section.
type Crons struct {
	// Interval is how often each replica looks for crons whose slot has
	// come; a slot fires up to this late (0: the server's default, 10s).
	Interval time.Duration `yaml:"interval"`
}

// Telemetry is the telemetry section:
//
//	telemetry:
//	  log_format: json                      # or text (the default)
//	  otlp_endpoint: http://collector:4318  # export traces over OTLP/HTTP
//	  metrics: false                        # do not serve /metrics
//
// Traces are also exported when OTEL_EXPORTER_OTLP_ENDPOINT is set, and
// not at all otherwise.
type Telemetry struct {
	// LogFormat is "text" or "json" ("" : the command's default, text).
	LogFormat string `yaml:"log_format"`
	// OTLPEndpoint is the OTLP/HTTP collector's base URL; spans go to its
	// /v1/traces.
	OTLPEndpoint string `yaml:"otlp_endpoint"`
	// Metrics serves Prometheus metrics at /metrics (nil: true).
	Metrics *bool `yaml:"metrics"`
}

// Assistant declares an assistant of a registered graph.
type Assistant struct {
	// ID is the assistant's ID ("" : derived from Name, stable across
	// restarts).
	ID string `yaml:"id"`
	// Graph is the registered graph ID (required).
	Graph string `yaml:"graph"`
	// Name is the assistant's name (required).
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Model is a name under models or a model spec ("" : models.default,
	// else the server's default). It is put into
	// config.configurable.model, where the bundled apps read it.
	Model string `yaml:"model"`
	// System is the agent graph's system prompt (graph "agent" only;
	// config.configurable.system_prompt).
	System string `yaml:"system"`
	// Tools are the agent graph's tools (graph "agent" only;
	// config.configurable.tools): built-in tools by name and MCP tools as
	// mcp:SERVER (all of its tools) or mcp:SERVER/TOOL, each with an
	// optional approval policy.
	Tools []ToolRef `yaml:"tools"`
	// History is the agent graph's message-history policy (graph "agent"
	// only; config.configurable.history).
	History *History `yaml:"history"`
	// Middleware is the assistant's middleware chain, built-ins by name
	// in order (config.configurable.middleware): the agent graph's, and
	// the agents of an app's (apps.Env.Middleware).
	Middleware []Middleware `yaml:"middleware"`
	// Retention is the checkpoint retention policy of the threads whose
	// last run was this assistant's (nil: threads.retention's).
	Retention *Retention `yaml:"retention"`
	// OnlineEvaluators score a sample of this assistant's finished runs
	// and store the scores as the runs' feedback.
	OnlineEvaluators []OnlineEvaluator `yaml:"online_evaluators"`
	// Config, Context and Metadata are JSON objects (written as YAML).
	Config   map[string]any `yaml:"config"`
	Context  map[string]any `yaml:"context"`
	Metadata map[string]any `yaml:"metadata"`
}

// Load reads and parses the file at path, expanding ${ENV} references with
// os.LookupEnv.
func Load(path string) (*File, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	f, err := Parse(b, os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

var envRef = regexp.MustCompile(`\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}|\$\{[^}]*\}?`)

// Expand replaces ${NAME} and ${NAME:-default} with values from lookup and
// $$ with $. A reference to an unset variable without a default, or a
// malformed reference, is an error naming it and its line.
func Expand(src []byte, lookup func(string) (string, bool)) ([]byte, error) {
	var errs []error
	out := envRef.ReplaceAllFunc(src, func(m []byte) []byte {
		if string(m) == "$$" {
			return []byte("$")
		}
		sub := envRef.FindSubmatch(m)
		if len(sub[1]) == 0 {
			errs = append(errs, fmt.Errorf("line %d: %q is not a valid reference; write ${NAME} or ${NAME:-default}", lineOf(src, m), m))
			return m
		}
		if v, ok := lookup(string(sub[1])); ok {
			return []byte(v)
		}
		if len(sub[2]) > 0 {
			return sub[3]
		}
		errs = append(errs, fmt.Errorf("line %d: environment variable %s is not set; set it or write ${%s:-default}", lineOf(src, m), sub[1], sub[1]))
		return m
	})
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func lineOf(src, m []byte) int {
	i := bytes.Index(src, m)
	if i < 0 {
		return 0
	}
	return bytes.Count(src[:i], []byte("\n")) + 1
}

// Parse parses a trellis.yaml after expanding its ${ENV} references and
// validates it.
func Parse(src []byte, lookup func(string) (string, bool)) (*File, error) {
	src, err := Expand(src, lookup)
	if err != nil {
		return nil, err
	}
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("config: %s", yamlMessage(err))
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return &f, nil
}

// yamlMessage rewrites yaml.v3's messages for unknown and mistyped fields
// to name the field and the known ones.
func yamlMessage(err error) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		var parts []string
		for _, e := range te.Errors {
			if m := unknownField.FindStringSubmatch(e); m != nil {
				parts = append(parts, fmt.Sprintf("line %s: unknown field %q (known: %s)", m[1], m[2], known(m[3])))
				continue
			}
			parts = append(parts, e)
		}
		return strings.Join(parts, "; ")
	}
	return err.Error()
}

var unknownField = regexp.MustCompile(`^line (\d+): field (\S+) not found in type config\.(\w+)$`)

func known(typ string) string {
	switch typ {
	case "File":
		return "address, database, redis, models, request_models, assistants, mcp_servers, remote_agents, threads, webhooks, crons, leases, shutdown_grace, telemetry, apps, store, mcp, a2a, auth, cors, limits"
	case "Auth":
		return "required"
	case "ModelEntry", "plain":
		return "spec, provider, model, base_url, api_key_env"
	case "RequestModels":
		return "allow, allow_private"
	case "CORS":
		return "allow_origins, allow_methods, allow_headers, expose_headers, allow_credentials, max_age"
	case "Limits":
		return "max_concurrent_runs, requests_per_second, burst, max_streams, max_body_bytes, run_timeout, body_timeout"
	case "Assistant":
		return "id, graph, name, description, model, system, tools, history, middleware, retention, online_evaluators, config, context, metadata"
	case "OnlineEvaluator":
		return "criterion, sample, key"
	case "MCPServer":
		return "command, args, env, dir, url, headers, tool_prefix, timeout"
	case "RemoteAgent":
		return "a2a, langgraph, description, headers_env, allow_private, allow_hosts"
	case "RemoteGraph":
		return "url, assistant"
	case "Threads":
		return "ttl, strategy, sweep_interval, sweep_batch, retention"
	case "Retention":
		return "keep_last, forks_older_than"
	case "Webhooks":
		return "secret, allow_private, attempts, retry_base"
	case "Crons":
		return "interval"
	case "MCPEndpoint":
		return "stateless"
	case "A2AEndpoint":
		return "public_card"
	case "Leases":
		return "ttl, sweep_interval"
	case "Telemetry":
		return "log_format, otlp_endpoint, metrics"
	}
	return "see the config package's documentation"
}

// Validate checks the file's values; each error names its field.
func (f *File) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("config: %s: %s", field, fmt.Sprintf(format, args...)))
	}
	if f.Address != "" {
		if i := strings.LastIndex(f.Address, ":"); i < 0 || i == len(f.Address)-1 {
			bad("address", "%q is not host:port (e.g. 127.0.0.1:2024)", f.Address)
		}
	}
	if d := f.Database; d != "" && strings.Contains(d, "://") {
		scheme := d[:strings.Index(d, "://")]
		switch scheme {
		case "sqlite", "postgres", "postgresql":
		default:
			bad("database", "scheme %q is not supported; use a file path, sqlite://PATH or postgres://...", scheme)
		}
	}
	if r := f.Redis; r != "" && !strings.HasPrefix(r, "redis://") && !strings.HasPrefix(r, "rediss://") {
		bad("redis", "%q is not a redis:// or rediss:// URL", r)
	}
	bySpec := map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(f.Models)) {
		e := f.Models[name]
		if strings.TrimSpace(name) == "" || strings.Contains(name, ":") {
			bad("models", "%q is not a model name (names are not empty and have no colon)", name)
		}
		for _, err := range e.check("models." + name) {
			errs = append(errs, fmt.Errorf("config: %w", err))
		}
		// The resolver finds a long entry's key by its spec, so two
		// entries of one spec must agree on it.
		spec := e.SpecString()
		if other, ok := bySpec[spec]; ok && f.Models[other].APIKeyEnv != e.APIKeyEnv {
			bad("models."+name, "has the server and model of models.%s but another api_key_env; give one entry", other)
		}
		bySpec[spec] = name
	}
	for _, err := range f.RequestModels.check() {
		errs = append(errs, fmt.Errorf("config: %w", err))
	}
	switch f.Telemetry.LogFormat {
	case "", "text", "json":
	default:
		bad("telemetry.log_format", "%q is neither text nor json", f.Telemetry.LogFormat)
	}
	if e := f.Telemetry.OTLPEndpoint; e != "" {
		if u, err := url.Parse(e); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("telemetry.otlp_endpoint", "%q is not the http:// or https:// URL of an OTLP/HTTP collector (e.g. http://127.0.0.1:4318)", e)
		}
	}
	f.validateSecurity(bad)
	ids := map[string]int{}
	for i, a := range f.Assistants {
		field := fmt.Sprintf("assistants[%d]", i)
		if strings.TrimSpace(a.Graph) == "" {
			bad(field+".graph", "required: the registered graph this assistant runs")
		}
		if strings.TrimSpace(a.Name) == "" {
			bad(field+".name", "required")
		}
		if a.Model != "" && !strings.Contains(a.Model, ":") {
			if _, ok := f.Models[a.Model]; !ok {
				bad(field+".model", "%q is neither a name under models nor a spec like openai:gpt-4o-mini", a.Model)
			}
		}
		for _, obj := range []struct {
			name string
			v    map[string]any
		}{{"config", a.Config}, {"context", a.Context}, {"metadata", a.Metadata}} {
			if _, err := json.Marshal(obj.v); err != nil {
				bad(field+"."+obj.name, "not representable as JSON: %v", err)
			}
		}
		if a.Graph != AgentGraph && a.Graph != "" && (a.System != "" || len(a.Tools) > 0) {
			which := "tools"
			if a.System != "" {
				which = "system"
			}
			bad(field+"."+which, "only assistants of graph %q have a system prompt and tools; graph %q configures its own", AgentGraph, a.Graph)
		}
		if h := a.History; h != nil {
			if a.Graph != AgentGraph && a.Graph != "" {
				bad(field+".history", "only assistants of graph %q take a history policy", AgentGraph)
			} else if err := h.Check(); err != nil {
				bad(field, "%v", err)
			}
			if m := h.Model; m != "" && !strings.Contains(m, ":") {
				if _, ok := f.Models[m]; !ok {
					bad(field+".history.model", "%q is neither a name under models nor a spec like openai:gpt-4o-mini", m)
				}
			}
		}
		for j, m := range a.Middleware {
			mf := fmt.Sprintf("%s.middleware[%d]", field, j)
			if err := m.Check(); err != nil {
				bad(mf, "%v", err)
			}
			if md := m.Model; md != "" && !strings.Contains(md, ":") {
				if _, ok := f.Models[md]; !ok {
					bad(mf+".model", "%q is neither a name under models nor a spec like openai:gpt-4o-mini", md)
				}
			}
			for k, md := range m.Models {
				if _, ok := f.Models[md]; !ok && md != "" && !strings.Contains(md, ":") {
					bad(fmt.Sprintf("%s.models[%d]", mf, k), "%q is not a name under models", md)
				}
			}
		}
		for j, t := range a.Tools {
			tf := fmt.Sprintf("%s.tools[%d]", field, j)
			if err := t.Check(); err != nil {
				bad(tf, "%v", err)
				continue
			}
			if srv, _, ok := t.MCP(); ok {
				if _, ok := f.MCPServers[srv]; !ok {
					bad(tf, "%q names MCP server %q, which is not under mcp_servers%s", t.Use, srv, serverNames(f.MCPServers))
				}
			}
			if name, ok := t.Remote(); ok {
				if _, ok := f.RemoteAgents[name]; !ok {
					bad(tf, "%q names remote agent %q, which is not under remote_agents", t.Use, name)
				}
			}
		}
		for _, err := range a.Retention.check(field + ".retention") {
			errs = append(errs, fmt.Errorf("config: %w", err))
		}
		errs = append(errs, f.checkOnline(field, a.OnlineEvaluators)...)
		if sub, err := a.checkAppOptions(f.Specs()); err != nil {
			bad(field+"."+sub, "%v", err)
		}
		id := a.AssistantID()
		if j, dup := ids[id]; dup {
			bad(field+".id", "%q is also the ID of assistants[%d]", id, j)
		}
		ids[id] = i
	}
	for _, name := range slices.Sorted(maps.Keys(f.MCPServers)) {
		for _, err := range f.MCPServers[name].check(name) {
			errs = append(errs, fmt.Errorf("config: %w", err))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(f.RemoteAgents)) {
		for _, err := range f.RemoteAgents[name].check(name) {
			errs = append(errs, fmt.Errorf("config: %w", err))
		}
	}
	for _, err := range f.Store.check(f.Specs()) {
		errs = append(errs, fmt.Errorf("config: %w", err))
	}
	for _, err := range f.Threads.check() {
		errs = append(errs, fmt.Errorf("config: %w", err))
	}
	if w := f.Webhooks; w.Attempts < 0 || w.Attempts > 100 {
		bad("webhooks.attempts", "%d is not between 1 and 100 (or 0 for the default, 5)", w.Attempts)
	}
	if w := f.Webhooks; w.RetryBase < 0 || (w.RetryBase > 0 && w.RetryBase < 100*time.Millisecond) {
		bad("webhooks.retry_base", "%s is not 100ms or more (or 0 for the default, 10s)", w.RetryBase)
	}
	if l := f.Leases; l.TTL < 0 || (l.TTL > 0 && l.TTL < time.Second) {
		bad("leases.ttl", "%s is not 1s or more (or 0 for the default, 15s)", l.TTL)
	}
	if l := f.Leases; l.SweepInterval < 0 || (l.SweepInterval > 0 && l.SweepInterval < 100*time.Millisecond) {
		bad("leases.sweep_interval", "%s is not 100ms or more (or 0 for the default, 5s)", l.SweepInterval)
	}
	if f.ShutdownGrace < 0 {
		bad("shutdown_grace", "%s is negative; give a duration such as 10s", f.ShutdownGrace)
	}
	if c := f.Crons; c.Interval < 0 || (c.Interval > 0 && c.Interval < time.Second) {
		bad("crons.interval", "%s is not 1s or more (or 0 for the default, 10s)", c.Interval)
	}
	return errors.Join(errs...)
}

// AssistantID is the assistant's ID: ID, or a UUID derived from the name.
func (a Assistant) AssistantID() string {
	if a.ID != "" {
		return a.ID
	}
	return NameUUID("assistant:" + a.Name)
}

// ModelSpec returns the model spec of an assistant's model field: the spec
// under models when model is a name there, the model itself when it is a
// spec, and models.default when it is "".
func (f *File) ModelSpec(model string) string {
	if model == "" {
		model = "default"
		if _, ok := f.Models[model]; !ok {
			return ""
		}
	}
	if e, ok := f.Models[model]; ok {
		return e.SpecString()
	}
	return model
}

// NameUUID is the name-based (SHA-1, version 5) UUID of name in RFC 9562's
// URL namespace: the same name gives the same ID on every start and every
// server, so assistants declared by name keep their ID (and their threads).
func NameUUID(name string) string {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte(name)).String()
}
