package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/config"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/internal/agentgraph"
	"github.com/trellis-agents/trellis/server/runs"
)

// Models chooses the model of each assistant of the bundled apps. An
// assistant names its model in config.configurable.model — a name under
// Named, or a spec the operator wrote (Default, Operator) or allows
// (AllowRequest); one naming none gets Default; with no Default either it
// gets its app's scripted model. Models are the operator's: any other
// spec is refused (see docs/security.md), when an assistant is created or
// updated over the API and again when its graph is built.
type Models struct {
	// Resolve turns a model spec the operator chose into a model. `trellis
	// serve` passes the CLI's resolver (provider/resolve); this
	// package never imports a provider. nil: only the scripted models are
	// available.
	Resolve func(spec string) (llm.Model, error)
	// ResolveRequest turns a spec admitted only by AllowRequest (so chosen
	// by a request) into a model. It must dial through the guarded dialer
	// (internal/netguard) and attach no credential but the provider's own
	// (sent only to the provider's own server). nil: such specs are
	// refused.
	ResolveRequest func(spec string) (llm.Model, error)
	// Default is the spec of assistants that name no model ("": scripted).
	Default string
	// Named maps model names to specs (trellis.yaml's models).
	Named map[string]string
	// Operator are further specs the operator wrote (trellis.yaml's
	// assistants and apps); naming one is allowed.
	Operator []string
	// AllowRequest are patterns (config.MatchPattern: "*" matches any
	// run of characters) of the specs a request may name besides the
	// above.
	AllowRequest []string
	// Timeout bounds one model call (2 minutes when 0); failed calls are
	// retried with llm.Retry's default policy.
	Timeout time.Duration
	// AppSettings are each app's settings as JSON, by app name
	// (trellis.yaml's apps section), handed to the app as
	// apps.Env.Settings. An assistant's config.configurable.settings,
	// when set, replaces its app's.
	AppSettings map[string]json.RawMessage
}

// Scripted reports whether an assistant naming no model answers from the
// scripted demo models.
func (m Models) Scripted() bool { return m.Default == "" }

// spec returns the spec an assistant's model field selects.
func (m Models) spec(model string) string {
	if model == "" {
		return m.Default
	}
	if s, ok := m.Named[model]; ok {
		return s
	}
	return model
}

// model returns the model of an assistant of app e.
func (m Models) model(e apps.Entry, model string) (llm.Model, error) {
	mod, err := m.resolve(model)
	if mod == nil && err == nil {
		return e.Script(), nil
	}
	return mod, err
}

// resolve returns the model an assistant's model field selects, wrapped
// with the timeout and retries, or nil, nil when it selects none (no
// default). A model field the operator did not declare or allow is
// refused (a *ModelRefusedError).
func (m Models) resolve(model string) (llm.Model, error) {
	request, err := m.Check(model)
	if err != nil {
		return nil, err
	}
	spec := m.spec(model)
	if spec == "" {
		return nil, nil
	}
	resolver := m.Resolve
	if request {
		resolver = m.ResolveRequest
	}
	if resolver == nil {
		return nil, fmt.Errorf("model %q cannot be resolved: this server was built without a model resolver", spec)
	}
	mod, err := resolver(spec)
	if err != nil {
		return nil, fmt.Errorf("model %q: %w", spec, err)
	}
	timeout := m.Timeout
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	out := llm.Retry(llm.WithTimeout(mod, timeout), llm.RetryPolicy{})
	if request {
		out = opaque{out}
	}
	return out, nil
}

// named resolves a model an app's options name per phase (a name under
// Named, or a spec), wrapped like an assistant's model.
func (m Models) named(name string) (llm.Model, error) {
	if name == "" {
		return nil, fmt.Errorf("an empty model name; name one under models in trellis.yaml, or a spec such as openai:gpt-4o-mini")
	}
	return m.resolve(name)
}

// Titler returns a titler that asks the default model for a thread's
// title, or nil when the models are scripted (threads are then titled
// with their first message).
func (m Models) Titler() runs.Titler {
	if m.Scripted() || m.Resolve == nil {
		return nil
	}
	return func(ctx context.Context, user, answer string) (string, error) {
		mod, err := m.model(apps.Entry{}, "")
		if err != nil {
			return "", err
		}
		conv := "User: " + user
		if answer != "" {
			conv += "\nAssistant: " + answer
		}
		resp, err := mod.Generate(ctx, &llm.Request{
			Messages: []llm.Message{
				llm.System("Write a title of at most six words for the conversation below, in its language. Answer with the title only."),
				llm.User(conv),
			},
			MaxTokens: 32,
		})
		if err != nil {
			return "", err
		}
		return resp.Message.Text(), nil
	}
}

// RegisterApps registers each app under its name. An assistant's graph is
// the app built over the assistant's model (see Models), with its own
// tables in the server's SQLite file (DataDir/apps.db on PostgreSQL) and
// its files under DataDir; what the app acquires is released when the
// server stops.
func (s *Server) RegisterApps(entries []apps.Entry, m Models) error {
	s.setModels(&m)
	var errs []error
	for _, e := range entries {
		errs = append(errs, s.Register(e.Name, runs.GraphSpec{
			Description: e.Summary,
			Metadata:    e.Start.Metadata(),
			New:         s.appConstructor(e, m),
		}))
	}
	return errors.Join(errs...)
}

func (s *Server) appConstructor(e apps.Entry, m Models) runs.Constructor {
	return func(ctx context.Context, a runs.Assistant) (*graph.Graph, error) {
		var conf struct {
			Model      string              `json:"model"`
			Settings   json.RawMessage     `json:"settings"`
			Middleware []config.Middleware `json:"middleware"`
		}
		if err := a.Configurable(&conf); err != nil {
			return nil, err
		}
		var raw json.RawMessage // the app reads its own options from it
		if err := a.Configurable(&raw); err != nil {
			return nil, err
		}
		model, err := m.model(e, conf.Model)
		if err != nil {
			return nil, fmt.Errorf("assistant %s: config.configurable.model: %w", a.ID, err)
		}
		// The assistant's middleware wraps the app's agents as it wraps
		// the agent graph's.
		mws, err := agentgraph.Middleware(conf.Middleware, model, m.named)
		if err != nil {
			return nil, &runs.InputError{Pointer: "/assistant_id", Detail: fmt.Sprintf("assistant %s: config.configurable.%v", a.ID, err)}
		}
		file := s.SQLiteFile()
		if file == "" {
			file = filepath.Join(s.DataDir(), "apps.db")
		}
		// The app outlives the request that first needed it.
		settings := m.AppSettings[e.Name]
		if len(conf.Settings) > 0 && string(conf.Settings) != "null" {
			settings = conf.Settings
		}
		env := apps.Env{Model: model, Database: file, DataDir: s.DataDir(), Scope: a.ID, Settings: settings,
			Configurable: raw, Resolve: m.named, Assistant: s.assistantGraph(a.Tenant, a.ID), Middleware: mws}
		app, err := e.Open(context.WithoutCancel(ctx), env)
		if err != nil {
			return nil, fmt.Errorf("build app %s for assistant %s: %w", e.Name, a.ID, err)
		}
		s.OnClose(app.Close)
		if app.DeleteScope != nil {
			s.mu.Lock()
			if s.scopeDeleters == nil {
				s.scopeDeleters = map[[2]string]func(context.Context, string) error{}
			}
			s.scopeDeleters[[2]string{a.Tenant, a.ID}] = app.DeleteScope
			s.mu.Unlock()
		}
		return app.Graph.WithOptions(app.Options...), nil
	}
}

type buildingKey struct{}

// assistantGraph returns apps.Env.Assistant for assistant self of tenant:
// another assistant's graph, built (or reused) through the registry. The
// assistants being built are carried in ctx, so a cycle (a router offering
// itself, or two offering each other) is refused instead of recursing.
func (s *Server) assistantGraph(tenant, self string) func(ctx context.Context, id string) (*graph.Graph, error) {
	return func(ctx context.Context, id string) (*graph.Graph, error) {
		chain, _ := ctx.Value(buildingKey{}).([]string)
		chain = append(slices.Clone(chain), self)
		if slices.Contains(chain, id) {
			return nil, fmt.Errorf("assistant %s is already being built (%s → %s): assistants cannot use each other in a cycle", id, strings.Join(chain, " → "), id)
		}
		a, err := s.st.db.GetAssistant(ctx, tenant, id)
		if err != nil {
			return nil, fmt.Errorf("sub-agent assistant %s: %w", id, err)
		}
		return s.graphs.Graph(context.WithValue(ctx, buildingKey{}, chain), tenant, a)
	}
}

// threadAssistants returns the assistants that ran on a thread (from its
// runs), each once.
func (s *Server) threadAssistants(ctx context.Context, tenant, thread string) ([]string, error) {
	var ids []string
	for off := 0; ; off += 500 {
		rs, err := s.st.db.ListRuns(ctx, tenant, thread, db.RunQuery{Limit: 500, Offset: off})
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if !slices.Contains(ids, r.AssistantID) {
				ids = append(ids, r.AssistantID)
			}
		}
		if len(rs) < 500 {
			return ids, nil
		}
	}
}

// deleteAppData is api.API.ThreadDeleted: it deletes what the apps of the
// assistants that ran on thread t keep for it (see deleteScopes).
func (s *Server) deleteAppData(ctx context.Context, tenant string, t db.Thread) error {
	ids, err := s.threadAssistants(ctx, tenant, t.ID)
	if err != nil {
		return err
	}
	return s.deleteScopes(ctx, tenant, t.ID, ids)
}

// deleteScopes deletes what the apps of the given assistants keep for a
// thread (apps.App.DeleteScope over the scope runs give it,
// runs.ThreadKey). An assistant's app is built when this server has not
// built it yet (after a restart), so its data is found. An assistant
// deleted since is no error: its app can no longer be built, and its data
// is left.
func (s *Server) deleteScopes(ctx context.Context, tenant, thread string, assistants []string) error {
	var errs []error
	for _, id := range assistants {
		key := [2]string{tenant, id}
		s.mu.Lock()
		del := s.scopeDeleters[key]
		s.mu.Unlock()
		if del == nil {
			a, err := s.st.db.GetAssistant(ctx, tenant, id)
			if errors.Is(err, db.ErrNotFound) {
				continue
			}
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if _, err := s.graphs.Graph(ctx, tenant, a); err != nil {
				errs = append(errs, fmt.Errorf("build assistant %s to delete its data: %w", id, err))
				continue
			}
			s.mu.Lock()
			del = s.scopeDeleters[key]
			s.mu.Unlock()
			if del == nil {
				continue // its graph keeps no data of its own
			}
		}
		if err := del(ctx, runs.ThreadKey(tenant, thread)); err != nil {
			errs = append(errs, fmt.Errorf("assistant %s: %w", id, err))
		}
	}
	return errors.Join(errs...)
}
