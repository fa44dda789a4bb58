package api

import (
	"context"
	"encoding/json"

	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
)

// checkWebhook refuses a run's webhook URL that CheckWebhook refuses
// (loopback and private addresses), as a 422 naming ptr.
func (a *API) checkWebhook(ctx context.Context, ptr, url string) *wire.Problem {
	if url == "" || a.CheckWebhook == nil {
		return nil
	}
	if err := a.CheckWebhook(ctx, url); err != nil {
		return wire.Invalid(wire.FieldError{Pointer: ptr, Detail: err.Error()})
	}
	return nil
}

// WebhookBody is the body of a finished run's webhook, in LangGraph's
// shape: the run object with the thread's final state values (null when
// the thread has none or is gone) and the run's error, if any.
func WebhookBody(ctx context.Context, d db.DB, tenant string, run db.Run) ([]byte, error) {
	b, err := json.Marshal(toWireRun(run, nil))
	if err != nil {
		return nil, err
	}
	var out map[string]json.RawMessage
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	out["values"] = json.RawMessage("null")
	if th, err := d.GetThread(ctx, tenant, run.ThreadID); err == nil && len(th.Values) > 0 {
		out["values"] = th.Values
	} else if err != nil && !isNotFound(err) {
		return nil, err
	}
	if run.Error != "" {
		e, _ := json.Marshal(run.Error)
		out["error"] = e
	}
	return json.Marshal(out)
}
