package runs

import (
	"context"
	"errors"
	"testing"

	"github.com/trellis-agents/trellis/server/db"
)

// laggingDB answers Create's first look for live runs (its two lists) as
// if another request's run had not been stored yet: the interleaving of
// two concurrent creates, made deterministic.
type laggingDB struct {
	db.DB
	hidden int // lists still to answer empty
}

func (l *laggingDB) ListRuns(ctx context.Context, tenant, thread string, q db.RunQuery) ([]db.Run, error) {
	if l.hidden > 0 {
		l.hidden--
		return []db.Run{}, nil
	}
	return l.DB.ListRuns(ctx, tenant, thread, q)
}

// A reject create that looked before a concurrent create's run was stored
// still ends with the documented ErrThreadBusy (409) and leaves no run of
// its own: the thread holds the older run only, never two runs that both
// passed the reject check.
func TestRejectRacingAnotherCreateIsRefused(t *testing.T) {
	e := newEnv(t)
	first := e.mustCreate("acme", "t", "chat-a", in(`{"log":["one"]}`), "")
	ldb := &laggingDB{DB: e.db, hidden: 2}
	svc, err := New(Config{DB: ldb, Saver: e.saver, Graphs: e.svc.cfg.Graphs})
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.Create(context.Background(), nil, CreateRequest{Tenant: "acme", ThreadID: "t", AssistantID: "chat-a", Kwargs: in(`{"log":["two"]}`), MultitaskStrategy: Reject})
	if !errors.Is(err, ErrThreadBusy) {
		t.Errorf("reject beside a run stored meanwhile: %v; want ErrThreadBusy", err)
	}
	rs, err := e.db.ListRuns(context.Background(), "acme", "t", db.RunQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].ID != first.ID {
		t.Errorf("the thread has %d runs; want only the first", len(rs))
	}
}
