package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// A full file parses; ${ENV} and ${ENV:-default} are expanded, $$ is a
// dollar; model names resolve to specs.
func TestParseFullFile(t *testing.T) {
	src := `
address: 127.0.0.1:${PORT:-9000}
database: ${DB}
models:
  default: openai:gpt-4o-mini
  strong: anthropic:claude-sonnet-4-5
assistants:
  - graph: planner
    name: Strong planner
    model: strong
    config: {configurable: {note: "costs $$5"}}
    metadata: {team: docs}
  - id: sched
    graph: scheduler
    name: Scheduler
`
	f, err := Parse([]byte(src), env(map[string]string{"DB": "postgres://u@h/db"}))
	if err != nil {
		t.Fatal(err)
	}
	if f.Address != "127.0.0.1:9000" || f.Database != "postgres://u@h/db" {
		t.Errorf("address %q database %q", f.Address, f.Database)
	}
	a := f.Assistants[0]
	if got := f.ModelSpec(a.Model); got != "anthropic:claude-sonnet-4-5" {
		t.Errorf("model spec %q", got)
	}
	if got := f.ModelSpec(""); got != "openai:gpt-4o-mini" {
		t.Errorf("default model spec %q", got)
	}
	if got := a.Config["configurable"].(map[string]any)["note"]; got != "costs $5" {
		t.Errorf("$$ expanded to %q", got)
	}
	if a.AssistantID() != NameUUID("assistant:Strong planner") || len(a.AssistantID()) != 36 {
		t.Errorf("derived ID %q", a.AssistantID())
	}
	if f.Assistants[1].AssistantID() != "sched" {
		t.Errorf("explicit ID %q", f.Assistants[1].AssistantID())
	}
}

// NameUUID is the standard version-5 UUID in the URL namespace (checked
// against another implementation), so it is stable across versions.
func TestNameUUIDIsVersion5URLNamespace(t *testing.T) {
	// uuid5(NAMESPACE_URL, "agent"), computed independently with Python's uuid module.
	if got := NameUUID("agent"); got != "7c9fac6d-1b9a-54e5-89e7-6c8b5e3ae414" {
		t.Errorf("NameUUID(agent) = %s", got)
	}
}

// Every kind of mistake is an error naming the field (or variable) that
// is wrong.
func TestBadFilesNameTheField(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"adress: x:1\n", `unknown field "adress" (known: address, database, redis, models, request_models, assistants, mcp_servers, remote_agents, threads, webhooks, crons, leases, shutdown_grace, telemetry, apps, store, mcp, a2a, auth, cors, limits)`},
		{"assistants:\n  - graph: g\n    name: n\n    modle: x\n", `unknown field "modle"`},
		{"assistants:\n  - name: n\n", "assistants[0].graph: required"},
		{"assistants:\n  - graph: g\n", "assistants[0].name: required"},
		{"assistants:\n  - graph: g\n    name: n\n    model: nosuch\n", `assistants[0].model: "nosuch" is neither a name under models`},
		{"assistants:\n  - {graph: g, name: a, id: x}\n  - {graph: g, name: b, id: x}\n", `assistants[1].id: "x" is also the ID of assistants[0]`},
		{"models:\n  fast: gpt4\n", `models.fast: "gpt4" is not a model spec`},
		{"address: localhost\n", `address: "localhost" is not host:port`},
		{"database: mysql://x\n", `database: scheme "mysql" is not supported`},
		{"database: ${NOPE}\n", "environment variable NOPE is not set"},
		{"database: ${NOPE\n", `line 1: "${NOPE\n" is not a valid reference`},
		{"assistants: {graph: g}\n", "cannot unmarshal"},
		{"address: [\n", "config:"},
	} {
		_, err := Parse([]byte(c.src), env(nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want it to contain %q", c.src, err, c.want)
		}
	}
}

// An empty file is valid (every default); Load names the file in errors.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := Load(empty); err != nil || f.Address != "" || len(f.Assistants) != 0 {
		t.Fatalf("empty file: %+v %v", f, err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("assistants:\n  - name: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), "bad.yaml: config: assistants[0].graph") {
		t.Fatalf("bad file: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("missing file: %v", err)
	}
}

// MCP servers, agent tools and the threads' TTL parse; tool references
// are strings or objects.
func TestParseAgentAndThreads(t *testing.T) {
	src := `
mcp_servers:
  everything:
    command: node
    args: [index.js, stdio]
    env: {TOKEN: "${TOKEN}"}
    timeout: 30s
  remote:
    url: https://mcp.example.com/mcp
    headers: {Authorization: "Bearer ${TOKEN}"}
    tool_prefix: remote_
assistants:
  - graph: agent
    name: Helper
    system: Be brief.
    tools:
      - mcp:everything/echo
      - {use: "mcp:remote", approve: ask}
      - stop
threads:
  ttl: 24h
  strategy: keep_latest
  sweep_interval: 2m
  sweep_batch: 50
`
	f, err := Parse([]byte(src), env(map[string]string{"TOKEN": "s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	if e := f.MCPServers["everything"]; e.Command != "node" || e.Env["TOKEN"] != "s3cret" || e.Timeout != 30*time.Second || len(e.Args) != 2 {
		t.Errorf("stdio server %+v", e)
	}
	if r := f.MCPServers["remote"]; r.Headers["Authorization"] != "Bearer s3cret" || r.ToolPrefix != "remote_" {
		t.Errorf("HTTP server %+v", r)
	}
	a := f.Assistants[0]
	want := []ToolRef{{Use: "mcp:everything/echo"}, {Use: "mcp:remote", Approve: ApproveAsk}, {Use: "stop"}}
	if a.System != "Be brief." || !slices.Equal(a.Tools, want) {
		t.Errorf("assistant %+v", a)
	}
	if srv, tl, ok := a.Tools[0].MCP(); !ok || srv != "everything" || tl != "echo" {
		t.Errorf("MCP() = %q %q %v", srv, tl, ok)
	}
	if f.Threads != (Threads{TTL: 24 * time.Hour, Strategy: StrategyKeepLatest, SweepInterval: 2 * time.Minute, SweepBatch: 50}) {
		t.Errorf("threads %+v", f.Threads)
	}
	// The JSON form (config.configurable.tools) reads the same.
	var refs []ToolRef
	if err := json.Unmarshal([]byte(`["stop",{"use":"mcp:x/y","approve":"auto"}]`), &refs); err != nil || !slices.Equal(refs, []ToolRef{{Use: "stop"}, {Use: "mcp:x/y", Approve: ApproveAuto}}) {
		t.Errorf("JSON refs %+v %v", refs, err)
	}
	if err := json.Unmarshal([]byte(`[{"use":"stop","aprove":"ask"}]`), &refs); err == nil {
		t.Error("an unknown JSON field was accepted")
	}
}

// Mistakes in the MCP servers, tools and threads name their field.
func TestBadAgentAndThreadsNameTheField(t *testing.T) {
	agent := func(tools string) string {
		return "mcp_servers:\n  s: {command: x}\nassistants:\n  - graph: agent\n    name: n\n    tools: " + tools + "\n"
	}
	for _, c := range []struct{ src, want string }{
		{"mcp_servers:\n  s: {}\n", "mcp_servers.s: set command (a stdio server) or url"},
		{"mcp_servers:\n  s: {command: x, url: http://h/mcp}\n", "mcp_servers.s: set command or url, not both"},
		{"mcp_servers:\n  s: {url: ftp://h/mcp}\n", `mcp_servers.s.url: "ftp://h/mcp" is not an http:// or https:// URL`},
		{"mcp_servers:\n  s: {url: http://h/mcp, dir: /tmp}\n", "mcp_servers.s: args, env and dir are for command"},
		{"mcp_servers:\n  s: {command: x, headers: {A: b}}\n", "mcp_servers.s.headers: headers are for url"},
		{"mcp_servers:\n  s: {command: x, timeout: -1s}\n", "mcp_servers.s.timeout: must be positive"},
		{"mcp_servers:\n  s: {command: x, timeout: soon}\n", "cannot unmarshal"},
		{"mcp_servers:\n  s: {command: x, cmd: y}\n", `unknown field "cmd" (known: command, args, env, dir, url, headers, tool_prefix, timeout)`},
		{"mcp_servers:\n  a/b: {command: x}\n", "mcp_servers.a/b: a server's name must be"},
		{agent("[mcp:nosuch]"), `assistants[0].tools[0]: "mcp:nosuch" names MCP server "nosuch", which is not under mcp_servers (s)`},
		{agent("[shell]"), `assistants[0].tools[0]: "shell" is not a built-in tool (stop, remember, recall)`},
		{agent("[stop, \"mcp:\"]"), `assistants[0].tools[1]: "mcp:" is not mcp:SERVER or mcp:SERVER/TOOL`},
		{agent("[{use: \"mcp:s\", approve: sometimes}]"), `assistants[0].tools[0]: approve: "sometimes" is not ask or auto`},
		{agent("[{use: stop, aprove: ask}]"), `unknown field "aprove" (known: use, approve)`},
		{agent("[[stop]]"), "a tool is a name"},
		{"assistants:\n  - {graph: planner, name: n, tools: [stop]}\n", `assistants[0].tools: only assistants of graph "agent" have a system prompt and tools`},
		{"assistants:\n  - {graph: planner, name: n, system: hi}\n", `assistants[0].system: only assistants of graph "agent"`},
		{"threads: {ttl: 10s}\n", "threads.ttl: 10s is less than a minute"},
		{"threads: {ttl: -1h}\n", "threads.ttl: must be positive"},
		{"threads: {strategy: archive}\n", `threads.strategy: "archive" is not delete or keep_latest`},
		{"threads: {sweep_batch: -1}\n", "threads.sweep_batch: must be positive"},
		{"threads: {sweep_interval: -1m}\n", "threads.sweep_interval: must be positive"},
		{"threads: {sweep_interval: 10ms}\n", "threads.sweep_interval: 10ms is less than a second"},
		{"threads: {tll: 1h}\n", `unknown field "tll" (known: ttl, strategy, sweep_interval, sweep_batch, retention)`},
		{"threads: {retention: {keep_last: -1}}\n", "threads.retention.keep_last: -1 is negative"},
		{"threads: {retention: {forks_older_than: 10s}}\n", "threads.retention.forks_older_than: 10s is less than a minute"},
		{"threads: {retention: {keep: 3}}\n", `unknown field "keep" (known: keep_last, forks_older_than)`},
		{"assistants:\n  - {graph: planner, name: n, retention: {forks_older_than: -1h}}\n", "assistants[0].retention.forks_older_than: -1h0m0s is negative"},
	} {
		_, err := Parse([]byte(c.src), env(nil))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want it to contain %q", c.src, err, c.want)
		}
	}
}

// The telemetry section parses; bad values and unknown keys are errors
// naming the field.
func TestTelemetrySection(t *testing.T) {
	f, err := Parse([]byte("telemetry:\n  log_format: json\n  otlp_endpoint: http://127.0.0.1:4318\n  metrics: false\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if f.Telemetry.LogFormat != "json" || f.Telemetry.OTLPEndpoint != "http://127.0.0.1:4318" || f.Telemetry.Metrics == nil || *f.Telemetry.Metrics {
		t.Errorf("telemetry %+v", f.Telemetry)
	}
	for src, want := range map[string]string{
		"telemetry:\n  log_format: xml\n":          "telemetry.log_format",
		"telemetry:\n  otlp_endpoint: 127.0.0.1\n": "telemetry.otlp_endpoint",
		"telemetry:\n  exporter: otlp\n":           "log_format, otlp_endpoint, metrics",
	} {
		if _, err := Parse([]byte(src), env(nil)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one naming %s", src, err, want)
		}
	}
}

func TestWebhooksSection(t *testing.T) {
	f, err := Parse([]byte("webhooks:\n  secret: ${HOOK_SECRET}\n  allow_private: true\n"), env(map[string]string{"HOOK_SECRET": "s3cret"}))
	if err != nil {
		t.Fatal(err)
	}
	if f.Webhooks.Secret != "s3cret" || !f.Webhooks.AllowPrivate {
		t.Errorf("webhooks %+v", f.Webhooks)
	}
	if _, err := Parse([]byte("webhooks:\n  secrett: x\n"), env(nil)); err == nil || !strings.Contains(err.Error(), "secret, allow_private") {
		t.Errorf("unknown webhooks field: %v", err)
	}
	f, err = Parse([]byte("webhooks: {attempts: 3, retry_base: 2s}\ncrons: {interval: 1m}\nleases: {ttl: 6s, sweep_interval: 1s}\nshutdown_grace: 20s\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if f.Webhooks.Attempts != 3 || f.Webhooks.RetryBase != 2*time.Second || f.Crons.Interval != time.Minute ||
		f.Leases != (Leases{TTL: 6 * time.Second, SweepInterval: time.Second}) || f.ShutdownGrace != 20*time.Second {
		t.Errorf("webhooks %+v, crons %+v, leases %+v, grace %s", f.Webhooks, f.Crons, f.Leases, f.ShutdownGrace)
	}
	for src, want := range map[string]string{
		"webhooks: {attempts: 101}\n":     "webhooks.attempts",
		"webhooks: {attempts: -1}\n":      "webhooks.attempts",
		"webhooks: {retry_base: 1ms}\n":   "webhooks.retry_base",
		"crons: {interval: 10ms}\n":       "crons.interval",
		"crons: {intervall: 1m}\n":        `unknown field "intervall" (known: interval)`,
		"leases: {ttl: 10ms}\n":           "leases.ttl",
		"leases: {sweep_interval: 1ms}\n": "leases.sweep_interval",
		"shutdown_grace: -1s\n":           "shutdown_grace",
	} {
		if _, err := Parse([]byte(src), env(nil)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one naming %s", src, err, want)
		}
	}
}

// The known-field lists in error messages name exactly the yaml keys of
// each section's struct, so adding a field cannot leave them stale.
func TestKnownFieldsMatchStructs(t *testing.T) {
	for _, v := range []any{File{}, Auth{}, CORS{}, Limits{}, Assistant{}, MCPServer{}, Threads{}, Webhooks{}, Crons{}, Leases{}, Telemetry{}, A2AEndpoint{}} {
		typ := reflect.TypeOf(v)
		var tags []string
		for i := range typ.NumField() {
			tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
			if tag != "" && tag != "-" {
				tags = append(tags, tag)
			}
		}
		if got, want := known(typ.Name()), strings.Join(tags, ", "); got != want {
			t.Errorf("known(%s) = %q, want %q", typ.Name(), got, want)
		}
	}
}

// The apps section keeps each app's settings as a JSON-able object.
func TestParseAppSettings(t *testing.T) {
	f, err := Parse([]byte("apps:\n  sqlrouter:\n    database: postgres://r@h/lib\n    routes: {fix: fix_sql}\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(f.Apps["sqlrouter"])
	if err != nil || string(b) != `{"database":"postgres://r@h/lib","routes":{"fix":"fix_sql"}}` {
		t.Errorf("apps.sqlrouter = %s, %v", b, err)
	}
}
