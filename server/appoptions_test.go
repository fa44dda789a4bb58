package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/apps/catalog"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/db"
)

// An app assistant's config.configurable reaches the app: the planner's
// per-phase models are resolved by name through the server's models, and
// bad options fail the assistant's graph with the field named.
func TestAppOptionsFromAssistantConfig(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "t.db"), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var resolved []string
	m := Models{
		Named: map[string]string{"strong": "fake:strong"},
		Resolve: func(spec string) (llm.Model, error) {
			resolved = append(resolved, spec)
			return catalog.All()[0].Script(), nil
		},
	}
	if err := s.RegisterApps(catalog.All(), m); err != nil {
		t.Fatal(err)
	}
	good := db.Assistant{ID: "p1", GraphID: "planner", Name: "p1",
		Config: json.RawMessage(`{"configurable":{"planner":{"step_rounds":20,"phases":{"plan":{"model":"strong","temperature":0.1}}}}}`)}
	if _, err := s.graphs.Graph(ctx, api.DefaultTenant, good); err != nil {
		t.Fatal(err)
	}
	if len(resolved) != 1 || resolved[0] != "fake:strong" {
		t.Errorf("resolved %v; want the plan phase's model by its name", resolved)
	}
	bad := db.Assistant{ID: "p2", GraphID: "planner", Name: "p2",
		Config: json.RawMessage(`{"configurable":{"planner":{"phases":{"routing":{}}}}}`)}
	if _, err := s.graphs.Graph(ctx, api.DefaultTenant, bad); err == nil || !strings.Contains(err.Error(), "phases.routing: no such phase") {
		t.Errorf("err = %v", err)
	}
}
