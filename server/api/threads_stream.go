package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/sse"
)

// The thread stream (GET /threads/{id}/stream) follows run after run, so a
// run's own sequence numbers cannot say where it was: its event ids are
// "<run_id>:<seq>", and a client rejoining with the last one gets the rest
// of that run's log and then every run created after it, in order — no gap
// and no duplicate across run boundaries.

// threadEventID is the id of a run's event on the thread stream.
func threadEventID(run string, seq int64) string { return run + ":" + strconv.FormatInt(seq, 10) }

// threadCursor is where a client rejoins a thread stream: after event seq
// of run (zero: nothing to resume, follow from now).
type threadCursor struct {
	run string
	seq int64
}

// threadResumeAt reads Last-Event-ID (or last_event_id) for a thread
// stream. Absent, empty or "-1" is no cursor.
func threadResumeAt(r *http.Request) (threadCursor, error) {
	v, src := r.Header.Get("Last-Event-ID"), "Last-Event-ID header"
	if v == "" {
		v, src = r.URL.Query().Get(sse.LastEventIDQuery), sse.LastEventIDQuery+" query parameter"
	}
	v = strings.TrimSpace(v)
	if v == "" || v == "-1" {
		return threadCursor{}, nil
	}
	run, seq, ok := strings.Cut(v, ":")
	n, err := strconv.ParseInt(seq, 10, 64)
	if !ok || run == "" || err != nil || n < 0 {
		return threadCursor{}, fmt.Errorf("the %s %q is not an event id of a thread stream: use the id: of the last event received (RUN_ID:SEQ), or leave it out to follow the thread from now", src, v)
	}
	return threadCursor{run: run, seq: n}, nil
}

// joinThreadStream streams the events of the thread's runs — those live
// when it starts and every run created after — one run after another,
// until the client leaves. With a Last-Event-ID it resumes after that
// event: the rest of its run, then every run of the thread created after
// that one (a run no longer there, rolled back or deleted, resumes
// nothing: the stream follows the thread from now).
func (a *API) joinThreadStream(w http.ResponseWriter, r *http.Request) {
	thread, p := wire.PathID(r, "thread_id")
	if p != nil {
		p.Write(w, r)
		return
	}
	if _, p := wire.DecodeQuery[wire.ThreadJoinStreamQuery](r); p != nil {
		p.Write(w, r)
		return
	}
	cur, err := threadResumeAt(r)
	if err != nil {
		wire.BadRequest(err.Error()).Write(w, r)
		return
	}
	ctx, tenant := r.Context(), a.tenant(r)
	if _, err := a.DB.GetThread(ctx, tenant, thread); err != nil {
		fail(w, r, err)
		return
	}
	since := time.Now() // before the client can see the stream open
	done := map[string]bool{}
	var first db.Run
	if cur.run != "" {
		first, done, err = a.resumeFrom(ctx, tenant, thread, cur.run)
		if err != nil {
			fail(w, r, err)
			return
		}
		if first.ID != "" {
			since = time.Time{} // every run after it, ended or not
		}
	}
	// Where the SDK reconnects a dropped stream, sending the last id.
	w.Header().Set("Location", "/threads/"+thread+"/stream")
	sw, err := sse.NewWriter(w, r, sse.Options{})
	if err != nil {
		fail(w, r, err)
		return
	}
	defer sw.Close()
	if err := sw.Open(); err != nil {
		return
	}
	send := func(ev db.Event, run string) error {
		return sw.Send(sse.Event{ID: threadEventID(run, ev.Seq), Event: ev.Event, Data: ev.Data})
	}
	if first.ID != "" {
		if _, err := a.follow(ctx, tenant, thread, first.ID, cur.seq, func(ev db.Event) error { return send(ev, first.ID) }); err != nil {
			return
		}
	}
	tick := time.NewTicker(threadPoll)
	defer tick.Stop()
	for {
		next, err := a.nextLive(ctx, tenant, thread, since, done)
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, db.ErrNotFound) {
				slog.Error("thread stream failed", "thread", thread, "err", err)
			}
			return
		}
		if next.ID == "" {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				continue
			}
		}
		done[next.ID] = true
		if _, err := a.follow(ctx, tenant, thread, next.ID, 0, func(ev db.Event) error { return send(ev, next.ID) }); err != nil {
			return
		}
	}
}

// resumeFrom finds the run a thread stream resumes in and marks it and
// every older run of the thread done. A run that is gone gives a zero Run
// and nothing done.
func (a *API) resumeFrom(ctx context.Context, tenant, thread, runID string) (db.Run, map[string]bool, error) {
	done := map[string]bool{}
	rs, err := a.DB.ListRuns(ctx, tenant, thread, db.RunQuery{Limit: wire.MaxLimit})
	if err != nil {
		return db.Run{}, nil, err
	}
	for i, run := range rs { // newest first
		if run.ID != runID {
			continue
		}
		for _, older := range rs[i:] {
			done[older.ID] = true
		}
		return run, done, nil
	}
	return db.Run{}, done, nil
}

// threadPoll is how often a thread stream looks for the next run.
var threadPoll = 250 * time.Millisecond

// nextLive returns the thread's oldest run not yet streamed that is live
// or was created since the stream started (so a run that starts and ends
// between two looks is still streamed, from its log); a zero Run when
// there is none.
func (a *API) nextLive(ctx context.Context, tenant, thread string, since time.Time, done map[string]bool) (db.Run, error) {
	rs, err := a.DB.ListRuns(ctx, tenant, thread, db.RunQuery{Limit: wire.MaxLimit})
	if err != nil {
		return db.Run{}, err
	}
	for i := len(rs) - 1; i >= 0; i-- { // newest first: take the oldest
		r := rs[i]
		if !done[r.ID] && (!r.Status.Terminal() || !r.CreatedAt.Before(since)) {
			return r, nil
		}
	}
	return db.Run{}, nil
}
