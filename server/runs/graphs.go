package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/tool"
)

// Constructor builds an assistant's graph from its configuration. It is
// called once per assistant version (the result is cached), so two
// assistants of one graph can behave differently. Go loads no code at run
// time: graphs are registered constructors, from `trellis serve` for the
// bundled apps or from a user's own main.
type Constructor func(ctx context.Context, a Assistant) (*graph.Graph, error)

// Assistant is what a Constructor is given: the assistant's identity and
// the configuration it was created with.
type Assistant struct {
	Tenant  string
	ID      string
	GraphID string
	Version int
	// Config is the assistant's config object (LangGraph's
	// {"configurable": {...}, ...}), {} when empty.
	Config json.RawMessage
	// Context is the assistant's default run context, {} when empty.
	Context json.RawMessage
}

// Configurable decodes the "configurable" object of the assistant's config
// into v (a pointer), leaving v unchanged when there is none.
func (a Assistant) Configurable(v any) error {
	var cfg struct {
		Configurable json.RawMessage `json:"configurable"`
	}
	if len(a.Config) == 0 {
		return nil
	}
	if err := json.Unmarshal(a.Config, &cfg); err != nil {
		return fmt.Errorf("assistant %s: config: %w", a.ID, err)
	}
	if len(cfg.Configurable) == 0 || string(cfg.Configurable) == "null" {
		return nil
	}
	if err := json.Unmarshal(cfg.Configurable, v); err != nil {
		return fmt.Errorf("assistant %s: config.configurable: %w", a.ID, err)
	}
	return nil
}

// GraphSpec describes a registered graph.
type GraphSpec struct {
	// New builds the graph for an assistant.
	New Constructor
	// Description is shown with the graph's default assistant.
	Description string
	// Metadata is added to the metadata of the graph's default assistant
	// when the server creates it (an app's start declaration: "examples"
	// and "input"; see apps.Start). Keys the server sets itself win.
	Metadata map[string]any
	// Context is an example value of the graph's run context type (a
	// struct or a pointer to one), for /schemas; nil when the graph reads
	// none.
	Context any
	// ClientTools says the graph accepts client (frontend) tools per run
	// (Kwargs.ClientTools): its agent reads tool.ClientTools and stops on
	// a call of one (agent/react does). A run with client tools on a
	// graph without it is refused, naming the assistant and the graph.
	ClientTools bool
}

// ErrUnknownGraph is wrapped when an assistant names a graph nobody
// registered.
var ErrUnknownGraph = errors.New("runs: no graph registered with this ID")

// Registry holds the registered graphs and caches the graphs built for
// assistant versions. It is safe for concurrent use.
type Registry struct {
	mu     sync.Mutex
	specs  map[string]GraphSpec
	built  map[builtKey]*graph.Graph
	order  []builtKey // for eviction, oldest first
	maxLen int
}

type builtKey struct {
	tenant, assistant string
	version           int
}

// NewRegistry returns an empty registry that keeps at most maxBuilt
// compiled graphs (0: 1024), dropping the oldest built first.
func NewRegistry(maxBuilt int) *Registry {
	if maxBuilt <= 0 {
		maxBuilt = 1024
	}
	return &Registry{specs: map[string]GraphSpec{}, built: map[builtKey]*graph.Graph{}, maxLen: maxBuilt}
}

// Register adds a graph under id. Registering an ID twice, an empty ID or a
// nil constructor is an error.
func (r *Registry) Register(id string, spec GraphSpec) error {
	if strings.TrimSpace(id) == "" {
		return errors.New("runs: a graph needs a non-empty ID")
	}
	if spec.New == nil {
		return fmt.Errorf("runs: graph %q has a nil constructor", id)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.specs[id]; ok {
		return fmt.Errorf("runs: graph %q is registered twice", id)
	}
	r.specs[id] = spec
	return nil
}

// IDs lists the registered graph IDs, sorted.
func (r *Registry) IDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]string, 0, len(r.specs))
	for id := range r.specs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// Spec returns a registered graph's spec.
func (r *Registry) Spec(id string) (GraphSpec, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.specs[id]
	return s, ok
}

// Graph returns the compiled graph of an assistant version, building it on
// first use.
func (r *Registry) Graph(ctx context.Context, tenant string, a db.Assistant) (*graph.Graph, error) {
	k := builtKey{tenant, a.ID, a.Version}
	r.mu.Lock()
	if g, ok := r.built[k]; ok {
		r.mu.Unlock()
		return g, nil
	}
	spec, ok := r.specs[a.GraphID]
	r.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("assistant %s names graph %q: %w (registered: %s)", a.ID, a.GraphID, ErrUnknownGraph, strings.Join(r.IDs(), ", "))
	}
	g, err := spec.New(ctx, Assistant{Tenant: tenant, ID: a.ID, GraphID: a.GraphID, Version: a.Version, Config: a.Config, Context: a.Context})
	if err != nil {
		return nil, fmt.Errorf("build graph %q for assistant %s version %d: %w", a.GraphID, a.ID, a.Version, err)
	}
	if g == nil {
		return nil, fmt.Errorf("build graph %q for assistant %s: the constructor returned no graph", a.GraphID, a.ID)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.built[k]; ok {
		return prev, nil // built concurrently: keep one
	}
	r.built[k] = g
	r.order = append(r.order, k)
	for len(r.order) > r.maxLen {
		delete(r.built, r.order[0])
		r.order = r.order[1:]
	}
	return g, nil
}

// checkClientTools refuses client tools the assistant's graph does not
// accept, and client tools that are not usable.
func (r *Registry) checkClientTools(a db.Assistant, ts []ClientTool) error {
	if len(ts) == 0 {
		return nil
	}
	if spec, ok := r.Spec(a.GraphID); !ok || !spec.ClientTools {
		return &InputError{Pointer: "/client_tools", Detail: fmt.Sprintf(
			"the assistant %s (graph %s) does not accept client tools: it runs its own tools; send the run without tools, or use an assistant of a graph that accepts them", a.ID, a.GraphID)}
	}
	if err := tool.CheckClientTools(clientSpecs(ts)); err != nil {
		return &InputError{Pointer: "/client_tools", Detail: err.Error()}
	}
	return nil
}

// ThreadKey is the checkpoint thread of a tenant's thread. Tenants never
// contain "/" (see ValidTenant), so keys of two tenants never collide,
// whatever their thread IDs.
func ThreadKey(tenant, thread string) string { return tenant + "/" + thread }

// ValidTenant reports whether a tenant name is usable: 1 to 128 bytes of
// letters, digits, '-', '_' and '.'.
func ValidTenant(t string) bool {
	if len(t) == 0 || len(t) > 128 {
		return false
	}
	for _, c := range t {
		ok := c == '-' || c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !ok {
			return false
		}
	}
	return true
}
