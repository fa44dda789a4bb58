package server

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/apps/catalog"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/db"
)

// The five apps are registered with a default assistant each, and every
// assistant's graph builds: scripted without a model, through the
// resolver when its config names one (by name or spec), and an
// unresolvable model is an error naming the field.
func TestRegisterApps(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "t.db"), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var resolved []string
	m := Models{
		Named:        map[string]string{"strong": "fake:strong"},
		Operator:     []string{"fake:broken"},
		AllowRequest: []string{"asked:*"},
		Resolve: func(spec string) (llm.Model, error) {
			resolved = append(resolved, spec)
			if spec == "fake:broken" {
				return nil, errors.New("unknown provider fake")
			}
			return catalog.All()[0].Script(), nil
		},
		ResolveRequest: func(spec string) (llm.Model, error) {
			resolved = append(resolved, "request "+spec)
			return catalog.All()[0].Script(), nil
		},
	}
	if err := s.RegisterApps(catalog.All(), m); err != nil {
		t.Fatal(err)
	}
	if err := s.ensureAssistants(ctx); err != nil {
		t.Fatal(err)
	}
	for _, e := range catalog.All() {
		a, err := s.st.db.GetAssistant(ctx, api.DefaultTenant, DefaultAssistantID(e.Name))
		if err != nil || a.GraphID != e.Name || a.Description != e.Summary {
			t.Fatalf("default assistant of %s: %+v %v", e.Name, a, err)
		}
		if g, err := s.graphs.Graph(ctx, api.DefaultTenant, a); err != nil || g == nil {
			t.Errorf("graph of %s: %v", e.Name, err)
		}
	}
	if len(resolved) != 0 {
		t.Errorf("scripted assistants resolved models %v", resolved)
	}
	// A spec the operator neither declared nor allows is refused, naming
	// the models, and never resolved.
	resolved = nil
	_, err = s.graphs.Graph(ctx, api.DefaultTenant, db.Assistant{ID: "a-other", GraphID: "planner", Name: "other", Config: json.RawMessage(`{"configurable":{"model":"other:spec"}}`)})
	if len(resolved) != 0 || err == nil || !strings.Contains(err.Error(), `model "other:spec" is not one this server offers: name one of its models (strong) or a spec matching asked:*`) {
		t.Errorf("other:spec: resolved %v, err %v", resolved, err)
	}
	for _, c := range []struct{ model, want, err string }{
		{"strong", "fake:strong", ""},
		{"asked:spec", "request asked:spec", ""},
		{"fake:broken", "fake:broken", `config.configurable.model: model "fake:broken": unknown provider fake`},
	} {
		a := db.Assistant{ID: "a-" + c.model, GraphID: "planner", Name: c.model, Config: json.RawMessage(`{"configurable":{"model":"` + c.model + `"}}`)}
		resolved = nil
		_, err := s.graphs.Graph(ctx, api.DefaultTenant, a)
		if len(resolved) != 1 || resolved[0] != c.want {
			t.Errorf("%s: resolved %v, want %s", c.model, resolved, c.want)
		}
		if (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: err = %v, want %q", c.model, err, c.err)
		}
	}
}

// Models.Titler asks the default model for a title; scripted models have
// none (threads are titled with their first message).
func TestModelsTitler(t *testing.T) {
	if (Models{}).Titler() != nil {
		t.Fatal("scripted models have a titler")
	}
	m := llmtest.New().Reply(llmtest.Text("Week plan"))
	titler := Models{Default: "test:model", Resolve: func(spec string) (llm.Model, error) { return m, nil }}.Titler()
	got, err := titler(context.Background(), "plan my week", "Here it is")
	if err != nil || got != "Week plan" {
		t.Fatalf("title %q, %v", got, err)
	}
	reqs := m.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].Messages[len(reqs[0].Messages)-1].Text(), "User: plan my week\nAssistant: Here it is") {
		t.Fatalf("the title request %+v", reqs)
	}
}

// trellis.yaml's apps section reaches the apps: the sqlrouter offers the
// builder app's default assistant as a sub-agent (apps.Env.Assistant), an
// assistant's configurable.settings replaces its app's, and a cycle of
// assistants is refused.
func TestAppSettingsAndAssistantSubAgents(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "t.db"), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	helper := DefaultAssistantID("builder")
	m := Models{AppSettings: map[string]json.RawMessage{
		"sqlrouter": json.RawMessage(`{"assistants": [{"name": "helper", "description": "Answers customer questions.", "assistant": "` + helper + `", "terminal": true}]}`),
	}}
	if err := s.RegisterApps(catalog.All(), m); err != nil {
		t.Fatal(err)
	}
	if err := s.ensureAssistants(ctx); err != nil {
		t.Fatal(err)
	}
	a, err := s.st.db.GetAssistant(ctx, api.DefaultTenant, DefaultAssistantID("sqlrouter"))
	if err != nil {
		t.Fatal(err)
	}
	g, err := s.graphs.Graph(ctx, api.DefaultTenant, a)
	if err != nil {
		t.Fatal(err)
	}
	res, err := g.Invoke(ctx, react.Input("@helper I bought headphones 20 days ago and one side stopped working. Can I still return them?"),
		graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t"))
	if err != nil {
		t.Fatal(err)
	}
	if ans, _ := react.Answer(res.State); ans != "Accurate and kind. No changes needed." {
		t.Errorf("the builder assistant as a sub-agent answered %q", ans)
	}

	self := db.Assistant{ID: "loop", GraphID: "sqlrouter", Name: "loop",
		Config: json.RawMessage(`{"configurable":{"settings":{"assistants":[{"name":"me","description":"Me.","assistant":"loop"}]}}}`)}
	self, err = s.st.db.CreateAssistant(ctx, api.DefaultTenant, self, db.IfExistsRaise)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.graphs.Graph(ctx, api.DefaultTenant, self); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("an assistant offering itself: %v; want a cycle error", err)
	}
}

// An app assistant's config.configurable.middleware is built like the
// agent graph's and reaches the app: a bad entry is an error naming its
// field, and a fallback resolves the operator's named model.
func TestAppAssistantMiddleware(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "t.db"), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var resolved []string
	m := Models{
		Named: map[string]string{"backup": "fake:backup"},
		Resolve: func(spec string) (llm.Model, error) {
			resolved = append(resolved, spec)
			return catalog.All()[0].Script(), nil
		},
	}
	if err := s.RegisterApps(catalog.All(), m); err != nil {
		t.Fatal(err)
	}
	_, err = s.graphs.Graph(ctx, api.DefaultTenant, db.Assistant{ID: "a-bad", GraphID: "planner", Name: "bad",
		Config: json.RawMessage(`{"configurable":{"middleware":[{"name":"shout"}]}}`)})
	if err == nil || !strings.Contains(err.Error(), `config.configurable.middleware[0].name: "shout" is not one of`) {
		t.Errorf("an unknown middleware: %v", err)
	}
	g, err := s.graphs.Graph(ctx, api.DefaultTenant, db.Assistant{ID: "a-fb", GraphID: "planner", Name: "fb",
		Config: json.RawMessage(`{"configurable":{"middleware":[{"name":"fallback","models":["backup"]}]}}`)})
	if err != nil || g == nil {
		t.Fatalf("fallback middleware: %v", err)
	}
	if !slices.Contains(resolved, "fake:backup") {
		t.Errorf("resolved %v; want the fallback's model", resolved)
	}
}
