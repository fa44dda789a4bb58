package server

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trellis-agents/trellis/eval"
	"github.com/trellis-agents/trellis/eval/evaluators"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/api"
	"github.com/trellis-agents/trellis/server/db"
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

// Defaults of the online evaluation worker.
const (
	// OnlineQueueSize bounds the runs waiting to be scored; a run that
	// finds the queue full is not scored (and counted).
	OnlineQueueSize = 1024
	// onlineWorkers score at once.
	onlineWorkers = 2
	// onlineTimeout bounds the scoring of one run by one evaluator.
	onlineTimeout = 2 * time.Minute
)

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

// onlineJob is one run to score with one evaluator.
type onlineJob struct {
	tenant string
	run    db.Run
	ev     OnlineEvaluator
}

// onlineWorker scores sampled runs off the runs' path: the Finished hook
// only puts a job in a bounded channel, which a few goroutines drain.
// Jobs still waiting at shutdown are not scored (the feedback is a
// sample: losing some is acceptable; scoring one twice is not, and the
// feedback's derived ID prevents it).
type onlineWorker struct {
	jobs    chan onlineJob
	done    chan struct{}
	wg      sync.WaitGroup
	score   func(ctx context.Context, j onlineJob) error
	dropped atomic.Int64
	scored  atomic.Int64
}

// startOnline starts the workers; score scores one job.
func startOnline(ctx context.Context, s *Server, score func(ctx context.Context, j onlineJob) error) *onlineWorker {
	w := &onlineWorker{jobs: make(chan onlineJob, OnlineQueueSize), done: make(chan struct{}), score: score}
	ctx, cancel := context.WithCancel(ctx)
	w.wg.Add(onlineWorkers + 1)
	go func() { defer w.wg.Done(); <-w.done; cancel() }()
	for range onlineWorkers {
		go func() {
			defer w.wg.Done()
			for {
				select {
				case <-w.done:
					return
				case j := <-w.jobs:
					jctx, jcancel := context.WithTimeout(ctx, onlineTimeout)
					err := w.score(jctx, j)
					jcancel()
					switch {
					case err == nil:
						w.scored.Add(1)
					case errors.Is(err, db.ErrNotFound):
						s.log.Debug("a sampled run was not scored: it or its thread is gone", "run", j.run.ID, "key", j.ev.Key)
					case ctx.Err() != nil:
						return
					default:
						s.log.Warn("a sampled run could not be scored", "run", j.run.ID, "key", j.ev.Key, "err", err)
					}
				}
			}
		}()
	}
	return w
}

// offer queues a job without waiting; a full queue drops it.
func (w *onlineWorker) offer(j onlineJob) bool {
	select {
	case <-w.done:
		return false
	default:
	}
	select {
	case w.jobs <- j:
		return true
	default:
		w.dropped.Add(1)
		return false
	}
}

// stop ends the workers (a job being scored is cancelled) and waits for
// them; it returns how many jobs were left unscored.
func (w *onlineWorker) stop() int {
	close(w.done)
	w.wg.Wait()
	return len(w.jobs)
}

// onlineFinished is the online evaluators' part of the Finished hook: a
// successful run of an assistant with online evaluators gets a job per
// evaluator whose sample it falls in.
func (s *Server) onlineFinished(tenant string, run db.Run) {
	if run.Status != db.RunSuccess {
		return
	}
	list := s.cfg.OnlineEvaluators[run.AssistantID]
	if len(list) == 0 {
		return
	}
	s.mu.Lock()
	w := s.online
	s.mu.Unlock()
	for _, ev := range list {
		if !Sampled(run.ID, ev.Key, ev.Sample) {
			continue
		}
		if w == nil || !w.offer(onlineJob{tenant: tenant, run: run, ev: ev}) {
			s.log.Warn("a sampled run is not scored: the online evaluation queue is full or stopped", "run", run.ID, "key", ev.Key)
		}
	}
}

// scoreOnline scores one job through the API.
func (s *Server) scoreOnline(a *api.API) func(ctx context.Context, j onlineJob) error {
	return func(ctx context.Context, j onlineJob) error {
		_, err := a.ScoreOnline(ctx, j.tenant, j.run, j.ev.Key, j.ev.Criterion, s.judges())
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
