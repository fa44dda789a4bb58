package api

import (
	"net/http"

	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/db"
)

// DefaultFeedbackKey is the key of feedback that names none (a thumbs up
// or down on the answer).
const DefaultFeedbackKey = "user_score"

// feedbackHandlers returns the handlers of the run feedback routes.
func (a *API) feedbackHandlers() map[string]http.Handler {
	return map[string]http.Handler{
		"createRunFeedback": http.HandlerFunc(a.createRunFeedback),
		"listRunFeedback":   http.HandlerFunc(a.listRunFeedback),
		"deleteRunFeedback": http.HandlerFunc(a.deleteRunFeedback),
	}
}

func toWireFeedback(f db.Feedback) wire.Feedback {
	return wire.Feedback{FeedbackID: f.ID, ThreadID: f.ThreadID, RunID: f.RunID, Key: f.Key, Score: f.Score, Value: f.Value,
		Comment: f.Comment, Correction: f.Correction, MessageID: f.MessageID, Source: f.SourceOrDefault(), CreatedAt: f.CreatedAt.UTC()}
}

// feedbackRunPath reads the thread and run IDs of a run route.
func feedbackRunPath(w http.ResponseWriter, r *http.Request) (thread, run string, ok bool) {
	if thread, ok = pathID(w, r, "thread_id"); !ok {
		return "", "", false
	}
	run, ok = pathID(w, r, "run_id")
	return thread, run, ok
}

func (a *API) createRunFeedback(w http.ResponseWriter, r *http.Request) {
	thread, run, ok := feedbackRunPath(w, r)
	if !ok {
		return
	}
	b, ok := decodeBody[wire.FeedbackCreate](a, w, r)
	if !ok {
		return
	}
	if b.Key == "" {
		b.Key = DefaultFeedbackKey
	}
	f, err := a.DB.CreateFeedback(r.Context(), a.tenant(r), db.Feedback{ThreadID: thread, RunID: run, Key: b.Key, Score: b.Score,
		Value: b.Value, Comment: b.Comment, Correction: b.Correction, MessageID: b.MessageID, Source: string(b.Source)})
	if err != nil {
		a.notFoundOr(w, r, err, "run", run)
		return
	}
	wire.WriteJSON(w, r, http.StatusOK, toWireFeedback(f))
}

func (a *API) listRunFeedback(w http.ResponseWriter, r *http.Request) {
	thread, run, ok := feedbackRunPath(w, r)
	if !ok {
		return
	}
	q, ok := decodeQuery[wire.FeedbackListQuery](w, r)
	if !ok {
		return
	}
	list, err := a.DB.ListFeedback(r.Context(), a.tenant(r), thread, run)
	if err != nil {
		a.notFoundOr(w, r, err, "run", run)
		return
	}
	out := make([]wire.Feedback, 0, len(list))
	for _, f := range list {
		if q.Source == "" || f.SourceOrDefault() == string(q.Source) {
			out = append(out, toWireFeedback(f))
		}
	}
	wire.WriteJSON(w, r, http.StatusOK, out)
}

func (a *API) deleteRunFeedback(w http.ResponseWriter, r *http.Request) {
	thread, run, ok := feedbackRunPath(w, r)
	if !ok {
		return
	}
	id, ok := pathID(w, r, "feedback_id")
	if !ok {
		return
	}
	if err := a.DB.DeleteFeedback(r.Context(), a.tenant(r), thread, run, id); err != nil {
		a.notFoundOr(w, r, err, "feedback", id)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
