package db_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/db/sqlite"
)

// TestFindAssistant: an ID, then a graph ID (its oldest assistant), then a
// name, within the tenant only; anything else is ErrNotFound.
func TestFindAssistant(t *testing.T) {
	ctx := context.Background()
	d, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	create := func(tenant, graph, name string) db.Assistant {
		a, err := d.CreateAssistant(ctx, tenant, db.Assistant{ID: uuid.NewString(), GraphID: graph, Name: name}, db.IfExistsRaise)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	first := create("a", "planner", "offsite")
	second := create("a", "planner", "workshop")
	other := create("b", "scheduler", "offsite")
	for _, c := range []struct{ tenant, ref, want string }{
		{"a", second.ID, second.ID},
		{"a", "planner", first.ID}, // the graph's oldest
		{"a", "workshop", second.ID},
		{"a", "offsite", first.ID},
		{"b", "offsite", other.ID},
		{"b", first.ID, ""}, // another tenant's ID
		{"a", "scheduler", ""},
		{"a", "../etc", ""},
	} {
		got, err := db.FindAssistant(ctx, d, c.tenant, c.ref)
		if c.want == "" {
			if !errors.Is(err, db.ErrNotFound) {
				t.Errorf("%s/%s: %+v, %v; want ErrNotFound", c.tenant, c.ref, got, err)
			}
			continue
		}
		if err != nil || got.ID != c.want {
			t.Errorf("%s/%s: %s, %v; want %s", c.tenant, c.ref, got.ID, err, c.want)
		}
	}
}
