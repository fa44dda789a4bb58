package graph

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// Status is where a run stands.
type Status uint8

// Run statuses.
const (
	StatusPending     Status = iota // not started
	StatusRunning                   // executing steps
	StatusPaused                    // stopped at a step boundary until Resume
	StatusCompleted                 // no task left to run
	StatusCancelled                 // aborted, or its context was cancelled
	StatusFailed                    // a task or the engine failed
	StatusInterrupted               // waiting for a person's answer
)

var statusNames = [...]string{"pending", "running", "paused", "completed", "cancelled", "failed", "interrupted"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// ErrAborted is the error of a run stopped by Control.Abort.
var ErrAborted = errors.New("graph: run aborted")

// Control pauses, resumes and aborts a run from any goroutine, and reports
// its status and step count. Attach it with WithControl. A Control serves one
// run at a time; attaching it to a second run while the first is going fails
// that second run.
//
// Pause and Resume act at step boundaries: a step in progress finishes and
// commits first. Abort cancels the run's context at once; the step in
// progress is discarded and the last committed checkpoint is kept.
type Control struct {
	mu      sync.Mutex
	status  Status
	steps   int
	paused  bool
	aborted bool
	busy    bool
	cancel  context.CancelCauseFunc
	wake    chan struct{}
}

// NewControl returns a Control for one run.
func NewControl() *Control { return &Control{wake: make(chan struct{}, 1)} }

func (c *Control) notify() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Pause asks the run to stop at the next step boundary.
func (c *Control) Pause() {
	c.mu.Lock()
	c.paused = true
	c.mu.Unlock()
	c.notify()
}

// Resume lets a paused run go on (or cancels a pause not yet reached).
func (c *Control) Resume() {
	c.mu.Lock()
	c.paused = false
	c.mu.Unlock()
	c.notify()
}

// Abort stops the run: its context is cancelled, the step in progress is
// discarded, and Invoke returns ErrAborted. Aborting before the run starts
// makes it stop before its first step.
func (c *Control) Abort() {
	c.mu.Lock()
	c.aborted = true
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel(ErrAborted)
	}
	c.notify()
}

// Status reports the run's status.
func (c *Control) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

// Steps reports how many steps the run has committed.
func (c *Control) Steps() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.steps
}

func (c *Control) attach(cancel context.CancelCauseFunc) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.busy {
		return errors.New("graph: this Control is attached to a run that is still going; use one Control per run")
	}
	c.busy, c.cancel, c.status, c.steps = true, cancel, StatusRunning, 0
	if c.aborted {
		cancel(ErrAborted)
	}
	return nil
}

func (c *Control) detach(s Status) {
	c.mu.Lock()
	c.busy, c.cancel, c.status = false, nil, s
	c.mu.Unlock()
}

func (c *Control) committed(steps int) {
	c.mu.Lock()
	c.steps = steps
	c.mu.Unlock()
}

// boundary blocks while the run is paused. It returns an error when the run
// is aborted or its context ends.
func (c *Control) boundary(ctx context.Context) error {
	for {
		c.mu.Lock()
		switch {
		case c.aborted:
			c.mu.Unlock()
			return ErrAborted
		case !c.paused:
			c.status = StatusRunning
			c.mu.Unlock()
			return nil
		}
		c.status = StatusPaused
		c.mu.Unlock()
		select {
		case <-c.wake:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}
