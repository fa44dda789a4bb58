package dbtest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

func testAssistantCreate(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	before := time.Now()
	a, err := d.CreateAssistant(bg(), ten, db.Assistant{
		ID: "a1", GraphID: "g", Name: "First", Description: "desc",
		Config:   json.RawMessage(`{"configurable":{"model":"m"}}`),
		Metadata: db.Metadata{"team": "x", "n": 1},
	}, db.IfExistsRaise)
	ok(t, "CreateAssistant", err)
	after := time.Now()
	if a.ID != "a1" || a.GraphID != "g" || a.Name != "First" || a.Description != "desc" || a.Version != 1 {
		t.Errorf("created %+v, want ID a1, graph g, name First, description desc, version 1", a)
	}
	jsonEq(t, "config", a.Config, `{"configurable":{"model":"m"}}`)
	jsonEq(t, "context", a.Context, `{}`)
	jsonEq(t, "metadata", a.Metadata, `{"team":"x","n":1}`)
	within(t, "CreatedAt", a.CreatedAt, before, after)
	if !a.UpdatedAt.Equal(a.CreatedAt) {
		t.Errorf("UpdatedAt %v != CreatedAt %v on create", a.UpdatedAt, a.CreatedAt)
	}

	got, err := d.GetAssistant(bg(), ten, "a1")
	ok(t, "GetAssistant", err)
	if got.Name != "First" || got.Version != 1 || !got.CreatedAt.Equal(a.CreatedAt) {
		t.Errorf("GetAssistant = %+v, want the created one %+v", got, a)
	}
	jsonEq(t, "got metadata", got.Metadata, `{"team":"x","n":1}`)

	// A taken ID: raise is a conflict, do_nothing returns the stored row.
	_, err = d.CreateAssistant(bg(), ten, db.Assistant{ID: "a1", GraphID: "other"}, db.IfExistsRaise)
	isErr(t, "create a taken ID with raise", err, db.ErrConflict)
	same, err := d.CreateAssistant(bg(), ten, db.Assistant{ID: "a1", GraphID: "other", Name: "Second"}, db.IfExistsDoNothing)
	ok(t, "create a taken ID with do_nothing", err)
	if same.GraphID != "g" || same.Name != "First" {
		t.Errorf("do_nothing returned %+v, want the stored assistant (graph g, name First)", same)
	}

	// No ID: one is made, and two such assistants differ.
	x, err := d.CreateAssistant(bg(), ten, db.Assistant{GraphID: "g"}, db.IfExistsRaise)
	ok(t, "create without ID", err)
	y, err := d.CreateAssistant(bg(), ten, db.Assistant{GraphID: "g"}, db.IfExistsRaise)
	ok(t, "create without ID", err)
	if x.ID == "" || x.ID == y.ID {
		t.Errorf("assistants created without ID got IDs %q and %q, want two distinct ones", x.ID, y.ID)
	}
	jsonEq(t, "default metadata", x.Metadata, `{}`)

	_, err = d.GetAssistant(bg(), ten, "missing")
	isErr(t, "GetAssistant of a missing ID", err, db.ErrNotFound)
	names(t, "GetAssistant of a missing ID", err, "missing")
}

func testAssistantUpdateVersions(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	a, err := d.CreateAssistant(bg(), ten, db.Assistant{ID: "a", GraphID: "g", Name: "v1",
		Config: json.RawMessage(`{"k":1}`), Metadata: db.Metadata{"keep": "yes", "change": 1}}, db.IfExistsRaise)
	ok(t, "CreateAssistant", err)

	v2, err := d.UpdateAssistant(bg(), ten, "a", db.AssistantPatch{Name: ptr("v2"), Metadata: db.Metadata{"change": 2, "new": true}})
	ok(t, "UpdateAssistant", err)
	if v2.Version != 2 || v2.Name != "v2" || v2.GraphID != "g" {
		t.Errorf("update made %+v, want version 2, name v2, graph g kept", v2)
	}
	jsonEq(t, "merged metadata", v2.Metadata, `{"keep":"yes","change":2,"new":true}`)
	jsonEq(t, "kept config", v2.Config, `{"k":1}`)
	if !v2.CreatedAt.Equal(a.CreatedAt) || v2.UpdatedAt.Before(a.UpdatedAt) {
		t.Errorf("update: CreatedAt %v (was %v), UpdatedAt %v (was %v); want CreatedAt kept and UpdatedAt not earlier",
			v2.CreatedAt, a.CreatedAt, v2.UpdatedAt, a.UpdatedAt)
	}
	v3, err := d.UpdateAssistant(bg(), ten, "a", db.AssistantPatch{GraphID: ptr("g2"), Config: json.RawMessage(`{"k":3}`), Context: json.RawMessage(`{"c":true}`)})
	ok(t, "UpdateAssistant", err)
	if v3.Version != 3 || v3.GraphID != "g2" || v3.Name != "v2" {
		t.Errorf("second update made %+v, want version 3, graph g2, name v2 kept", v3)
	}
	jsonEq(t, "config v3", v3.Config, `{"k":3}`)
	jsonEq(t, "context v3", v3.Context, `{"c":true}`)

	vs, err := d.AssistantVersions(bg(), ten, "a", db.Query{})
	ok(t, "AssistantVersions", err)
	if len(vs) != 3 || vs[0].Version != 3 || vs[1].Version != 2 || vs[2].Version != 1 {
		t.Fatalf("versions = %v, want 3, 2, 1", versions(vs))
	}
	if vs[2].Name != "v1" || vs[1].Name != "v2" {
		t.Errorf("version names %q, %q, want v1 and v2 as they were", vs[2].Name, vs[1].Name)
	}
	jsonEq(t, "version 1 metadata", vs[2].Metadata, `{"keep":"yes","change":1}`)
	page, err := d.AssistantVersions(bg(), ten, "a", db.Query{Limit: 1, Offset: 1})
	ok(t, "AssistantVersions paged", err)
	if len(page) != 1 || page[0].Version != 2 {
		t.Errorf("versions limit 1 offset 1 = %v, want [2]", versions(page))
	}
	asc, err := d.AssistantVersions(bg(), ten, "a", db.Query{SortOrder: "asc", Limit: 2})
	ok(t, "AssistantVersions asc", err)
	if len(asc) != 2 || asc[0].Version != 1 || asc[1].Version != 2 {
		t.Errorf("versions asc limit 2 = %v, want [1 2]", versions(asc))
	}
	byMD, err := d.AssistantVersions(bg(), ten, "a", db.Query{Metadata: db.Metadata{"change": 2}})
	ok(t, "AssistantVersions by metadata", err)
	if len(byMD) != 2 || byMD[0].Version != 3 || byMD[1].Version != 2 {
		t.Errorf("versions with metadata change=2 = %v, want [3 2]", versions(byMD))
	}

	// Set latest back to 1, then an update makes version 4 from version 1.
	l, err := d.SetLatestVersion(bg(), ten, "a", 1)
	ok(t, "SetLatestVersion", err)
	if l.Version != 1 || l.Name != "v1" || l.GraphID != "g" {
		t.Errorf("SetLatestVersion(1) = %+v, want version 1 named v1 on graph g", l)
	}
	jsonEq(t, "latest metadata", l.Metadata, `{"keep":"yes","change":1}`)
	got, err := d.GetAssistant(bg(), ten, "a")
	ok(t, "GetAssistant", err)
	if got.Version != 1 || got.Name != "v1" {
		t.Errorf("GetAssistant after SetLatestVersion(1) = version %d name %q, want 1 v1", got.Version, got.Name)
	}
	v4, err := d.UpdateAssistant(bg(), ten, "a", db.AssistantPatch{Description: ptr("d")})
	ok(t, "UpdateAssistant", err)
	if v4.Version != 4 || v4.Name != "v1" || v4.Description != "d" {
		t.Errorf("update after SetLatestVersion(1) = %+v, want version 4 from version 1 (name v1) with description d", v4)
	}
	_, err = d.SetLatestVersion(bg(), ten, "a", 9)
	isErr(t, "SetLatestVersion of a missing version", err, db.ErrNotFound)
	_, err = d.UpdateAssistant(bg(), ten, "missing", db.AssistantPatch{Name: ptr("x")})
	isErr(t, "UpdateAssistant of a missing assistant", err, db.ErrNotFound)
	_, err = d.AssistantVersions(bg(), ten, "missing", db.Query{})
	isErr(t, "AssistantVersions of a missing assistant", err, db.ErrNotFound)
}

func versions(as []db.Assistant) []int {
	out := make([]int, len(as))
	for i, a := range as {
		out[i] = a.Version
	}
	return out
}

func testAssistantDelete(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	_, err := d.CreateAssistant(bg(), ten, db.Assistant{ID: "a", GraphID: "g"}, db.IfExistsRaise)
	ok(t, "CreateAssistant", err)
	_, err = d.UpdateAssistant(bg(), ten, "a", db.AssistantPatch{Name: ptr("n")})
	ok(t, "UpdateAssistant", err)
	ok(t, "DeleteAssistant", d.DeleteAssistant(bg(), ten, "a"))
	_, err = d.GetAssistant(bg(), ten, "a")
	isErr(t, "GetAssistant after delete", err, db.ErrNotFound)
	_, err = d.AssistantVersions(bg(), ten, "a", db.Query{})
	isErr(t, "AssistantVersions after delete", err, db.ErrNotFound)
	isErr(t, "DeleteAssistant twice", d.DeleteAssistant(bg(), ten, "a"), db.ErrNotFound)
	// The ID is free again, starting at version 1.
	a, err := d.CreateAssistant(bg(), ten, db.Assistant{ID: "a", GraphID: "g"}, db.IfExistsRaise)
	ok(t, "CreateAssistant again", err)
	if a.Version != 1 {
		t.Errorf("re-created assistant has version %d, want 1", a.Version)
	}
}

func testAssistantSearch(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	mk := func(id, graph, name string, md db.Metadata) {
		_, err := d.CreateAssistant(bg(), ten, db.Assistant{ID: id, GraphID: graph, Name: name, Metadata: md}, db.IfExistsRaise)
		ok(t, "CreateAssistant "+id, err)
	}
	mk("a1", "chat", "Support Bot", db.Metadata{"team": "care", "tier": 1, "tags": []any{"x", "y"}, "owner": map[string]any{"name": "ann", "org": "o"}})
	mk("a2", "chat", "Sales bot", db.Metadata{"team": "sales", "tier": 1.0})
	mk("a3", "plan", "Planner", db.Metadata{"team": "care", "tier": "1", "tags": []any{"y"}})
	mk("a4", "plan", "robot", nil)

	cases := []struct {
		name string
		q    db.AssistantQuery
		want []string
	}{
		{"all", db.AssistantQuery{Query: db.Query{SortBy: "assistant_id", SortOrder: "asc"}}, []string{"a1", "a2", "a3", "a4"}},
		{"graph", db.AssistantQuery{GraphID: "plan", Query: db.Query{SortBy: "assistant_id", SortOrder: "asc"}}, []string{"a3", "a4"}},
		{"name substring, any case", db.AssistantQuery{Name: "BOT", Query: db.Query{SortBy: "assistant_id", SortOrder: "asc"}}, []string{"a1", "a2", "a4"}},
		{"metadata string", db.AssistantQuery{Query: db.Query{Metadata: db.Metadata{"team": "care"}, SortBy: "assistant_id", SortOrder: "asc"}}, []string{"a1", "a3"}},
		{"metadata number by value, not string", db.AssistantQuery{Query: db.Query{Metadata: db.Metadata{"tier": 1}, SortBy: "assistant_id", SortOrder: "asc"}}, []string{"a1", "a2"}},
		{"metadata two keys", db.AssistantQuery{Query: db.Query{Metadata: db.Metadata{"team": "care", "tier": 1}}}, []string{"a1"}},
		{"metadata nested object subset", db.AssistantQuery{Query: db.Query{Metadata: db.Metadata{"owner": map[string]any{"name": "ann"}}}}, []string{"a1"}},
		{"metadata nested object mismatch", db.AssistantQuery{Query: db.Query{Metadata: db.Metadata{"owner": map[string]any{"name": "bob"}}}}, nil},
		{"metadata array element", db.AssistantQuery{Query: db.Query{Metadata: db.Metadata{"tags": []any{"x"}}}}, []string{"a1"}},
		{"metadata array subset", db.AssistantQuery{Query: db.Query{Metadata: db.Metadata{"tags": []any{"y"}}, SortBy: "assistant_id", SortOrder: "asc"}}, []string{"a1", "a3"}},
		{"metadata scalar is not an array element", db.AssistantQuery{Query: db.Query{Metadata: db.Metadata{"tags": "x"}}}, nil},
		{"metadata missing key", db.AssistantQuery{Query: db.Query{Metadata: db.Metadata{"nope": nil}}}, nil},
		{"graph and metadata", db.AssistantQuery{GraphID: "chat", Query: db.Query{Metadata: db.Metadata{"team": "care"}}}, []string{"a1"}},
		{"limit", db.AssistantQuery{Query: db.Query{SortBy: "assistant_id", SortOrder: "asc", Limit: 2}}, []string{"a1", "a2"}},
		{"offset", db.AssistantQuery{Query: db.Query{SortBy: "assistant_id", SortOrder: "asc", Limit: 2, Offset: 3}}, []string{"a4"}},
		{"filtered offset", db.AssistantQuery{Name: "bot", Query: db.Query{SortBy: "assistant_id", SortOrder: "desc", Limit: 1, Offset: 1}}, []string{"a2"}},
	}
	for _, c := range cases {
		got, err := d.SearchAssistants(bg(), ten, c.q)
		ok(t, c.name, err)
		sameIDs(t, c.name, ids(got, assistantID), c.want)
		q := c.q
		q.Limit, q.Offset = 0, 0
		n, err := d.CountAssistants(bg(), ten, q)
		ok(t, c.name+" count", err)
		all, err := d.SearchAssistants(bg(), ten, db.AssistantQuery{Query: db.Query{Metadata: q.Metadata, Limit: 100}, GraphID: q.GraphID, Name: q.Name})
		ok(t, c.name, err)
		if n != len(all) {
			t.Errorf("%s: count %d, but search without paging found %d", c.name, n, len(all))
		}
	}
	n, err := d.CountAssistants(bg(), ten, db.AssistantQuery{Query: db.Query{Limit: 1}})
	ok(t, "CountAssistants", err)
	if n != 4 {
		t.Errorf("CountAssistants with limit 1 = %d, want 4 (count ignores paging)", n)
	}
}

func testAssistantSort(t *testing.T, d db.DB) {
	ten := tenant(t, "a")
	for i, name := range []string{"c", "a", "b"} {
		_, err := d.CreateAssistant(bg(), ten, db.Assistant{ID: fmt.Sprintf("id%d", i), GraphID: "g" + name, Name: name}, db.IfExistsRaise)
		ok(t, "CreateAssistant", err)
		time.Sleep(2 * time.Millisecond)
	}
	// Update id0 last so that it is the most recently updated.
	_, err := d.UpdateAssistant(bg(), ten, "id0", db.AssistantPatch{Description: ptr("touched")})
	ok(t, "UpdateAssistant", err)
	cases := []struct {
		q    db.Query
		want []string
	}{
		{db.Query{}, []string{"id2", "id1", "id0"}}, // created_at desc by default
		{db.Query{SortOrder: "asc"}, []string{"id0", "id1", "id2"}},
		{db.Query{SortBy: "name", SortOrder: "asc"}, []string{"id1", "id2", "id0"}},
		{db.Query{SortBy: "graph_id"}, []string{"id0", "id2", "id1"}},
		{db.Query{SortBy: "updated_at"}, []string{"id0", "id2", "id1"}},
		{db.Query{SortBy: "assistant_id", SortOrder: "desc"}, []string{"id2", "id1", "id0"}},
	}
	for _, c := range cases {
		got, err := d.SearchAssistants(bg(), ten, db.AssistantQuery{Query: c.q})
		ok(t, "SearchAssistants", err)
		sameIDs(t, fmt.Sprintf("sort %q %q", c.q.SortBy, c.q.SortOrder), ids(got, assistantID), c.want)
	}
	// Limit 0 means 10.
	for i := range 12 {
		_, err := d.CreateAssistant(bg(), ten, db.Assistant{ID: fmt.Sprintf("more%02d", i), GraphID: "g"}, db.IfExistsRaise)
		ok(t, "CreateAssistant", err)
	}
	got, err := d.SearchAssistants(bg(), ten, db.AssistantQuery{})
	ok(t, "SearchAssistants", err)
	if len(got) != 10 {
		t.Errorf("search with limit 0 returned %d assistants, want the default 10", len(got))
	}
}
