package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/config"
	"github.com/trellis-agents/trellis/server/db"
)

// DefaultAssistantID is the ID of a graph's default assistant: a
// version-5 UUID of the graph ID, the same on every start. Runs may also
// name the graph ID itself (its latest assistant).
func DefaultAssistantID(graphID string) string { return config.NameUUID(graphID) }

// ensureAssistants creates the default and configured assistants in the
// default tenant and in every tenant that has an API key (tenants whose
// first key is created later get them on their first request).
func (s *Server) ensureAssistants(ctx context.Context) error {
	if len(s.graphs.IDs()) == 0 {
		return errors.New("server: no graph is registered; call Register before Run")
	}
	tenants, err := s.tenants(ctx, true)
	if err != nil {
		return err
	}
	for _, t := range tenants {
		if err := s.ensureAssistantsOf(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// ensureAssistantsOf creates each registered graph's default assistant and
// the configured ones in tenant when absent, and gives a configured
// assistant a new version when its declaration changed.
func (s *Server) ensureAssistantsOf(ctx context.Context, tenant string) error {
	ids := s.graphs.IDs()
	for _, id := range ids {
		spec, _ := s.graphs.Spec(id)
		meta := db.Metadata{}
		maps.Copy(meta, spec.Metadata)
		meta["created_by"] = "system"
		a := db.Assistant{
			ID: DefaultAssistantID(id), GraphID: id, Name: id, Description: spec.Description,
			Config: json.RawMessage(`{}`), Context: json.RawMessage(`{}`), Metadata: meta,
		}
		got, err := s.st.db.CreateAssistant(ctx, tenant, a, db.IfExistsDoNothing)
		if err != nil {
			return fmt.Errorf("server: create the default assistant of graph %q: %w", id, err)
		}
		if err := s.refreshDefault(ctx, tenant, got, a); err != nil {
			return err
		}
	}
	for i, a := range s.cfg.Assistants {
		if _, ok := s.graphs.Spec(a.GraphID); !ok {
			return fmt.Errorf("server: assistants[%d] (%s) names graph %q, which is not registered; the graphs are %s", i, a.Name, a.GraphID, strings.Join(ids, ", "))
		}
		if a.ID == "" {
			a.ID = config.NameUUID("assistant:" + a.Name)
		}
		a.Config, a.Context = orEmpty(a.Config), orEmpty(a.Context)
		old, err := s.st.db.GetAssistant(ctx, tenant, a.ID)
		switch {
		case errors.Is(err, db.ErrNotFound):
			if _, err := s.st.db.CreateAssistant(ctx, tenant, a, db.IfExistsRaise); err != nil {
				return fmt.Errorf("server: create assistant %s (%s): %w", a.ID, a.Name, err)
			}
			s.log.Info("assistant created", "id", a.ID, "name", a.Name, "graph", a.GraphID)
			continue
		case err != nil:
			return fmt.Errorf("server: read assistant %s: %w", a.ID, err)
		}
		if sameAssistant(old, a) {
			continue
		}
		if _, err := s.st.db.UpdateAssistant(ctx, tenant, a.ID, db.AssistantPatch{
			GraphID: &a.GraphID, Name: &a.Name, Description: &a.Description,
			Config: a.Config, Context: a.Context, Metadata: a.Metadata,
		}); err != nil {
			return fmt.Errorf("server: update assistant %s (%s): %w", a.ID, a.Name, err)
		}
		s.log.Info("assistant updated to the configured declaration (new version)", "id", a.ID, "name", a.Name)
	}
	return nil
}

// refreshDefault brings a graph's default assistant made by an older
// server (before its app declared examples and an input form, say) up to
// what the graph declares now, without undoing anyone's edit. The rule:
// only the system's own assistant (the graph's default ID, still on its
// graph, metadata created_by "system") is touched, and only where it
// lacks something: a metadata key the graph declares that it does not
// have, and its description when empty. A key or description it has is
// left as it is, whoever set it (an operator's PATCH stays); assistants
// people created are never touched. A change makes a new version, as any
// update does; an assistant up to date is not written.
func (s *Server) refreshDefault(ctx context.Context, tenant string, have, want db.Assistant) error {
	if have.ID == "" {
		var err error
		if have, err = s.st.db.GetAssistant(ctx, tenant, want.ID); err != nil {
			return fmt.Errorf("server: read the default assistant of graph %q: %w", want.GraphID, err)
		}
	}
	if have.GraphID != want.GraphID || have.Metadata["created_by"] != "system" {
		return nil
	}
	var p db.AssistantPatch
	for k, v := range want.Metadata {
		if _, ok := have.Metadata[k]; !ok {
			if p.Metadata == nil {
				p.Metadata = db.Metadata{}
			}
			p.Metadata[k] = v
		}
	}
	if have.Description == "" && want.Description != "" {
		p.Description = &want.Description
	}
	if p.Metadata == nil && p.Description == nil {
		return nil
	}
	if _, err := s.st.db.UpdateAssistant(ctx, tenant, want.ID, p); err != nil {
		return fmt.Errorf("server: refresh the default assistant of graph %q: %w", want.GraphID, err)
	}
	s.log.Info("default assistant given what its graph now declares (new version)", "id", want.ID, "graph", want.GraphID)
	return nil
}

func orEmpty(m json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(m)) == 0 || string(bytes.TrimSpace(m)) == "null" {
		return json.RawMessage(`{}`)
	}
	return m
}

// sameAssistant compares what a declaration sets (JSON by value).
func sameAssistant(old, a db.Assistant) bool {
	if old.GraphID != a.GraphID || old.Name != a.Name || old.Description != a.Description {
		return false
	}
	for _, p := range [][2]json.RawMessage{{old.Config, a.Config}, {old.Context, a.Context}} {
		if !jsonEqual(p[0], p[1]) {
			return false
		}
	}
	if a.Metadata == nil {
		return true // the declaration leaves metadata alone
	}
	ob, _ := json.Marshal(old.Metadata)
	nb, _ := json.Marshal(a.Metadata)
	return jsonEqual(ob, nb)
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(orEmpty(a), &x) != nil || json.Unmarshal(orEmpty(b), &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// tenants lists the default tenant and the tenants of the API keys (only
// those with an active key when activeOnly).
func (s *Server) tenants(ctx context.Context, activeOnly bool) ([]string, error) {
	out := []string{api.DefaultTenant}
	keys, err := s.st.db.ListKeys(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("server: list the API keys' tenants: %w", err)
	}
	for _, k := range keys {
		if (k.Active() || !activeOnly) && !slices.Contains(out, k.Tenant) {
			out = append(out, k.Tenant)
		}
	}
	return out, nil
}
