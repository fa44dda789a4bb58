package api

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/internal/stateschema"
)

// The graph of an assistant is drawn from the compiled graph's Mermaid
// flowchart, the one rendering of its edges the graph package exports:
// every node and edge is there, deterministic, with subgraph nodes nested.

// mermaidGraph is a parsed flowchart.
type mermaidGraph struct {
	nodes []wire.GraphNode
	edges []wire.GraphEdge
	subs  []string // names of subgraph nodes (at any depth shown)
}

// parseMermaid reads graph.Mermaid's output down to depth levels of
// subgraphs (-1: all). Nested nodes are named "parent:child", as
// LangGraph's xray graphs name them.
func parseMermaid(src string, depth int) mermaidGraph {
	var out mermaidGraph
	names := map[string]string{} // mermaid ID → node name
	type frame struct{ id, name string }
	var stack []frame
	level := func() int { return len(stack) }
	for _, line := range strings.Split(src, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "flowchart") {
			continue
		}
		prefix := ""
		if len(stack) > 0 {
			prefix = stack[len(stack)-1].name + ":"
		}
		shown := depth < 0 || level() <= depth
		switch {
		case strings.HasPrefix(t, "subgraph "):
			id, label, _ := strings.Cut(strings.TrimPrefix(t, "subgraph "), "[")
			name := prefix + unlabel("["+label)
			names[id] = name
			if shown {
				out.subs = append(out.subs, name)
				out.nodes = append(out.nodes, wire.GraphNode{ID: name, Name: name, Data: map[string]any{"subgraph": true}})
			}
			stack = append(stack, frame{id: id, name: name})
		case t == "end":
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		case !strings.HasSuffix(t, "]") && !strings.HasSuffix(t, ")") && (strings.Contains(t, "-->") || strings.Contains(t, "-.->")):
			// An edge ends with its target's ID; a node's declaration
			// ends with its label, which may contain arrows.
			if !shown {
				continue
			}
			conditional := strings.Contains(t, "-.->") || strings.Contains(t, "-->|\"")
			arrow := "-->"
			if strings.Contains(t, "-.->") {
				arrow = "-.->"
			}
			src, rest, _ := strings.Cut(t, arrow)
			label := ""
			if strings.HasPrefix(rest, "|") {
				end := strings.Index(rest[1:], "|")
				if end >= 0 {
					label = strings.Trim(rest[1:end+1], `"`)
					rest = rest[end+2:]
				}
			}
			dst := names[strings.TrimSpace(rest)]
			for _, s := range strings.Split(src, "&") {
				e := wire.GraphEdge{Source: names[strings.TrimSpace(s)], Target: dst, Conditional: conditional}
				if label != "" && label != "join" {
					e.Data = strings.ReplaceAll(label, "#quot;", `"`)
				}
				out.edges = append(out.edges, e)
			}
		default:
			i := strings.IndexAny(t, "([")
			if i <= 0 {
				continue
			}
			id, label := t[:i], t[i:]
			var name string
			switch label {
			case "([START])":
				name = prefix + graph.START
			case "([END])":
				name = prefix + graph.END
			default:
				name = prefix + unlabel(label)
			}
			names[id] = name
			if shown {
				out.nodes = append(out.nodes, wire.GraphNode{ID: name, Name: name})
			}
		}
	}
	return out
}

// unlabel turns `["name (deferred)"]` back into the node's name.
func unlabel(label string) string {
	s := strings.TrimSuffix(strings.TrimPrefix(label, `["`), `"]`)
	s = strings.TrimSuffix(strings.TrimSuffix(s, " (deferred)"), " (per Send)")
	return strings.ReplaceAll(s, "#quot;", `"`)
}

func (a *API) getAssistantGraph(w http.ResponseWriter, r *http.Request) {
	as, ok := a.loadAssistant(w, r)
	if !ok {
		return
	}
	q, ok := decodeQuery[wire.AssistantGraphQuery](w, r)
	if !ok {
		return
	}
	g, err := a.Graphs.Graph(r.Context(), a.tenant(r), as)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if r.URL.Query().Get("format") == "mermaid" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(g.Mermaid()))
		return
	}
	m := parseMermaid(g.Mermaid(), q.Xray.Depth)
	out := wire.AssistantGraph{Nodes: m.nodes, Edges: m.edges}
	if out.Nodes == nil {
		out.Nodes = []wire.GraphNode{}
	}
	if out.Edges == nil {
		out.Edges = []wire.GraphEdge{}
	}
	wire.WriteJSON(w, r, http.StatusOK, out)
}

// stateSchema is the JSON Schema of the graph's state object: one
// property per key, its value type's schema (message lists as LangChain
// message objects).
func stateSchema(g *graph.Graph) (json.RawMessage, error) {
	s := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}, Title: g.Name()}
	for _, k := range g.Keys() {
		ks := stateschema.Key(k.Type)
		if ks.Description == "" {
			ks.Description = "reducer: " + k.Reducer
		}
		s.Properties[k.Name] = ks
		s.PropertyOrder = append(s.PropertyOrder, k.Name)
	}
	return json.Marshal(s)
}

func (a *API) getAssistantSchemas(w http.ResponseWriter, r *http.Request) {
	as, ok := a.loadAssistant(w, r)
	if !ok {
		return
	}
	g, err := a.Graphs.Graph(r.Context(), a.tenant(r), as)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	st, err := stateSchema(g)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := wire.GraphSchema{GraphID: as.GraphID, InputSchema: st, OutputSchema: st, StateSchema: st}
	cfg, _ := json.Marshal(&jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{
		"configurable": {Type: "object"}, "tags": {Type: "array", Items: &jsonschema.Schema{Type: "string"}},
		"recursion_limit": {Type: "integer", Minimum: jsonschema.Ptr(1.0)},
	}})
	out.ConfigSchema = cfg
	if spec, ok := a.Graphs.Spec(as.GraphID); ok && spec.Context != nil {
		t := reflect.TypeOf(spec.Context)
		if cs, err := jsonschema.ForType(t, stateschema.Options()); err == nil {
			out.ContextSchema, _ = json.Marshal(cs)
		}
	}
	wire.WriteJSON(w, r, http.StatusOK, out)
}

// getAssistantSubgraphs lists the graph's subgraph nodes (under
// {namespace} when given) by namespace. The graph package exports no
// handle on a subgraph's own keys, so each entry carries its graph ID
// only.
func (a *API) getAssistantSubgraphs(w http.ResponseWriter, r *http.Request) {
	as, ok := a.loadAssistant(w, r)
	if !ok {
		return
	}
	q, ok := decodeQuery[wire.AssistantSubgraphsQuery](w, r)
	if !ok {
		return
	}
	ns := r.PathValue("namespace")
	g, err := a.Graphs.Graph(r.Context(), a.tenant(r), as)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	depth := 0
	if q.Recurse {
		depth = -1
	}
	if ns != "" && depth >= 0 {
		depth = strings.Count(ns, ":") + 1
	}
	m := parseMermaid(g.Mermaid(), depth)
	out := wire.Subgraphs{}
	for _, s := range m.subs {
		if ns != "" && s != ns && !strings.HasPrefix(s, ns+":") {
			continue
		}
		if !q.Recurse && ns == "" && strings.Contains(s, ":") {
			continue
		}
		out[s] = wire.GraphSchema{GraphID: as.GraphID}
	}
	if ns != "" && len(out) == 0 && !slices.Contains(m.subs, ns) {
		wire.NotFound("subgraph namespace", ns).Write(w, r)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, out)
}
