package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/apps/catalog"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/server/config"
)

// serve fails before opening anything when the config file is wrong, and
// the error names the field.
func TestServeBadConfigNamesTheField(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "trellis.yaml")
	if err := os.WriteFile(cfg, []byte("assistants:\n  - name: x\n    model: nosuch\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "t.db")
	_, err := trellis(t, "", "serve", "--config", cfg, "--db", db)
	if err == nil || !strings.Contains(err.Error(), "assistants[0].graph: required") || !strings.Contains(err.Error(), `assistants[0].model: "nosuch"`) {
		t.Fatalf("err = %v", err)
	}
	if _, serr := os.Stat(db); serr == nil {
		t.Error("a database was created for a bad config")
	}
	if _, err := trellis(t, "", "serve", "--config", filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Fatalf("missing config: %v", err)
	}
}

// A taken address is one line saying so and naming --addr.
func TestServeAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	out, err := trellis(t, "", "serve", "--addr", ln.Addr().String(), "--db", filepath.Join(t.TempDir(), "t.db"))
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()+" is in use") || !strings.Contains(err.Error(), "--addr") {
		t.Fatalf("err = %v\n%s", err, out)
	}
}

// serve starts on a free port, says the models are scripted, and stops
// cleanly when its context ends.
func TestServeStartsAndStops(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	ctx, cancel := context.WithCancel(context.Background())
	root := newRoot()
	var out syncBuffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "t.db")})
	t.Setenv("OPENAI_API_KEY", "")
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(out.String(), "MODELS ARE SCRIPTED") {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no scripted banner:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v\n%s", err, out.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	for _, want := range []string{"trellis serve listening", "graphs=\"[agent builder deep planner scheduler sqlrouter testplanner]\"", "msg=stopped"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// Flags win over the file; a declared assistant's model goes to
// config.configurable.model, beside its other configurable values.
func TestServerConfigFromFlagsAndFile(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	file, err := config.Parse([]byte(`
address: 0.0.0.0:9000
database: from-file.db
models: {strong: "anthropic:claude-sonnet-4-5"}
threads: {ttl: 24h, strategy: keep_latest, sweep_interval: 5m, sweep_batch: 10, retention: {keep_last: 20, forks_older_than: 720h}}
crons: {interval: 30s}
leases: {ttl: 9s, sweep_interval: 2s}
shutdown_grace: 3s
webhooks: {attempts: 3, retry_base: 2s}
mcp: {stateless: true}
a2a: {public_card: true}
assistants:
  - {graph: planner, name: P, model: strong, retention: {keep_last: 5}, config: {configurable: {lang: fr}, recursion_limit: 5},
     online_evaluators: [{key: plan, sample: 0.5, criterion: {evaluator: contains, params: {values: [plan]}}}]}
  - {graph: agent, name: A, system: Be brief., tools: [stop, {use: stop, approve: ask}]}
`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	cfg, models, err := serverConfig(serveFlags{addr: "127.0.0.1:1"}, file, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:1" || cfg.Database != "from-file.db" || !cfg.Scripted || !models.Scripted() {
		t.Errorf("cfg %+v scripted %v", cfg, models.Scripted())
	}
	if cfg.ThreadTTL == nil || cfg.ThreadTTL.Duration != 24*time.Hour || cfg.ThreadTTL.Strategy != "keep_latest" ||
		cfg.ThreadSweepInterval != 5*time.Minute || cfg.ThreadSweepBatch != 10 {
		t.Errorf("threads: TTL %+v, sweep every %s, batch %d", cfg.ThreadTTL, cfg.ThreadSweepInterval, cfg.ThreadSweepBatch)
	}
	if want := (checkpoint.Retention{KeepLast: 20, ForksOlderThan: 720 * time.Hour}); cfg.Retention != want {
		t.Errorf("threads.retention: %+v, want %+v", cfg.Retention, want)
	}
	if got := cfg.AssistantRetention; len(got) != 1 || got[config.NameUUID("assistant:P")] != (checkpoint.Retention{KeepLast: 5}) {
		t.Errorf("assistants[0].retention: %+v, want keep_last 5 for P only", got)
	}
	if oe := cfg.OnlineEvaluators[config.NameUUID("assistant:P")]; len(cfg.OnlineEvaluators) != 1 || len(oe) != 1 ||
		oe[0].Key != "plan" || oe[0].Sample != 0.5 || oe[0].Criterion.Evaluator != "contains" {
		t.Errorf("assistants[0].online_evaluators: %+v", cfg.OnlineEvaluators)
	}
	if cfg.LeaseTTL != 9*time.Second || cfg.SweepInterval != 2*time.Second || cfg.ShutdownGrace != 3*time.Second {
		t.Errorf("leases: TTL %s, sweep every %s, grace %s", cfg.LeaseTTL, cfg.SweepInterval, cfg.ShutdownGrace)
	}
	if cfg.CronInterval != 30*time.Second || cfg.Webhooks.Attempts != 3 || cfg.Webhooks.RetryBase != 2*time.Second {
		t.Errorf("cron interval %s, webhooks %+v", cfg.CronInterval, cfg.Webhooks)
	}
	if !cfg.MCPStateless {
		t.Error("mcp: {stateless: true} did not reach the server's config")
	}
	if !cfg.A2APublicCard {
		t.Error("a2a: {public_card: true} did not reach the server's config")
	}
	var conf map[string]any
	if err := json.Unmarshal(cfg.Assistants[0].Config, &conf); err != nil {
		t.Fatal(err)
	}
	c := conf["configurable"].(map[string]any)
	if c["model"] != "strong" || c["lang"] != "fr" || conf["recursion_limit"] != float64(5) {
		t.Errorf("config %s", cfg.Assistants[0].Config)
	}
	if got := string(cfg.Assistants[1].Config); got != `{"configurable":{"system_prompt":"Be brief.","tools":[{"use":"stop"},{"use":"stop","approve":"ask"}]}}` {
		t.Errorf("agent config %s", got)
	}
	if file.Assistants[0].Config["configurable"].(map[string]any)["model"] != nil {
		t.Error("the file's own config was changed")
	}
	t.Setenv("ANTHROPIC_API_KEY", "x")
	if _, models, _ = serverConfig(serveFlags{}, file, nil); models.Default != "anthropic:claude-sonnet-4-5" {
		t.Errorf("ANTHROPIC_API_KEY: default %q", models.Default)
	}
	if _, models, _ = serverConfig(serveFlags{model: "ollama:qwen2.5"}, file, nil); models.Default != "ollama:qwen2.5" {
		t.Errorf("--model: default %q", models.Default)
	}
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// --log-format json logs JSON lines, and /metrics is served; a bad format
// is an error naming the flag.
func TestServeJSONLogsAndMetrics(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	if _, err := trellis(t, "", "serve", "--log-format", "xml", "--db", filepath.Join(t.TempDir(), "t.db")); err == nil || !strings.Contains(err.Error(), "--log-format") {
		t.Fatalf("bad format: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	root := newRoot()
	var out syncBuffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json", "--db", filepath.Join(t.TempDir(), "t.db")})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	var url string
	deadline := time.Now().Add(30 * time.Second)
	for url == "" {
		for _, line := range strings.Split(out.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "trellis serve listening" {
				url, _ = rec["url"].(string)
			}
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no JSON listening line:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "trellis_open_streams 0") {
		t.Errorf("/metrics: %d %s", resp.StatusCode, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if strings.HasPrefix(line, "!!") || strings.TrimSpace(line) == "" {
			continue // the scripted-models banner
		}
		if !json.Valid([]byte(line)) {
			t.Errorf("a log line is not JSON: %q", line)
		}
	}
}

// The apps section of trellis.yaml becomes each app's JSON settings; a
// section naming no bundled app is an error listing the apps.
func TestAppSettings(t *testing.T) {
	got, err := appSettings(map[string]map[string]any{"sqlrouter": {"routes": map[string]any{"fix": "fix_sql"}}})
	if err != nil || string(got["sqlrouter"]) != `{"routes":{"fix":"fix_sql"}}` {
		t.Errorf("appSettings = %s, %v", got["sqlrouter"], err)
	}
	if _, err := appSettings(map[string]map[string]any{"sqlroutr": {}}); err == nil || !strings.Contains(err.Error(), `no app "sqlroutr"`) || !strings.Contains(err.Error(), "sqlrouter") {
		t.Errorf("a misspelt app: %v", err)
	}
	// A misspelt key or a value of the wrong type in any app's section
	// stops the server at start, naming the app and the key.
	for app, section := range map[string]map[string]any{
		"sqlrouter":   {"route": map[string]any{}},
		"scheduler":   {"tool_group": true},
		"testplanner": {"batch_size": "ten"},
		"builder":     {"agnet": map[string]any{}},
		"planner":     {"max_question": 2},
	} {
		_, err := appSettings(map[string]map[string]any{app: section})
		var key string
		for k := range section {
			key = k
		}
		if err == nil || !strings.Contains(err.Error(), "apps."+app) || (app != "testplanner" && !strings.Contains(err.Error(), key)) {
			t.Errorf("apps.%s %v: err = %v; want it refused at start, naming the key", app, section, err)
		}
	}
	for _, e := range catalog.All() {
		if e.Check == nil {
			t.Errorf("app %s has settings but no Check: a bad section would only show at its first run", e.Name)
		}
	}
}
