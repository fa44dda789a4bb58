package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/google/uuid"

	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/eval/evaluators"
	"github.com/trellis-agents/trellis/server/db"
)

// OnlineSource is the source field, in the value of feedback an online
// evaluator stored, that tells it from a person's.
const OnlineSource = "evaluator"

// onlineNamespace derives the IDs of online evaluators' feedback.
var onlineNamespace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("trellis:online-evaluator"))

// OnlineFeedbackID is the ID of the feedback an online evaluator stores
// on a run under key: the same for every attempt, so the database's key
// keeps one entry per (run, key) however often a run is scored.
func OnlineFeedbackID(tenant, runID, key string) string {
	return uuid.NewSHA1(onlineNamespace, []byte(tenant+"\x00"+runID+"\x00"+key)).String()
}

// OnlineValue is the value of an online evaluator's feedback.
type OnlineValue struct {
	// Source is OnlineSource.
	Source string `json:"source"`
	// Evaluator is the criterion's evaluator and Threshold the score it
	// requires; Passed says whether the score reached it.
	Evaluator string  `json:"evaluator"`
	Threshold float64 `json:"threshold"`
	Passed    bool    `json:"passed"`
	// Error is why the evaluator could not score ("" when it could); the
	// feedback then has no score.
	Error string `json:"error,omitempty"`
}

// ScoreOnline scores a finished run with criterion c, from its thread as
// an experiment's evaluators see it (state, messages, trajectory, node
// path), and stores the verdict as the run's feedback under key: the score,
// the explanation as comment, an OnlineValue as value. It stores at most
// one entry per (run, key): a run already scored under key is left alone.
// judges resolves an llm_judge's model (nil: judges fail to score).
// db.ErrNotFound means the run or its thread is gone.
func (a *API) ScoreOnline(ctx context.Context, tenant string, run db.Run, key string, c eval.Criterion, judges evaluators.JudgeResolver) (db.Feedback, error) {
	id := OnlineFeedbackID(tenant, run.ID, key)
	have, err := a.DB.ListFeedback(ctx, tenant, run.ThreadID, run.ID)
	if err != nil {
		return db.Feedback{}, err
	}
	if i := slices.IndexFunc(have, func(f db.Feedback) bool { return f.ID == id }); i >= 0 {
		return have[i], nil
	}
	ev, err := eval.New(c)
	if err != nil {
		return db.Feedback{}, err
	}
	th, err := a.onlineThread(ctx, tenant, run.ThreadID)
	if err != nil {
		return db.Feedback{}, err
	}
	if judges != nil {
		ctx = evaluators.WithJudges(ctx, judges)
	}
	v := OnlineValue{Source: OnlineSource, Evaluator: c.Evaluator, Threshold: c.ThresholdOrDefault()}
	f := db.Feedback{ID: id, ThreadID: run.ThreadID, RunID: run.ID, Key: key, Source: db.FeedbackEvaluator}
	s, err := ev.Evaluate(ctx, eval.Trial{Case: &eval.Case{ID: run.ID}, Thread: th})
	if err != nil && ctx.Err() != nil {
		// Cut (a stopping replica, the job's timeout), not the evaluator
		// failing: nothing is stored, and the job tries again.
		return db.Feedback{}, fmt.Errorf("scoring run %s with %q was cut: %w", run.ID, key, err)
	}
	if err != nil {
		v.Error = err.Error()
		f.Comment = "could not score: " + err.Error()
	} else {
		score := min(max(s.Value, 0), 1)
		f.Score = &score
		f.Comment = s.Explanation
		v.Passed = score >= v.Threshold
	}
	if f.Value, err = json.Marshal(v); err != nil {
		return db.Feedback{}, err
	}
	out, err := a.DB.CreateFeedback(ctx, tenant, f)
	if errors.Is(err, db.ErrConflict) {
		// Scored at the same time by another attempt: keep its entry.
		return a.onlineFeedback(ctx, tenant, run, id)
	}
	return out, err
}

// onlineFeedback returns the feedback with ID id on the run.
func (a *API) onlineFeedback(ctx context.Context, tenant string, run db.Run, id string) (db.Feedback, error) {
	have, err := a.DB.ListFeedback(ctx, tenant, run.ThreadID, run.ID)
	if err != nil {
		return db.Feedback{}, err
	}
	for _, f := range have {
		if f.ID == id {
			return f, nil
		}
	}
	return db.Feedback{}, fmt.Errorf("feedback %s: %w", id, db.ErrNotFound)
}

// onlineThread reads a thread through the tenant's own handlers, as an
// experiment's unit does, with the trajectory and turns derived from its
// messages.
func (a *API) onlineThread(ctx context.Context, tenant, threadID string) (*eval.Thread, error) {
	if _, err := a.DB.GetThread(ctx, tenant, threadID); err != nil {
		return nil, err
	}
	h, err := a.tenantHandler(tenant)
	if err != nil {
		return nil, err
	}
	target := &eval.ServerTarget{URL: "http://trellis.internal", Client: &http.Client{Transport: handlerTransport{h}}}
	th, err := target.Thread(ctx, threadID)
	if err != nil {
		return nil, err
	}
	th.ToolCalls = eval.Trajectory(th.Messages)
	th.Turns = eval.SplitTurns(th.Messages)
	return th, nil
}
