package runs

import (
	"context"
	"errors"
	"fmt"

	"github.com/trellis-agents/trellis/server/db"
)

// A run may name an assistant version (a Trellis extension of the run
// API): the worker then builds that version's graph with its config and
// context, whatever version is the latest when it runs. A run that names
// none continues the version of the thread's latest run, when that run is
// of the same assistant and named one, so a thread never changes graph in
// the middle of a conversation (an answer to an interrupt resumes the
// graph that asked); otherwise it takes the latest version.

// AssistantVersion returns version v of assistant id, from its versions
// (a version's content never changes once made). It wraps db.ErrNotFound
// when the assistant or the version does not exist.
func AssistantVersion(ctx context.Context, d db.Assistants, tenant, id string, v int) (db.Assistant, error) {
	if g, ok := d.(db.AssistantVersionGetter); ok {
		a, err := g.GetAssistantVersion(ctx, tenant, id, v)
		if err != nil {
			return db.Assistant{}, fmt.Errorf("assistant %s version %d: %w", id, v, err)
		}
		return a, nil
	}
	const page = 100
	for off := 0; ; off += page {
		vs, err := d.AssistantVersions(ctx, tenant, id, db.Query{Limit: page, Offset: off})
		if err != nil {
			return db.Assistant{}, err
		}
		for _, x := range vs {
			if x.Version == v {
				return x, nil
			}
		}
		// Newest first: past v, or past the last page, there is none.
		if len(vs) < page || vs[len(vs)-1].Version < v {
			return db.Assistant{}, fmt.Errorf("assistant %s version %d: %w", id, v, db.ErrNotFound)
		}
	}
}

// runVersion picks the assistant version a new run executes: the one the
// request names, else the one the thread's latest run named when it is of
// the same assistant (existed: the thread was stored before this request),
// else none (0: the latest when it runs). It returns the assistant as of
// that version. A version the assistant does not have is an *InputError.
func (s *Service) runVersion(ctx context.Context, req CreateRequest, latest db.Assistant, existed bool, tr *db.ThreadRuns) (db.Assistant, int, error) {
	v, named := req.AssistantVersion, req.AssistantVersion > 0
	if req.AssistantVersion < 0 {
		return db.Assistant{}, 0, inputErr("/assistant_version", "must be 1 or more (or left out), not %d", req.AssistantVersion)
	}
	switch {
	case named || !existed:
	case tr != nil: // read with the thread
		if tr.LatestAssistant == latest.ID {
			v = tr.LatestVersion
		}
	default:
		rs, err := s.cfg.DB.ListRuns(ctx, req.Tenant, req.ThreadID, db.RunQuery{Limit: 1})
		if err != nil {
			return db.Assistant{}, 0, err
		}
		if len(rs) > 0 && rs[0].AssistantID == latest.ID {
			v = rs[0].AssistantVersion
		}
	}
	if v == 0 {
		return latest, 0, nil
	}
	a, err := AssistantVersion(ctx, s.cfg.DB, req.Tenant, latest.ID, v)
	if errors.Is(err, db.ErrNotFound) {
		if named {
			return db.Assistant{}, 0, inputErr("/assistant_version", "assistant %q has no version %d; list its versions with POST /assistants/%s/versions, or leave assistant_version out to run the latest", latest.ID, v, latest.ID)
		}
		return db.Assistant{}, 0, inputErr("/assistant_version", "the thread's latest run ran version %d of assistant %q, which it no longer has; name the version to run in assistant_version", v, latest.ID)
	}
	if err != nil {
		return db.Assistant{}, 0, err
	}
	return a, v, nil
}

// runAssistant returns the assistant as of the version run executes: the
// one it names, else the latest (pre, when the worker read it with the
// run).
func (s *Service) runAssistant(ctx context.Context, tenant string, run db.Run, pre *db.Assistant) (db.Assistant, error) {
	if pre != nil && run.AssistantVersion <= 0 {
		return *pre, nil
	}
	if run.AssistantVersion > 0 {
		return AssistantVersion(ctx, s.cfg.DB, tenant, run.AssistantID, run.AssistantVersion)
	}
	return s.cfg.DB.GetAssistant(ctx, tenant, run.AssistantID)
}
