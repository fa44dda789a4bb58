package a2aapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
)

// Input and output modes: text, and JSON data parts (answers to forms
// and plan reviews in, questions' payloads and schemas out).
var modes = []string{"text/plain", "application/json"}

// Security scheme names on the cards when API keys are on.
const (
	schemeBearer = "bearer"
	schemeAPIKey = "apiKey"
)

// CardQuery is the query of GET /.well-known/agent-card.json.
type CardQuery struct {
	// AssistantID names the assistant (ID, graph ID or name); the
	// tenant's first assistant when empty.
	AssistantID string `json:"assistant_id,omitempty"`
}

// card serves GET /.well-known/agent-card.json: the card of the assistant
// ?assistant_id= names (an ID, graph ID or name), or of the tenant's
// first assistant.
func (h *Handler) card(w http.ResponseWriter, r *http.Request) {
	ctx, tenant := r.Context(), h.tenant(r)
	name := r.URL.Query().Get("assistant_id")
	var a db.Assistant
	var err error
	if name != "" {
		a, err = h.assistant(ctx, tenant, name)
	} else {
		var found []db.Assistant
		found, err = h.DB.SearchAssistants(ctx, tenant, db.AssistantQuery{Query: db.Query{Limit: 1, SortBy: "created_at", SortOrder: "asc"}})
		if err == nil && len(found) == 0 {
			wire.NewProblem(http.StatusNotFound, "there is no assistant to describe: create one, or name it with ?assistant_id=").Write(w, r)
			return
		}
		if err == nil {
			a = found[0]
		}
	}
	if err != nil {
		if errors.Is(err, db.ErrNotFound) {
			wire.NotFound("assistant", name).Write(w, r)
			return
		}
		h.fail(w, r, err)
		return
	}
	h.writeCard(w, r, a)
}

// assistantCard serves GET /a2a/{assistant}/.well-known/agent-card.json,
// where a client given the endpoint's URL looks for its card.
func (h *Handler) assistantCard(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("assistant")
	a, err := h.assistant(r.Context(), h.tenant(r), name)
	if err != nil {
		if errors.Is(err, db.ErrNotFound) {
			wire.NotFound("assistant", name).Write(w, r)
			return
		}
		h.fail(w, r, err)
		return
	}
	h.writeCard(w, r, a)
}

func (h *Handler) writeCard(w http.ResponseWriter, r *http.Request, a db.Assistant) {
	c := h.Card(r.Context(), baseURL(r), a)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(c)
}

// Card is assistant a's agent card, its endpoint under base (the
// server's absolute URL, without a trailing slash): one JSON-RPC
// interface per protocol version served, at the same URL.
func (h *Handler) Card(ctx context.Context, base string, a db.Assistant) *a2a.AgentCard {
	endpoint := base + "/a2a/" + url.PathEscape(a.ID)
	name := a.Name
	if name == "" {
		name = a.ID
	}
	desc := a.Description
	if h.Graphs != nil {
		if spec, ok := h.Graphs.Spec(a.GraphID); ok && desc == "" {
			desc = spec.Description
		}
	}
	if desc == "" {
		desc = "The " + name + " assistant (graph " + a.GraphID + ") of a Trellis server."
	}
	version := h.Version
	if version == "" {
		version = "dev"
	}
	c := &a2a.AgentCard{
		Name:        name,
		Description: desc,
		Version:     version,
		SupportedInterfaces: []*a2a.AgentInterface{
			{URL: endpoint, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version},
			{URL: endpoint, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version},
			restInterface(endpoint), // last: clients that take the first they speak keep JSON-RPC
		},
		Capabilities:       a2a.AgentCapabilities{Streaming: true, PushNotifications: true},
		DefaultInputModes:  modes,
		DefaultOutputModes: modes,
		Skills: []a2a.AgentSkill{{
			ID: a.GraphID, Name: name, Description: desc,
			Tags: tagsOf(a), InputModes: modes, OutputModes: modes,
		}},
		Provider: &a2a.AgentProvider{Org: "Trellis", URL: base},
	}
	if h.AuthOn != nil && h.AuthOn(ctx) {
		c.SecuritySchemes = a2a.NamedSecuritySchemes{
			schemeBearer: a2a.HTTPAuthSecurityScheme{Scheme: "Bearer", Description: "a Trellis API key (trellis keys create --tenant NAME)"},
			schemeAPIKey: a2a.APIKeySecurityScheme{Location: a2a.APIKeySecuritySchemeLocationHeader, Name: "X-Api-Key", Description: "a Trellis API key, in a header"},
		}
		c.SecurityRequirements = a2a.SecurityRequirementsOptions{
			{schemeBearer: a2a.SecuritySchemeScopes{}},
			{schemeAPIKey: a2a.SecuritySchemeScopes{}},
		}
	}
	return c
}

// tagsOf are a skill's tags: the graph, and the words of the assistant's
// name.
func tagsOf(a db.Assistant) []string {
	tags := []string{a.GraphID}
	for _, w := range strings.FieldsFunc(strings.ToLower(a.Name), func(r rune) bool { return r == ' ' || r == '-' || r == '_' }) {
		if w != a.GraphID && len(tags) < 8 {
			tags = append(tags, w)
		}
	}
	return tags
}

// hostRE is what a Host (or X-Forwarded-Host) may be: a name or address
// with an optional port, nothing that changes the URL's meaning.
var hostRE = regexp.MustCompile(`^[A-Za-z0-9.\-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$`)

// baseURL is the server's absolute URL as the client reached it: the
// scheme and host of the request, or of the proxy in front
// (X-Forwarded-Proto, X-Forwarded-Host) when those are well-formed.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	if p := strings.ToLower(strings.TrimSpace(firstValue(r.Header.Get("X-Forwarded-Proto")))); p == "http" || p == "https" {
		scheme = p
	}
	host := r.Host
	if fh := strings.TrimSpace(firstValue(r.Header.Get("X-Forwarded-Host"))); hostRE.MatchString(fh) {
		host = fh
	}
	if !hostRE.MatchString(host) {
		host = "localhost"
	}
	return scheme + "://" + host
}

func firstValue(s string) string {
	v, _, _ := strings.Cut(s, ",")
	return v
}
