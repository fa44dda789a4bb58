package graph

import (
	"context"
	"runtime"
	"slices"
	"sync/atomic"
	"time"
)

// A parallel step's tasks run on a few worker goroutines that take the
// step's tasks in order, not on a goroutine each: starting a goroutine
// (and growing its stack to a node's depth) was most of what a parallel
// task cost beyond a chain's node. A step starts as many workers as the
// process has processors (GOMAXPROCS), fewer with WithMaxConcurrency, so
// CPU-bound tasks keep every processor busy and no more.
//
// A node that blocks (a model call, a channel, a sibling it waits for)
// must not hold up the tasks queued behind it. A node whose last parallel
// task ran for slowTask or longer is marked slow, and a step with a slow
// node's task starts a goroutine per task at once, as before the workers:
// next to a millisecond, a goroutine costs nothing. The mark goes when one
// of its tasks is quick again. For a node not yet marked, the loop's
// goroutine, which
// waits for the step anyway, checks on the workers every stallTick: when
// none of them took a new task since the step started or since the last
// check while tasks are still queued, they are all stuck, and every queued task gets a worker of its
// own (today's goroutine per task, up to WithMaxConcurrency). A step of
// quick tasks never waits for the check; a step of slow ones starts its
// queued tasks one tick later than a goroutine each would.
var stallTick = 100 * time.Microsecond // a variable so tests can rule stalls out

// slowTask is how long a parallel task runs before its node is marked slow.
// Go's timers wake an idle process in whole milliseconds, so the stall
// check costs a blocking step about that much: a node that blocks pays it
// on its first parallel step, not on every one.
var slowTask = time.Millisecond // a variable for tests, as stallTick

// stepSync coordinates the parallel tasks of one step.
type stepSync struct {
	tasks  []*task
	cancel context.CancelCauseFunc
	first  atomic.Pointer[task] // the first task to fail
	next   atomic.Int64         // the next task to take: tasks taken so far
	live   atomic.Int64         // workers running; the last to stop signals done
	done   chan struct{}        // gets one value when every task has stopped and every worker with it
	skip   bool                 // a task taken after the step was cancelled does not run
}

// runParallel runs a step's tasks on workers and delivers their events
// until every task and worker has stopped. The first failure cancels the
// step's context.
func (r *run) runParallel(base context.Context, tasks []*task) error {
	ctx, cancel := context.WithCancelCause(base)
	defer cancel(nil)
	if r.kinds != 0 {
		r.evch = make(chan Event) // tasks (and nested runs) emit through it
	}
	n := 0 // room for the tasks' encoded writes, by idx
	for _, t := range tasks {
		t.Context = ctx
		n = max(n, int(t.idx)+1)
	}
	if r.cfg.saver != nil { // the tasks' pending writes are saved (see encodedWrite)
		r.b.pw = slices.Grow(r.b.pw[:0], n)[:n]
		clear(r.b.pw) // an earlier step's, if its commit did not apply them
	}
	// The step's bookkeeping, its workers' function and its timer are the
	// run's, reused from step to step (and run to run, with the buffers):
	// when done receives, no worker touches st any more.
	r.b.parallel()
	st := &r.b.step
	st.tasks, st.cancel, st.skip = tasks, cancel, false
	st.first.Store(nil)
	st.next.Store(0)
	defer func() { st.tasks, st.cancel = nil, nil }()
	limit := len(tasks)
	if r.cfg.maxConc > 0 && r.cfg.maxConc < limit {
		limit = r.cfg.maxConc
		st.skip = true // as a task that waited for a slot did
	}
	workers := min(limit, runtime.GOMAXPROCS(0))
	for _, t := range tasks {
		if t.node.slow.Load() {
			workers = limit
			break
		}
	}
	st.live.Store(int64(workers))
	work := r.b.workGrown // a few workers, each taking task after task
	if workers > runtime.GOMAXPROCS(0) {
		work = r.b.work // a goroutine per task of a slow node: as small as it can be
	}
	for range workers {
		go work()
	}
	var tick *time.Timer
	var tickC <-chan time.Time
	if workers < limit {
		if r.b.tick == nil {
			r.b.tick = time.NewTimer(stallTick)
		} else {
			r.b.tick.Reset(stallTick)
		}
		tick = r.b.tick
		tickC = tick.C
		defer tick.Stop()
	}
	taken := int64(workers) // what the first workers take at once
	// The loop wakes for events, for the stall check and once at the end,
	// not once per task.
	for running := true; running; {
		select {
		case ev := <-r.evch:
			r.deliver(ev)
		case <-tickC:
			now := st.next.Load()
			if now >= int64(len(tasks)) {
				tickC = nil // every task has a worker
				continue
			}
			if now == taken { // no worker took a task for a whole tick
				more := min(int64(len(tasks))-now, int64(limit-workers))
				if st.grow(more) {
					for range more {
						go r.b.work()
					}
					workers += int(more)
				}
				if workers >= limit {
					tickC = nil
					continue
				}
			}
			taken = now
			tick.Reset(stallTick)
		case <-st.done:
			running = false
		}
	}
	r.evch = nil
	for _, t := range tasks {
		if !t.skipped {
			r.runCounts()[t.node.idx]++
		}
	}
	if f := st.first.Load(); f != nil {
		return f.err
	}
	return nil
}

// grow adds n workers to the count of those running, unless all have
// stopped already (then every task was taken and done signalled).
func (st *stepSync) grow(n int64) bool {
	for {
		l := st.live.Load()
		if l == 0 {
			return false
		}
		if st.live.CompareAndSwap(l, l+n) {
			return true
		}
	}
}

// worker runs the step's tasks, taking the next one in order until none is
// left. The last worker to stop signals done (which has room for it).
func (r *run) worker(st *stepSync) {
	defer func() {
		if st.live.Add(-1) == 0 {
			st.done <- struct{}{}
		}
	}()
	var at time.Duration // when the last task ended, if the next starts then
	for {
		i := st.next.Add(1) - 1
		if i >= int64(len(st.tasks)) {
			return
		}
		at = r.runOne(st.tasks[i], st, at)
	}
}

// runOne runs one task of a parallel step on a worker. The first task to
// fail cancels its siblings; under WithMaxConcurrency, a task not started
// when that happens does not run.
//
// A task's duration starts at at, when the worker's previous task ended,
// if nothing that can wait ran since (0: read the clock): between two tasks
// a worker without a saver, task events or an observer only updates a
// flag and takes the next task, so one clock reading serves as the end of
// one task and the start of the next (two readings were a tenth of a
// task's CPU time). runOne returns the end of t on those terms.
func (r *run) runOne(t *task, st *stepSync, at time.Duration) time.Duration {
	if st.skip && t.Err() != nil {
		t.skipped = true
		return 0
	}
	if at == 0 {
		at = monotonic()
	}
	end := r.execAt(t, at)
	if slow := t.dur >= slowTask; t.node.slow.Load() != slow {
		t.node.slow.Store(slow)
	}
	if err := r.saveTask(t); err != nil && t.err == nil {
		t.err = err
	}
	if t.err != nil && st.first.CompareAndSwap(nil, t) {
		st.cancel(t.err)
	}
	if r.wants(EventTaskEnd) {
		t.emit(Event{Kind: EventTaskEnd, Task: t.endInfo()})
	}
	if t.err != nil || r.cfg.saver != nil || r.wants(EventTaskEnd) || r.observer() != nil {
		return 0 // it may have waited: the next task reads the clock
	}
	return end
}
