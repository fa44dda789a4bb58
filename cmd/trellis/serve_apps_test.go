package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server"
	"github.com/trellis-agents/trellis/server/config"
)

// servedApps is a trellis.yaml using the apps' per-phase settings and
// history policies (issue 16): the builder's judge and history, the SQL
// router's sub-agent and routing settings and history, and a planner
// assistant's history and phases.
const servedApps = `apps:
  builder:
    judge: {temperature: 0, max_tokens: 200, reasoning_effort: low}
    history: {policy: last_turns, turns: 4}
  sqlrouter:
    agent_settings: {discovery: {temperature: 0.1}}
    router_settings: {max_tokens: 500}
    history: {policy: token_budget, max_tokens: 4000}
  scheduler:
    tool_groups: true
assistants:
  - graph: planner
    name: planner-bounded
    config: {configurable: {planner: {history: {policy: last_turns, turns: 6}, phases: {plan: {temperature: 0.2}}}}}
`

// trellis serve starts with a trellis.yaml using the apps' new options
// and serves each app with them: runs of the builder, the SQL router and
// the planner assistant finish over HTTP.
func TestServeAppsWithPhaseAndHistoryOptions(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	dir := t.TempDir()
	file := filepath.Join(dir, "trellis.yaml")
	if err := os.WriteFile(file, []byte(servedApps), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	root := newRoot()
	var out syncBuffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"serve", "--addr", "127.0.0.1:0", "--log-format", "json", "--config", file,
		"--db", filepath.Join(dir, "t.db")})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v\n%s", err, out.String())
		}
	}()
	var url string
	for deadline := time.Now().Add(30 * time.Second); url == ""; time.Sleep(20 * time.Millisecond) {
		for _, line := range strings.Split(out.String(), "\n") {
			var rec map[string]any
			if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "trellis serve listening" {
				url, _ = rec["url"].(string)
			}
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("serve ended: %v\n%s", err, out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", out.String())
		}
	}
	run := func(assistant, question string) string {
		t.Helper()
		body := `{"assistant_id":"` + assistant + `","input":{"messages":[{"role":"user","content":` + strings.TrimSpace(mustJSON(t, question)) + `}]}}`
		resp, err := (&http.Client{Timeout: 60 * time.Second}).Post(url+"/runs/wait", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("run of %s: %d %s", assistant, resp.StatusCode, b)
		}
		return string(b)
	}
	if got := run(server.DefaultAssistantID("builder"), "I bought headphones 20 days ago and one side stopped working. Can I still return them?"); !strings.Contains(got, "No changes needed") {
		t.Errorf("builder: %s", got)
	}
	if got := run(server.DefaultAssistantID("sqlrouter"), "Which book genres were borrowed most in 2025? Give the number of loans for each genre."); !strings.Contains(got, "loans") {
		t.Errorf("sqlrouter: %s", got)
	}
	if got := run(config.NameUUID("assistant:planner-bounded"), "Plan a weekend in Lisbon."); !strings.Contains(got, "messages") {
		t.Errorf("planner: %s", got)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
