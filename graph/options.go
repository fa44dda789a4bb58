package graph

import (
	"strings"
	"time"

	"github.com/trellis-agents/trellis/cache"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/store"
)

// DefaultStepLimit is the step limit of a run that sets none with
// WithStepLimit. It is generous for agent loops (a ReAct turn takes two
// steps) and still stops a graph that loops forever within seconds.
const DefaultStepLimit = 100

// RunOption configures a run. Options given to Compile apply to every run;
// options given to Invoke or Stream come after them and win.
type RunOption interface{ applyRun(*runConfig) }

type runOptionFunc func(*runConfig)

func (f runOptionFunc) applyRun(c *runConfig) { f(c) }

type runConfig struct {
	stepLimit  int
	timeout    time.Duration
	maxConc    int
	control    *Control
	saver      checkpoint.Saver
	thread     string
	store      store.Store
	events     EventKind
	eventsSet  bool
	runID      string
	x          *rareConfig // options few runs use; see rare and get
	durability Durability
	saverSet   bool // WithCheckpointer was given (a nested run's saver may differ from its parent's)
}

// WithCheckpointID starts from this checkpoint of the thread instead of its
// latest: Invoke with a nil input replays from it (the steps before it are
// not executed again; new checkpoints branch off it), Invoke with an input
// applies it there (a branch: from a run's pre-input checkpoint, the parent
// of the one where its input first appears, this edits that input),
// GetState reads it, and UpdateState forks from it. Stateful subgraphs
// follow the branch (see Stateful).
func WithCheckpointID(id string) RunOption {
	return runOptionFunc(func(c *runConfig) { c.rare().checkpointID = id })
}

// rareConfig holds the options few runs use, kept out of every run's
// config.
type rareConfig struct {
	resume         any
	resumeOne      bool
	resumeMap      map[string]any
	before, after  []string
	checkpointID   string
	subgraphStates bool
	command        *Command
	runCtx         any
	runCtxSet      bool
	cache          cache.Cache
	namespace      string
	observer       Observer
	finalWrite     func(*FinalWrite)
	start          *startCheckpoint // see WithStartCheckpoint
	noNested       bool             // see WithoutSubgraphEvents
}

var noRare rareConfig // read-only: what get returns when no rare option was set

// rare returns the rare options for writing, allocating them.
func (c *runConfig) rare() *rareConfig {
	if c.x == nil {
		c.x = &rareConfig{}
	}
	return c.x
}

// get returns the rare options for reading.
func (c *runConfig) get() *rareConfig {
	if c.x == nil {
		return &noRare
	}
	return c.x
}

// WithStepLimit sets the most supersteps one run may take. A run counts one
// step for each superstep it executes (applying the input is not a step; a
// step runs every ready task in parallel, so a fan-out of 100 nodes is one
// step). A run that would start step limit+1 fails with a *StepLimitError.
// The default is DefaultStepLimit; n must be at least 1.
func WithStepLimit(n int) RunOption {
	return runOptionFunc(func(c *runConfig) { c.stepLimit = n })
}

// WithTimeout bounds the whole run; when it expires the run's context is
// cancelled and the run fails with context.DeadlineExceeded.
func WithTimeout(d time.Duration) RunOption {
	return runOptionFunc(func(c *runConfig) { c.timeout = d })
}

// WithMaxConcurrency bounds how many tasks of one step run at once; 0 (the
// default) bounds nothing. Either way a step's tasks start on as many
// goroutines as there are processors (GOMAXPROCS), and when all of those
// are still busy a moment later (blocked on a model call, say), every
// queued task gets a goroutine of its own, up to the bound.
func WithMaxConcurrency(n int) RunOption {
	return runOptionFunc(func(c *runConfig) { c.maxConc = n })
}

// WithControl attaches a run-control handle (see Control).
func WithControl(ctl *Control) RunOption {
	return runOptionFunc(func(c *runConfig) { c.control = ctl })
}

// WithCheckpointer saves a checkpoint after every step into s, under the
// thread given by WithThread. When the thread already has checkpoints the
// run continues from the latest one: with a nil input it resumes the tasks
// that were next; with an input it applies the input on top of the saved
// state and starts again from START.
func WithCheckpointer(s checkpoint.Saver) RunOption {
	return runOptionFunc(func(c *runConfig) { c.saver, c.saverSet = s, true })
}

// WithThread names the thread whose checkpoints the run reads and writes.
func WithThread(id string) RunOption {
	return runOptionFunc(func(c *runConfig) { c.thread = id })
}

// WithStore gives nodes a long-term store, read with StoreFrom.
func WithStore(s store.Store) RunOption {
	return runOptionFunc(func(c *runConfig) { c.store = s })
}

// WithEvents chooses the event kinds Stream yields (DefaultEvents unless
// set). Kinds not chosen cost nothing.
func WithEvents(kinds EventKind) RunOption {
	return runOptionFunc(func(c *runConfig) { c.events, c.eventsSet = kinds, true })
}

// WithRunID sets the run's ID, recorded in checkpoint metadata; by default
// each run gets a new one.
func WithRunID(id string) RunOption {
	return runOptionFunc(func(c *runConfig) { c.runID = id })
}

// inherit starts a nested run's configuration from its parent task's run:
// a subgraph (or a graph invoked from a node) checkpoints in its own
// namespace of the parent's thread with the parent's saver, store,
// durability, step limit and run ID, and stops at the parent's breakpoints
// that name its nodes by path ("parent/child"). The subgraph's own compile
// options and the nested Invoke's options are applied after, and win.
func (c *runConfig) inherit(pt *task) {
	p := &pt.r.cfg
	c.saver, c.thread, c.store = p.saver, p.thread, p.store
	c.durability, c.stepLimit, c.runID = p.durability, p.stepLimit, p.runID
	if pc := p.get().cache; pc != nil {
		c.rare().cache = pc
	}
	if o := p.get().observer; o != nil {
		c.rare().observer = o
	}
	prefix := pt.node.name + "/"
	for _, f := range p.get().before {
		if rest, ok := strings.CutPrefix(f, prefix); ok {
			c.rare().before = append(c.rare().before, rest)
		}
	}
	for _, f := range p.get().after {
		if rest, ok := strings.CutPrefix(f, prefix); ok {
			c.rare().after = append(c.rare().after, rest)
		}
	}
}
