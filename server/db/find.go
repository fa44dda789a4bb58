package db

import (
	"context"
	"errors"
	"fmt"
)

// FindAssistant resolves what a wire calls an assistant — an assistant ID,
// a graph ID (its oldest assistant), or an assistant's name (the oldest of
// that name) — tried in that order, within tenant. Every wire that names
// assistants by path or model name uses it, so one name means the same
// assistant on each. An ID that is not valid is looked up as a graph ID
// and a name only. It wraps ErrNotFound when nothing matches.
func FindAssistant(ctx context.Context, d Assistants, tenant, ref string) (Assistant, error) {
	if IDProblem(ref) == "" {
		a, err := d.GetAssistant(ctx, tenant, ref)
		if err == nil || !errors.Is(err, ErrNotFound) {
			return a, err
		}
	}
	for _, q := range []AssistantQuery{{GraphID: ref}, {Name: ref}} {
		q.Query = Query{Limit: 100, SortBy: "created_at", SortOrder: "asc"}
		found, err := d.SearchAssistants(ctx, tenant, q)
		if err != nil {
			return Assistant{}, err
		}
		for _, f := range found {
			if q.GraphID != "" || f.Name == ref {
				return f, nil
			}
		}
	}
	return Assistant{}, fmt.Errorf("assistant %q: %w", ref, ErrNotFound)
}
