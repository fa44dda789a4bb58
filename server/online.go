package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/eval/evaluators"
	"github.com/trellis-agents/trellis/internal/txhook"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/queue"
)

// OnlineEvaluator scores a sample of an assistant's successful runs after
// they finish (trellis.yaml's assistants[].online_evaluators).
type OnlineEvaluator struct {
	// Key is the feedback key the score is stored under.
	Key string
	// Criterion is the evaluator and its params, as in a dataset.
	Criterion eval.Criterion
	// Sample is the share of runs scored, 0 to 1.
	Sample float64
}

// Sampled reports whether the run with ID runID falls in an evaluator's
// sample of rate (0 to 1): a hash of the run ID and the key, so the same
// run is always in or always out, whichever replica or attempt asks, and
// two evaluators of one assistant sample independently.
func Sampled(runID, key string, rate float64) bool {
	if rate <= 0 {
		return false
	}
	if rate >= 1 {
		return true
	}
	h := fnv.New64a()
	h.Write([]byte(runID))
	h.Write([]byte{0})
	h.Write([]byte(key))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], h.Sum64())
	// The top 53 bits as a fraction in [0, 1).
	return float64(binary.BigEndian.Uint64(b[:])>>11)/(1<<53) < rate
}

// onlineEnqueueTimeout bounds storing a run's samples in the Finished
// hook, which runs on the finishing run's context (it may be ending: a
// replica stopping right after the run finished).
const onlineEnqueueTimeout = 10 * time.Second

// onlineSamples are the samples of run: one per online evaluator of its
// assistant whose sample it falls in, none unless it succeeded.
func (s *Server) onlineSamples(tenant string, run db.Run) []queue.OnlineJob {
	if run.Status != db.RunSuccess {
		return nil
	}
	var jobs []queue.OnlineJob
	for _, ev := range s.cfg.OnlineEvaluators[run.AssistantID] {
		if Sampled(run.ID, ev.Key, ev.Sample) {
			jobs = append(jobs, queue.OnlineJob{Tenant: tenant, ThreadID: run.ThreadID, RunID: run.ID, Key: ev.Key})
		}
	}
	return jobs
}

// onlineStored records, for one call of Advance, the runs whose samples
// were inserted in their finish transaction. The Finished hook runs only
// after that transaction committed and on the same context, so a run
// found here has its samples stored and needs no insert after the commit.
type onlineStored struct {
	mu   sync.Mutex
	runs map[string]bool
}

type onlineStoredKey struct{}

func (o *onlineStored) add(runID string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.runs == nil {
		o.runs = map[string]bool{}
	}
	o.runs[runID] = true
}

func (o *onlineStored) has(runID string) bool {
	if o == nil {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.runs[runID]
}

// onlineAtFinish makes advance insert a finishing run's samples in the
// transaction that records its end (the internal/txhook end hook, after
// the queue's own completion of the run's job), so the sample exists iff
// the finish committed, with no write of its own. A failed insert leaves
// the finish alone and the Finished hook inserts the samples after the
// commit, as it does for a finish that runs no end hook.
func (s *Server) onlineAtFinish(advance queue.AdvanceFunc) queue.AdvanceFunc {
	if len(s.cfg.OnlineEvaluators) == 0 {
		return advance
	}
	return func(ctx context.Context, tenant, thread string) (queue.Result, error) {
		stored := &onlineStored{}
		ctx = context.WithValue(ctx, onlineStoredKey{}, stored)
		ctx = txhook.WithEnd(ctx, func(ctx context.Context, tx any) error {
			run, ok := txhook.Ended(ctx).(db.Run)
			if !ok {
				return nil
			}
			jobs := s.onlineSamples(tenant, run)
			if len(jobs) == 0 {
				return nil
			}
			s.mu.Lock()
			enqueue := s.onlineEnqueueTx
			s.mu.Unlock()
			if enqueue == nil {
				return nil
			}
			if err := enqueue(ctx, tx, jobs); err != nil {
				s.log.Warn("a sampled run's samples were not stored with its finish; they are stored after it", "run", run.ID, "err", err)
				return nil
			}
			stored.add(run.ID)
			return nil
		})
		return advance(ctx, tenant, thread)
	}
}

// onlineFinished is the online evaluators' part of the Finished hook: a
// successful run of an assistant with online evaluators gets a durable
// job per evaluator whose sample it falls in. The job, not this replica,
// carries the sample: a restart, or another replica, scores it. Samples
// already stored with the run's finish (onlineAtFinish) are not inserted
// again.
func (s *Server) onlineFinished(ctx context.Context, tenant string, run db.Run) {
	jobs := s.onlineSamples(tenant, run)
	if len(jobs) == 0 {
		return
	}
	if stored, _ := ctx.Value(onlineStoredKey{}).(*onlineStored); stored.has(run.ID) {
		return
	}
	s.mu.Lock()
	enqueue := s.onlineEnqueue
	s.mu.Unlock()
	if enqueue == nil {
		s.log.Warn("a sampled run is not scored: the queue is not running", "run", run.ID, "samples", len(jobs))
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), onlineEnqueueTimeout)
	defer cancel()
	for _, job := range jobs {
		if err := enqueue(ctx, job); err != nil {
			s.log.Error("a sampled run could not be queued for scoring; it is not scored", "run", run.ID, "key", job.Key, "err", err)
		}
	}
}

// scoreSample is the queue's online function: it scores one sample
// through the API (nil until the handler is built: the job is tried
// again). A run or thread gone, or an evaluator no longer configured,
// ends the job without a score.
func (s *Server) scoreSample(ready *atomic.Pointer[api.API]) queue.OnlineFunc {
	return func(ctx context.Context, job queue.OnlineJob) error {
		a := ready.Load()
		if a == nil {
			return errors.New("server: the API is not ready for online evaluation yet")
		}
		run, err := s.st.db.GetRun(ctx, job.Tenant, job.ThreadID, job.RunID)
		if errors.Is(err, db.ErrNotFound) {
			s.log.Debug("a sampled run was not scored: it or its thread is gone", "run", job.RunID, "key", job.Key)
			return nil
		}
		if err != nil {
			return err
		}
		i := slices.IndexFunc(s.cfg.OnlineEvaluators[run.AssistantID], func(ev OnlineEvaluator) bool { return ev.Key == job.Key })
		if i < 0 {
			s.log.Info("a sampled run was not scored: its evaluator is no longer configured", "run", job.RunID, "key", job.Key)
			return nil
		}
		ev := s.cfg.OnlineEvaluators[run.AssistantID][i]
		_, err = a.ScoreOnline(ctx, job.Tenant, run, ev.Key, ev.Criterion, s.judges())
		if errors.Is(err, db.ErrNotFound) {
			s.log.Debug("a sampled run was not scored: it or its thread is gone", "run", job.RunID, "key", job.Key)
			return nil
		}
		return err
	}
}

// judges resolves an llm_judge's model: a name under trellis.yaml's
// models ("" : the one named default), never a spec a request or a
// dataset chose.
func (s *Server) judges() evaluators.JudgeResolver {
	s.mu.Lock()
	m := s.models
	s.mu.Unlock()
	return func(_ context.Context, name string) (llm.Model, error) {
		if strings.TrimSpace(name) == "" {
			name = "default"
		}
		if m == nil || m.Resolve == nil {
			return nil, fmt.Errorf("no models are declared, so no judge model %q", name)
		}
		spec, ok := m.Named[name]
		if !ok {
			return nil, fmt.Errorf("%q is not a declared model name", name)
		}
		return m.Resolve(spec)
	}
}
