package remotegraph

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"strings"
)

// MetaRunKey is the metadata key a call tags each remote run it creates
// with: a key derived from the local thread, the subgraph namespace, the
// task and the round (Call), or from the task, the thread and the request
// (Start). Before it creates a run, a call looks for a run of the remote
// thread with its key and joins it instead, so a process that died after
// the remote created the run but before the run's ID was saved does not
// make the next process create a second one.
const MetaRunKey = "trellis_run_key"

// runListPage is how many of the remote thread's newest runs are searched
// for a run's key before one is created.
const runListPage = 20

// runKey derives a run key from parts; it names no part in clear.
func runKey(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// createRun starts a run on thread with body, tagged with key in its
// metadata, unless the thread's newest runs hold one with that key: then
// it returns that run's ID. An empty key creates without looking. A
// server that cannot list a thread's runs (404, 405, 501) gets the run
// created without the look.
func (a *Agent) createRun(ctx context.Context, thread string, body map[string]any, key string) (string, error) {
	const op = "start a run"
	if key != "" {
		id, err := a.findRun(ctx, thread, key)
		if err != nil {
			return "", err
		}
		if id != "" {
			return id, nil
		}
		md := map[string]any{MetaRunKey: key}
		if m, ok := body["metadata"].(map[string]any); ok {
			for k, v := range m {
				if k != MetaRunKey {
					md[k] = v
				}
			}
		}
		body["metadata"] = md
	}
	var r struct {
		RunID string `json:"run_id"`
	}
	if err := a.do(ctx, "POST", "/threads/"+thread+"/runs", body, &r, op); err != nil {
		return "", err
	}
	if r.RunID == "" {
		return "", &Error{Agent: a.cfg.Name, Op: op, Err: errors.New("the server named no run")}
	}
	return r.RunID, nil
}

// findRun returns the ID of the newest run of thread tagged with key
// among the thread's runListPage newest runs, or "" when there is none
// or the server cannot list a thread's runs.
func (a *Agent) findRun(ctx context.Context, thread, key string) (string, error) {
	var list []struct {
		RunID    string         `json:"run_id"`
		Metadata map[string]any `json:"metadata"`
	}
	err := a.do(ctx, "GET", "/threads/"+thread+"/runs?limit="+strconv.Itoa(runListPage), nil, &list, "look for the run already started")
	if e, ok := errors.AsType[*Error](err); ok {
		switch e.status {
		case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
			return "", nil
		}
	}
	if err != nil {
		return "", err
	}
	for _, r := range list {
		if k, _ := r.Metadata[MetaRunKey].(string); k == key && strings.TrimSpace(r.RunID) != "" {
			return r.RunID, nil
		}
	}
	return "", nil
}
