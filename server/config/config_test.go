package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{"adress: x:1\n", `unknown field "adress" (known: address, database, models, assistants, telemetry)`},
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
