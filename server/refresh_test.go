package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/trellis-agents/trellis/apps/catalog"
	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/db"
)

// A database made before the apps declared examples holds their default
// assistants without them: on start the server gives each system
// assistant the keys its graph declares that it lacks (and its empty
// description), keeps what an operator set on one, and leaves assistants
// people created alone.
func TestStartFillsWhatOldDefaultAssistantsLack(t *testing.T) {
	ctx := context.Background()
	s, err := New(ctx, Config{Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "t.db"), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	old := db.Metadata{"created_by": "system"}
	for _, a := range []db.Assistant{
		// As an older server made them: no examples, no description.
		{ID: DefaultAssistantID("planner"), GraphID: "planner", Name: "planner", Metadata: old},
		// An operator chose this one's examples.
		{ID: DefaultAssistantID("builder"), GraphID: "builder", Name: "builder", Description: "Ours.", Metadata: db.Metadata{"created_by": "system", "examples": []any{"mine"}}},
		// A person's own assistant on an app's graph.
		{ID: "a-mine", GraphID: "planner", Name: "mine", Metadata: db.Metadata{}},
	} {
		a.Config, a.Context = json.RawMessage(`{}`), json.RawMessage(`{}`)
		if _, err := s.st.db.CreateAssistant(ctx, api.DefaultTenant, a, db.IfExistsRaise); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RegisterApps(catalog.All(), Models{}); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second start finds nothing to do
		if err := s.ensureAssistants(ctx); err != nil {
			t.Fatal(err)
		}
	}
	get := func(id string) db.Assistant {
		t.Helper()
		a, err := s.st.db.GetAssistant(ctx, api.DefaultTenant, id)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	planner := get(DefaultAssistantID("planner"))
	ex, _ := planner.Metadata["examples"].([]any)
	if len(ex) == 0 || planner.Description == "" || planner.Metadata["created_by"] != "system" {
		t.Errorf("the old planner assistant was not given its examples and description: %+v", planner)
	}
	if planner.Version != 2 {
		t.Errorf("the planner assistant is at version %d, want 2 (one refresh, none on the second start)", planner.Version)
	}
	builder := get(DefaultAssistantID("builder"))
	if ex, _ := builder.Metadata["examples"].([]any); len(ex) != 1 || ex[0] != "mine" || builder.Description != "Ours." || builder.Version != 1 {
		t.Errorf("the operator's examples or description were replaced: %+v", builder)
	}
	mine := get("a-mine")
	if _, ok := mine.Metadata["examples"]; ok || mine.Version != 1 {
		t.Errorf("a person's assistant was changed: %+v", mine)
	}
}
