package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/internal/hoptrace"
	"github.com/trellis-agents/trellis/server/runs"
	"github.com/trellis-agents/trellis/server/sse"
)

// followPoll is how often a follower checks the run's status in the
// database, for runs that end without this process's broker hearing of
// it (cancelled while pending elsewhere, deleted with their thread).
var followPoll = time.Second

// follow hands fn the run's events with Seq > after, live, until the run
// ends (then its whole log has been handed over) or ctx ends (ctx's
// error): runs.Follow. It returns the last Seq handed over.
func (a *API) follow(ctx context.Context, tenant, thread, runID string, after int64, fn func(db.Event) error) (int64, error) {
	return runs.Follow(ctx, a.DB, a.Runs.Broker(), tenant, thread, runID, after, followPoll, fn)
}

// leave applies on_disconnect "cancel": the client went away, so a run
// still live is cancelled (action interrupt).
func (a *API) leave(r *http.Request, run db.Run) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
	defer cancel()
	tenant := a.tenant(r)
	cur, err := a.DB.GetRun(ctx, tenant, run.ThreadID, run.ID)
	if err != nil || cur.Status.Terminal() {
		return
	}
	if err := a.stopRun(ctx, tenant, cur, runs.Interrupt); err != nil && !errors.Is(err, db.ErrConflict) {
		slog.Warn("cancel of a run whose client left failed", "run", run.ID, "err", err)
	}
}

// eventFilter keeps the events of the given stream modes and namespaces
// (nil: all). metadata, error and end always pass.
func eventFilter(modes wire.StreamModes, namespaces []string) func(string) bool {
	if len(modes) == 0 && len(namespaces) == 0 {
		return nil
	}
	return func(name string) bool {
		base, ns, _ := strings.Cut(name, "|")
		switch base {
		case "metadata", "error", "end":
			return true
		}
		if len(modes) > 0 {
			ok := modes.Has(wire.StreamMode(base))
			if base == "messages" {
				ok = ok || modes.Has(wire.StreamMessagesTuple)
			}
			if !ok {
				return false
			}
		}
		if len(namespaces) > 0 {
			top, _, _ := strings.Cut(ns, "|")
			return slices.Contains(namespaces, ns) || slices.Contains(namespaces, top)
		}
		return true
	}
}

// sendRun streams the run's events after after as SSE, then "end" (with
// its own id and data null); a failure mid-stream is an "error" event
// {error, message}. When the
// client leaves and cancelOnLeave is set, the run is cancelled.
func (a *API) sendRun(w http.ResponseWriter, r *http.Request, run db.Run, after int64, keep func(string) bool, cancelOnLeave bool) {
	sw, err := sse.NewWriter(w, r, sse.Options{})
	if err != nil {
		fail(w, r, err)
		return
	}
	defer sw.Close()
	if err := sw.Open(); err != nil {
		return
	}
	last, ferr := a.follow(r.Context(), a.tenant(r), run.ThreadID, run.ID, after, func(ev db.Event) error {
		if keep != nil && !keep(ev.Event) {
			return nil
		}
		return sw.Send(sse.Event{ID: sse.FormatID(ev.Seq), Event: ev.Event, Data: ev.Data})
	})
	if ferr != nil {
		if r.Context().Err() != nil || sw.Err() != nil {
			if cancelOnLeave {
				a.leave(r, run)
			}
			return
		}
		slog.Error("run stream failed", "run", run.ID, "err", ferr)
		data, _ := json.Marshal(wire.RunFailure{Error: "StreamError", Message: "the run's events could not be read; rejoin with Last-Event-ID to resume"})
		// The id of the last event handed over: a rejoin with it resumes
		// right after, losing nothing.
		_ = sw.Send(sse.Event{ID: sse.FormatID(last), Event: "error", Data: data})
		return
	}
	_ = sw.Send(sse.Event{ID: sse.FormatID(a.endSeq(r.Context(), a.tenant(r), run.ID, after, last)), Event: "end", Data: endData})
}

// endData is the end event's data: JSON null, because SDK 1.8.x parses
// every event's data as JSON and throws on an empty one.
var endData = []byte("null")

// endSeq is the id the end event of a run stream carries: one past the
// run's last event, so a client rejoining with the last data event's id
// gets the end, and one rejoining with the end's id gets the same end
// again (and nothing of the run twice). last is what follow handed over
// (including events the stream's filter dropped); when it handed over
// nothing, after is either a real event (the end is after+1) or already
// the end's id.
func (a *API) endSeq(ctx context.Context, tenant, runID string, after, last int64) int64 {
	if last > after || after <= 0 {
		return last + 1
	}
	evs, err := a.DB.ReadEvents(ctx, tenant, runID, after-1, 1)
	if err == nil && len(evs) == 1 && evs[0].Seq == after {
		return after + 1
	}
	return after
}

func (a *API) streamRun(w http.ResponseWriter, r *http.Request) { a.streamNew(w, r, false) }

func (a *API) streamStatelessRun(w http.ResponseWriter, r *http.Request) { a.streamNew(w, r, true) }

func (a *API) streamNew(w http.ResponseWriter, r *http.Request, stateless bool) {
	q, p := wire.DecodeQuery[wire.RunStreamQuery](r)
	if p != nil {
		p.Write(w, r)
		return
	}
	run, b, ok := a.create(w, r, stateless, false)
	if !ok {
		return
	}
	setRunHeaders(w.Header(), run)
	a.sendRun(w, r, run, 0, eventFilter(nil, q.Namespace), b.OnDisconnect != wire.DisconnectContinue)
	if stateless && b.OnCompletion != wire.OnCompletionKeep {
		a.dropTemporary(r, run)
	}
}

// tempGrace bounds how long a stateless stream or wait whose client left
// waits for its run to end to delete the temporary thread.
var tempGrace = 30 * time.Second

// dropTemporary deletes a stateless run's temporary thread once the run
// has ended. The handler does it, not the executor, so the run's events
// are still in the log however late the handler subscribed. A run still
// live after tempGrace (a client that left with on_disconnect=continue)
// keeps its thread; that is logged.
func (a *API) dropTemporary(r *http.Request, run db.Run) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), tempGrace)
	defer cancel()
	tenant := a.tenant(r)
	if err := a.awaitEnd(ctx, tenant, run); err != nil {
		slog.Warn("temporary thread kept: its run did not end in time", "thread", run.ThreadID, "run", run.ID, "err", err)
		return
	}
	if err := a.Runs.DeleteThread(ctx, tenant, run.ThreadID); err != nil {
		slog.Warn("temporary thread not deleted", "thread", run.ThreadID, "err", err)
	}
}

// rejoinAfter reads Last-Event-ID: absent or "-1" is the run's start.
func rejoinAfter(w http.ResponseWriter, r *http.Request) (int64, bool) {
	after, ok, err := sse.LastEventID(r)
	if err != nil {
		wire.BadRequest(err.Error()).Write(w, r)
		return 0, false
	}
	if !ok || after < 0 {
		after = 0
	}
	return after, true
}

func (a *API) joinRunStream(w http.ResponseWriter, r *http.Request) {
	run, ok := a.pathRun(w, r)
	if !ok {
		return
	}
	a.rejoin(w, r, run)
}

func (a *API) joinStatelessRunStream(w http.ResponseWriter, r *http.Request) {
	id, p := wire.PathID(r, "run_id")
	if p != nil {
		p.Write(w, r)
		return
	}
	run, err := a.DB.GetRun(r.Context(), a.tenant(r), "", id)
	if err != nil {
		fail(w, r, err)
		return
	}
	a.rejoin(w, r, run)
}

func (a *API) rejoin(w http.ResponseWriter, r *http.Request, run db.Run) {
	q, p := wire.DecodeQuery[wire.RunJoinStreamQuery](r)
	if p != nil {
		p.Write(w, r)
		return
	}
	after, ok := rejoinAfter(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Location", runPath(run.ThreadID, run.ID))
	a.sendRun(w, r, run, after, eventFilter(q.StreamMode, q.Namespace), q.CancelOnDisconnect)
}

// result collects what /wait and /join answer: the run's last root
// values (with a trailing interrupt merged in) and its error.
type result struct {
	values    json.RawMessage // the last values event's data: an object, or null
	interrupt json.RawMessage
	failure   json.RawMessage
}

// add takes one event. Only an event that may have an "__interrupt__"
// member is parsed as it comes; the values are parsed, if at all, when
// answered (wire.WriteJSONObject).
func (c *result) add(ev db.Event) {
	base, ns, _ := strings.Cut(ev.Event, "|")
	if ns != "" {
		return
	}
	switch base {
	case "values", "updates":
		if !mayInterrupt(ev.Data) {
			// An update without an interrupt changes nothing; values
			// replace the answer when they decode into a map (an object,
			// or null).
			if base == "values" && objectOrNull(ev.Data) {
				c.values, c.interrupt = ev.Data, nil
			}
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(ev.Data, &obj) != nil {
			return
		}
		if in, ok := obj["__interrupt__"]; ok && len(obj) == 1 {
			c.interrupt = in
			return
		}
		if base == "values" {
			c.values, c.interrupt = ev.Data, nil
		}
	case "error":
		c.failure = ev.Data
	}
}

// mayInterrupt reports whether data can have an "__interrupt__" member:
// the name appears as it is, or data has a \u escape that could spell it.
func mayInterrupt(data []byte) bool {
	return bytes.Contains(data, []byte("__interrupt__")) || bytes.Contains(data, []byte(`\u`))
}

// objectOrNull reports whether data decodes into a map: a JSON object or
// null.
func objectOrNull(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && (t[0] == '{' || t[0] == 'n') && json.Valid(data)
}

// answer waits for the run and writes the thread's final values, with
// "__interrupt__" when it stopped at an interrupt and "__error__" when it
// failed (the SDK's wait raises "error: message" from it). Values with
// nothing to merge in are written as the run stored them when that is
// already their encoding.
func (a *API) answer(w http.ResponseWriter, r *http.Request, run db.Run, cancelOnLeave bool) {
	ctx, tenant := r.Context(), a.tenant(r)
	var c result
	f, err := runs.FollowRun(ctx, a.DB, a.Runs.Broker(), tenant, run.ThreadID, run.ID, 0, followPoll, func(ev db.Event) error { c.add(ev); return nil })
	hoptrace.Mark("followed")
	if err != nil {
		if ctx.Err() != nil {
			if cancelOnLeave {
				a.leave(r, run)
			}
			return
		}
		fail(w, r, err)
		return
	}
	c.write(w, r, func() json.RawMessage {
		// How the run ended, as the follow learned it, else read back.
		fin := f.End
		if fin.Status == "" {
			if r, err := a.DB.GetRun(ctx, tenant, run.ThreadID, run.ID); err == nil {
				fin = db.RunEnd{Status: r.Status, Error: r.Error}
			}
		}
		if fin.Status == db.RunError || fin.Status == db.RunTimeout {
			b, _ := json.Marshal(wire.RunFailure{Error: "RunError", Message: fin.Error})
			return b
		}
		return nil
	}, func() []byte {
		if th, err := a.DB.GetThread(ctx, tenant, run.ThreadID); err == nil {
			return th.Values
		}
		return nil
	})
}

// write answers c: the values, with "__interrupt__" and "__error__"
// merged in. runFailure is the error of a run that failed without an
// error event (nil when it did not fail); thread is the thread's values,
// the answer when no values event came.
func (c *result) write(w http.ResponseWriter, r *http.Request, runFailure func() json.RawMessage, thread func() []byte) {
	if c.failure == nil {
		c.failure = runFailure()
	}
	if c.interrupt == nil && c.failure == nil && bytes.HasPrefix(bytes.TrimLeft(c.values, " \t\r\n"), []byte("{")) {
		wire.WriteJSONObject(w, r, http.StatusOK, c.values)
		return
	}
	var out map[string]json.RawMessage
	if c.values != nil {
		_ = json.Unmarshal(c.values, &out) // add took only what decodes
	}
	if out == nil {
		out = map[string]json.RawMessage{}
		if tv := thread(); len(tv) > 0 {
			_ = json.Unmarshal(tv, &out)
		}
	}
	if c.interrupt != nil {
		out["__interrupt__"] = c.interrupt
	}
	if c.failure != nil {
		out["__error__"] = c.failure
	}
	wire.WriteJSON(w, r, http.StatusOK, out)
}

func (a *API) waitRun(w http.ResponseWriter, r *http.Request) { a.waitNew(w, r, false) }

func (a *API) waitStatelessRun(w http.ResponseWriter, r *http.Request) { a.waitNew(w, r, true) }

func (a *API) waitNew(w http.ResponseWriter, r *http.Request, stateless bool) {
	hoptrace.Mark("handler")
	run, b, ok := a.create(w, r, stateless, false)
	if !ok {
		return
	}
	hoptrace.Mark("accepted")
	setRunHeaders(w.Header(), run)
	a.answer(w, r, run, b.OnDisconnect != wire.DisconnectContinue)
	hoptrace.Mark("answered")
	if stateless && b.OnCompletion != wire.OnCompletionKeep {
		a.dropTemporary(r, run)
	}
}

func (a *API) joinRun(w http.ResponseWriter, r *http.Request) {
	q, p := wire.DecodeQuery[wire.RunJoinQuery](r)
	if p != nil {
		p.Write(w, r)
		return
	}
	run, ok := a.pathRun(w, r)
	if !ok {
		return
	}
	a.answer(w, r, run, q.CancelOnDisconnect)
}
