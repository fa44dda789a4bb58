package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/server/api/wire"
)

func TestAssistantCRUD(t *testing.T) {
	e := newResEnv(t, false)
	var a wire.Assistant
	e.must(200, &a, "POST", "/assistants", map[string]any{"graph_id": "chat", "assistant_id": "a1", "name": "first",
		"config": map[string]any{"configurable": map[string]any{"x": 1}}, "context": map[string]any{"user": "ann"}, "metadata": map[string]any{"team": "red"}})
	if a.AssistantID != "a1" || a.Version != 1 || a.Name != "first" || a.Config.Configurable["x"] != float64(1) || a.Metadata["team"] != "red" {
		t.Fatalf("created %+v", a)
	}
	if c, _ := a.Context.(map[string]any); c["user"] != "ann" {
		t.Fatalf("context %v", a.Context)
	}
	// Taken IDs: raise is 409, do_nothing answers the existing one.
	e.problem(409, "", "POST", "/assistants", map[string]any{"graph_id": "chat", "assistant_id": "a1"})
	var same wire.Assistant
	e.must(200, &same, "POST", "/assistants", map[string]any{"graph_id": "chat", "assistant_id": "a1", "if_exists": "do_nothing", "name": "other"})
	if same.Name != "first" {
		t.Fatalf("do_nothing changed the assistant: %+v", same)
	}
	// Bad bodies.
	e.problem(422, "/graph_id", "POST", "/assistants", map[string]any{"graph_id": "nope"})
	e.problem(422, "/graph_id", "POST", "/assistants", map[string]any{})
	e.problem(422, "/context", "POST", "/assistants", map[string]any{"graph_id": "chat", "context": 3})
	e.problem(422, "/if_exists", "POST", "/assistants", map[string]any{"graph_id": "chat", "if_exists": "maybe"})
	e.problem(400, "", "POST", "/assistants", "{")

	// A generated ID.
	var gen wire.Assistant
	e.must(200, &gen, "POST", "/assistants", map[string]any{"graph_id": "chat"})
	if gen.AssistantID == "" || gen.Name != "chat" {
		t.Fatalf("generated %+v", gen)
	}

	e.must(200, &a, "GET", "/assistants/a1", nil)
	e.problem(404, "", "GET", "/assistants/missing", nil)

	// Patch makes version 2; versions lists both; latest goes back to 1.
	var p wire.Assistant
	e.must(200, &p, "PATCH", "/assistants/a1", map[string]any{"name": "second", "metadata": map[string]any{"k": "v"}})
	if p.Version != 2 || p.Name != "second" || p.Metadata["team"] != "red" || p.Metadata["k"] != "v" {
		t.Fatalf("patched %+v", p)
	}
	e.problem(404, "", "PATCH", "/assistants/missing", map[string]any{"name": "x"})
	e.problem(422, "/graph_id", "PATCH", "/assistants/a1", map[string]any{"graph_id": "nope"})
	var vs []wire.AssistantVersion
	e.must(200, &vs, "POST", "/assistants/a1/versions", map[string]any{})
	if len(vs) != 2 || vs[0].Version != 2 || vs[1].Version != 1 {
		t.Fatalf("versions %+v", vs)
	}
	e.problem(404, "", "POST", "/assistants/missing/versions", map[string]any{})
	e.problem(422, "/limit", "POST", "/assistants/a1/versions", map[string]any{"limit": 0})
	var l wire.Assistant
	e.must(200, &l, "POST", "/assistants/a1/latest", map[string]any{"version": 1})
	if l.Version != 1 || l.Name != "first" {
		t.Fatalf("latest %+v", l)
	}
	e.problem(404, "", "POST", "/assistants/a1/latest", map[string]any{"version": 9})
	e.problem(422, "/version", "POST", "/assistants/a1/latest", map[string]any{"version": 0})

	// Search, count, select and paging.
	var found []map[string]any
	e.must(200, &found, "POST", "/assistants/search", map[string]any{"metadata": map[string]any{"team": "red"}, "select": []string{"assistant_id", "version"}})
	if len(found) != 1 || found[0]["assistant_id"] != "a1" || len(found[0]) != 2 {
		t.Fatalf("search %v", found)
	}
	st, _ := e.do("POST", "/assistants/search", map[string]any{"limit": 1, "sort_by": "assistant_id", "sort_order": "asc"})
	if st != 200 {
		t.Fatalf("search status %d", st)
	}
	req, _ := http.NewRequest("POST", e.srv.URL+"/assistants/search", strings.NewReader(`{"limit":1,"sort_by":"assistant_id","sort_order":"asc"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("X-Pagination-Next") != "1" {
		t.Fatalf("X-Pagination-Next %q, want 1 (three assistants, a page of one)", resp.Header.Get("X-Pagination-Next"))
	}
	e.problem(422, "/sort_by", "POST", "/assistants/search", map[string]any{"sort_by": "color"})
	var n int
	e.must(200, &n, "POST", "/assistants/count", map[string]any{"graph_id": "chat"})
	if n != 3 {
		t.Fatalf("count of chat assistants %d, want 3", n)
	}

	// Tenant isolation: the other tenant sees only its own.
	o := []string{resTenantHeader, "other"}
	e.problem(404, "", "GET", "/assistants/a1", nil, o...)
	e.problem(404, "", "PATCH", "/assistants/a1", map[string]any{"name": "x"}, o...)
	e.problem(404, "", "DELETE", "/assistants/a1", nil, o...)
	e.must(200, &n, "POST", "/assistants/count", map[string]any{}, o...)
	if n != 2 {
		t.Fatalf("other tenant counts %d assistants, want its 2 (chat and nested)", n)
	}

	// Delete, with the threads that name it.
	var th wire.Thread
	e.must(200, &th, "POST", "/threads", map[string]any{"metadata": map[string]any{"assistant_id": "a1"}})
	e.must(204, nil, "DELETE", "/assistants/a1?delete_threads=true", nil)
	e.problem(404, "", "GET", "/assistants/a1", nil)
	e.problem(404, "", "GET", "/threads/"+th.ThreadID, nil)
	e.problem(404, "", "DELETE", "/assistants/a1", nil)
	e.problem(422, "delete_threads", "DELETE", "/assistants/"+gen.AssistantID+"?delete_threads=perhaps", nil)
}

func TestAssistantGraphAndSchemas(t *testing.T) {
	e := newResEnv(t, false)
	var g wire.AssistantGraph
	e.must(200, &g, "GET", "/assistants/chat/graph", nil)
	var names []string
	for _, n := range g.Nodes {
		names = append(names, n.ID)
	}
	if strings.Join(names, ",") != "__start__,greet,route,__end__" {
		t.Fatalf("nodes %v", names)
	}
	var edges []string
	for _, ed := range g.Edges {
		edges = append(edges, ed.Source+">"+ed.Target)
	}
	if strings.Join(edges, ",") != "__start__>greet,greet>route,route>__end__" {
		t.Fatalf("edges %v", edges)
	}
	st, body := e.do("GET", "/assistants/chat/graph?format=mermaid", nil)
	if st != 200 || !strings.HasPrefix(string(body), "flowchart TD") {
		t.Fatalf("mermaid: %d %s", st, body)
	}
	e.problem(422, "xray", "GET", "/assistants/chat/graph?xray=-2", nil)
	e.problem(404, "", "GET", "/assistants/nope/graph", nil)
	e.problem(404, "", "GET", "/assistants/chat/graph", nil, resTenantHeader, "third")

	var s wire.GraphSchema
	e.must(200, &s, "GET", "/assistants/chat/schemas", nil)
	var state struct {
		Properties map[string]struct {
			Type  any `json:"type"`
			Items struct {
				Type string `json:"type"`
			} `json:"items"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(s.StateSchema, &state); err != nil {
		t.Fatal(err)
	}
	if p := state.Properties["log"]; !strings.Contains(fmt.Sprint(p.Type), "array") || p.Items.Type != "string" || s.GraphID != "chat" {
		t.Fatalf("state schema %s", s.StateSchema)
	}
	if !strings.Contains(string(s.ContextSchema), `"user"`) || len(s.InputSchema) == 0 || len(s.ConfigSchema) == 0 {
		t.Fatalf("context schema %s, input %s, config %s", s.ContextSchema, s.InputSchema, s.ConfigSchema)
	}
	e.problem(404, "", "GET", "/assistants/nope/schemas", nil)

	var subs wire.Subgraphs
	e.must(200, &subs, "GET", "/assistants/chat/subgraphs?recurse=true", nil)
	if len(subs) != 0 {
		t.Fatalf("subgraphs of a flat graph: %v", subs)
	}
	e.problem(404, "", "GET", "/assistants/chat/subgraphs/nope", nil)
	e.problem(404, "", "GET", "/assistants/nope/subgraphs", nil)
}

func TestParseMermaidNested(t *testing.T) {
	src := "flowchart TD\n  __start__([START])\n  subgraph inner[\"inner\"]\n    inner____start__([START])\n    inner__work[\"work (deferred)\"]\n    inner____end__([END])\n    inner____start__ --> inner__work\n    inner__work --> inner____end__\n  end\n  after[\"after\"]\n  odd_2d__2d__3e_x[\"odd-->x\"]\n  __end__([END])\n  __start__ --> inner\n  inner -->|\"go / stay\"| after\n  after -.->|goto| __end__\n  inner & after -->|join| __end__\n"
	flat := parseMermaid(src, 0)
	var got []string
	for _, n := range flat.nodes {
		got = append(got, n.ID)
	}
	if strings.Join(got, ",") != "__start__,inner,after,odd-->x,__end__" || len(flat.subs) != 1 {
		t.Fatalf("flat nodes %v subs %v", got, flat.subs)
	}
	var edges []string
	for _, ed := range flat.edges {
		edges = append(edges, ed.Source+">"+ed.Target+"|"+ed.Data)
		if ed.Data == "goto" && !ed.Conditional {
			t.Fatalf("a goto edge is conditional: %+v", ed)
		}
	}
	if strings.Join(edges, ",") != "__start__>inner|,inner>after|go / stay,after>__end__|goto,inner>__end__|,after>__end__|" {
		t.Fatalf("edges %v", edges)
	}
	deep := parseMermaid(src, -1)
	got = got[:0]
	for _, n := range deep.nodes {
		got = append(got, n.ID)
	}
	if strings.Join(got, ",") != "__start__,inner,inner:__start__,inner:work,inner:__end__,after,odd-->x,__end__" || len(deep.edges) != 7 {
		t.Fatalf("xray nodes %v, %d edges", got, len(deep.edges))
	}
}
