package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/internal/cronsched"
)

// cronHandlers returns the handlers of the cron routes. The crons fire
// from the server's cron loop (server/crons.go), which calls FireCron.
func (a *API) cronHandlers() map[string]http.Handler {
	return map[string]http.Handler{
		"createCron":       http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.createCron(w, r, false) }),
		"createThreadCron": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.createCron(w, r, true) }),
		"searchCrons":      http.HandlerFunc(a.searchCrons),
		"countCrons":       http.HandlerFunc(a.countCrons),
		"updateCron":       http.HandlerFunc(a.updateCron),
		"deleteCron":       http.HandlerFunc(a.deleteCron),
	}
}

// toWireCron shows a cron in LangGraph's shape.
func toWireCron(c db.Cron) wire.Cron {
	out := wire.Cron{CronID: c.ID, AssistantID: c.AssistantID, Schedule: c.Schedule, CreatedAt: c.CreatedAt.UTC(), UpdatedAt: c.UpdatedAt.UTC(),
		Payload: c.Payload, Metadata: wire.Metadata(c.Metadata), Enabled: c.Enabled, OnRunCompleted: c.OnRunCompleted}
	if c.ThreadID != "" {
		out.ThreadID = &c.ThreadID
	}
	if c.Timezone != "" {
		out.Timezone = &c.Timezone
	}
	if c.UserID != "" {
		out.UserID = &c.UserID
	}
	if !c.EndTime.IsZero() {
		t := c.EndTime.UTC()
		out.EndTime = &t
	}
	if !c.NextRunAt.IsZero() {
		t := c.NextRunAt.UTC()
		out.NextRunDate = &t
	}
	if out.Metadata == nil {
		out.Metadata = wire.Metadata{}
	}
	if len(out.Payload) == 0 {
		out.Payload = json.RawMessage(`{}`)
	}
	return out
}

// bufferBody reads the body (bounded) so it can be decoded twice: as the
// cron's own fields and as the run-create payload. Oversized bodies are
// refused by the decode that follows.
func (a *API) bufferBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	limit := a.BodyLimit
	if limit <= 0 {
		limit = wire.DefaultBodyLimit
	}
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
		if err != nil {
			wire.BadRequest("reading the body failed: "+err.Error()).Write(w, r)
			return nil, false
		}
		body = b
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, true
}

// cronPayload decodes and checks a run-create payload as the cron's runs
// will use it, answering 422 naming the field when it is bad.
func (a *API) cronPayload(ctx context.Context, tenant, thread string, body []byte) (wire.RunCreate, *wire.Problem) {
	rb, p := wire.DecodeBytes[wire.RunCreate](body)
	if p != nil {
		return rb, p
	}
	if p := a.checkWebhook(ctx, "/webhook", rb.Webhook); p != nil {
		return rb, p
	}
	stateless := thread == ""
	if stateless {
		thread = checkpoint.NewID()
	}
	_, p = a.createRequest(tenant, thread, &rb, stateless, true)
	return rb, p
}

// assistantExists checks id names an assistant or a graph with one.
func (a *API) assistantExists(ctx context.Context, tenant, id string) error {
	_, err := a.DB.GetAssistant(ctx, tenant, id)
	if !isNotFound(err) {
		return err
	}
	found, serr := a.DB.SearchAssistants(ctx, tenant, db.AssistantQuery{GraphID: id, Query: db.Query{Limit: 1}})
	if serr != nil {
		return serr
	}
	if len(found) == 0 {
		return err
	}
	return nil
}

func (a *API) createCron(w http.ResponseWriter, r *http.Request, onThread bool) {
	tenant, thread := a.tenant(r), ""
	if onThread {
		id, ok := pathID(w, r, "thread_id")
		if !ok {
			return
		}
		thread = id
	}
	body, ok := a.bufferBody(w, r)
	if !ok {
		return
	}
	cb, ok := decodeBody[wire.CronCreate](a, w, r)
	if !ok {
		return
	}
	rb, p := a.cronPayload(r.Context(), tenant, thread, body)
	if p != nil {
		p.Write(w, r)
		return
	}
	if err := a.assistantExists(r.Context(), tenant, cb.AssistantID); err != nil {
		a.notFoundOr(w, r, err, "assistant", cb.AssistantID)
		return
	}
	sched, err := cronsched.Parse(cb.Schedule, cb.Timezone)
	if err != nil { // Validate checked it
		wire.Invalid(wire.FieldError{Pointer: "/schedule", Detail: err.Error()}).Write(w, r)
		return
	}
	payload, err := json.Marshal(rb)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	c := db.Cron{AssistantID: cb.AssistantID, ThreadID: thread, Schedule: cb.Schedule, Timezone: cb.Timezone, Payload: payload,
		Metadata: db.Metadata(cb.Metadata), Enabled: cb.Enabled == nil || *cb.Enabled, OnRunCompleted: string(cb.OnRunCompleted)}
	c.EndTime, _ = wire.ParseEndTime(cb.EndTime) // Validate checked it
	c.NextRunAt = sched.NextBefore(time.Now(), c.EndTime)
	created, err := a.DB.CreateCron(r.Context(), tenant, c)
	if err != nil {
		a.notFoundOr(w, r, err, "thread", thread)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, toWireCron(created))
}

func (a *API) updateCron(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "cron_id")
	if !ok {
		return
	}
	tenant := a.tenant(r)
	body, ok := a.bufferBody(w, r)
	if !ok {
		return
	}
	pb, ok := decodeBody[wire.CronPatch](a, w, r)
	if !ok {
		return
	}
	var fields map[string]json.RawMessage
	if len(bytes.TrimSpace(body)) > 0 {
		_ = json.Unmarshal(body, &fields) // decodeBody accepted it as an object
	}
	c, err := a.DB.GetCron(r.Context(), tenant, id)
	if err != nil {
		a.notFoundOr(w, r, err, "cron", id)
		return
	}
	patch := db.CronPatch{Schedule: pb.Schedule, Timezone: pb.Timezone, Enabled: pb.Enabled, Metadata: db.Metadata(pb.Metadata)}
	if pb.OnRunCompleted != "" {
		s := string(pb.OnRunCompleted)
		patch.OnRunCompleted = &s
	}
	// Payload fields replace the payload's; the result must still be a
	// run-create body the cron can fire.
	payload := map[string]json.RawMessage{}
	if err := json.Unmarshal(c.Payload, &payload); err != nil {
		a.fail(w, r, fmt.Errorf("cron %s: stored payload: %w", id, err))
		return
	}
	changed := false
	for _, k := range wire.CronPayloadFields {
		if v, ok := fields[k]; ok && string(v) != "null" {
			payload[k], changed = v, true
		}
	}
	if changed {
		merged, err := json.Marshal(payload)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		rb, p := a.cronPayload(r.Context(), tenant, c.ThreadID, merged)
		if p != nil {
			p.Write(w, r)
			return
		}
		if patch.Payload, err = json.Marshal(rb); err != nil {
			a.fail(w, r, err)
			return
		}
	}
	// A new schedule, time zone, end time or enabled flag counts the next
	// slot from now.
	schedule, tz, end := c.Schedule, c.Timezone, c.EndTime
	if pb.Schedule != nil {
		schedule = *pb.Schedule
	}
	if pb.Timezone != nil {
		tz = *pb.Timezone
	}
	if pb.EndTime != "" {
		end, _ = wire.ParseEndTime(pb.EndTime) // Validate checked it
		patch.EndTime = &end
	}
	if pb.Schedule != nil || pb.Timezone != nil || pb.EndTime != "" || pb.Enabled != nil {
		if errs := wire.ScheduleErrors(schedule, tz); len(errs) > 0 {
			wire.Invalid(errs...).Write(w, r)
			return
		}
		sched, _ := cronsched.Parse(schedule, tz)
		next := sched.NextBefore(time.Now(), end)
		patch.NextRunAt = &next
	}
	up, err := a.DB.UpdateCron(r.Context(), tenant, id, patch)
	if err != nil {
		a.notFoundOr(w, r, err, "cron", id)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, toWireCron(up))
}

func (a *API) deleteCron(w http.ResponseWriter, r *http.Request) {
	id, ok := pathID(w, r, "cron_id")
	if !ok {
		return
	}
	if err := a.DB.DeleteCron(r.Context(), a.tenant(r), id); err != nil {
		a.notFoundOr(w, r, err, "cron", id)
		return
	}
	wire.WriteJSON(w, r, http.StatusNoContent, nil)
}

func (a *API) searchCrons(w http.ResponseWriter, r *http.Request) {
	b, ok := decodeBody[wire.CronSearch](a, w, r)
	if !ok {
		return
	}
	q := db.CronQuery{AssistantID: b.AssistantID, ThreadID: b.ThreadID, Enabled: b.Enabled,
		Query: db.Query{Metadata: db.Metadata(b.Metadata), Limit: wire.LimitOr(b.Limit, wire.DefaultLimit), Offset: b.Offset,
			SortBy: string(b.SortBy), SortOrder: string(b.SortOrder)}}
	cs, err := a.DB.SearchCrons(r.Context(), a.tenant(r), q)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	sel := make([]string, 0, len(b.Select))
	for _, s := range b.Select {
		if s != "now" { // LangGraph's server time; Trellis has none to add
			sel = append(sel, string(s))
		}
	}
	out := make([]any, len(cs))
	for i, c := range cs {
		out[i] = selectFields(toWireCron(c), sel)
	}
	wire.WriteJSON(w, r, http.StatusOK, out)
}

func (a *API) countCrons(w http.ResponseWriter, r *http.Request) {
	b, ok := decodeBody[wire.CronCount](a, w, r)
	if !ok {
		return
	}
	n, err := a.DB.CountCrons(r.Context(), a.tenant(r), db.CronQuery{AssistantID: b.AssistantID, ThreadID: b.ThreadID,
		Query: db.Query{Metadata: db.Metadata(b.Metadata)}})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, n)
}

// FireCron creates the run of one slot of cron c (the server's cron loop
// calls it once it has claimed the slot): on the cron's thread, or on a
// new thread for a stateless cron, deleted when the run ends unless
// on_run_completed is "keep". The run's metadata gains cron_id.
func (a *API) FireCron(ctx context.Context, tenant string, c db.Cron) (db.Run, error) {
	rb, p := wire.DecodeBytes[wire.RunCreate](c.Payload)
	if p != nil {
		return db.Run{}, fmt.Errorf("cron %s: payload: %w", c.ID, p)
	}
	rb.AssistantID = c.AssistantID
	stateless, thread := c.ThreadID == "", c.ThreadID
	if stateless {
		thread = checkpoint.NewID()
		rb.OnCompletion = wire.OnCompletionDelete
		if c.OnRunCompleted == "keep" {
			rb.OnCompletion = wire.OnCompletionKeep
		}
	}
	req, p := a.createRequest(tenant, thread, &rb, stateless, true)
	if p != nil {
		return db.Run{}, fmt.Errorf("cron %s: payload: %w", c.ID, p)
	}
	md := db.Metadata{}
	for k, v := range req.Metadata {
		md[k] = v
	}
	md["cron_id"] = c.ID
	req.Metadata = md
	run, err := a.Runs.Create(ctx, a.Enqueue, req)
	if err != nil && run.ID == "" && stateless {
		if derr := a.Runs.DeleteThread(context.WithoutCancel(ctx), tenant, thread); derr != nil {
			slog.Warn("thread of a refused cron run not deleted", "thread", thread, "err", derr)
		}
	}
	return run, err
}
