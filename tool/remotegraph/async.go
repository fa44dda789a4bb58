package remotegraph

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/trellis-agents/trellis/graph"
)

// RunStatus is what Status reads of a run started with Start.
type RunStatus struct {
	// Status is the run's status on the server: "pending", "running",
	// "success", "error", "timeout" or "interrupted".
	Status string
	// Text is the text of the last message the thread holds.
	Text string
	// Error is the server's error message for a failed run.
	Error string
	// Interrupt is the payload the thread waits on an answer for (nil
	// when it waits on none).
	Interrupt json.RawMessage
}

// Done reports whether the run has ended (successfully or not).
func (s RunStatus) Done() bool {
	switch s.Status {
	case "pending", "running", "":
		return false
	}
	return true
}

// Start makes sure thread exists on the server and starts a run of the
// assistant on it with input, without waiting for it: a background run
// the caller follows with Status and stops with Cancel. strategy is the
// run's multitask strategy when the thread is busy ("" for the server's
// default, "interrupt" to stop the current run and go on with this
// input, "enqueue" to run after it). Call Start inside graph.Durable when
// a re-run must not start another run. Inside a graph node, the run is
// tagged with a key of the task, the thread and the request (MetaRunKey),
// and Start returns a run of the thread with that key instead of starting
// another: a re-run whose durable step was not saved (the process died
// after the server created the run) joins that run, and two identical
// Starts in one task start one run.
func (a *Agent) Start(ctx context.Context, thread string, input any, strategy string) (runID string, err error) {
	if thread == "" {
		return "", &Error{Agent: a.cfg.Name, Op: "start a run", Err: errors.New("the thread ID is empty")}
	}
	if err := a.do(ctx, "POST", "/threads", map[string]any{"thread_id": thread, "if_exists": "do_nothing", "metadata": map[string]any{"caller": a.cfg.Name}}, nil, "create the thread"); err != nil {
		return "", err
	}
	body := map[string]any{"assistant_id": a.cfg.Assistant, "input": input}
	if strategy != "" {
		body["multitask_strategy"] = strategy
	}
	key := ""
	if task := graph.TaskID(ctx); task != "" {
		req, err := json.Marshal(body)
		if err != nil {
			return "", &Error{Agent: a.cfg.Name, Op: "start a run", Err: err}
		}
		key = runKey("start", a.cfg.Name, graph.ThreadID(ctx), graph.Namespace(ctx), task, thread, string(req))
	}
	return a.createRun(ctx, thread, body, key)
}

// Status reads a run's status and its thread's last message and pending
// interrupt, without waiting.
func (a *Agent) Status(ctx context.Context, thread, run string) (RunStatus, error) {
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	if err := a.do(ctx, "GET", "/threads/"+thread+"/runs/"+run, nil, &r, "read the run"); err != nil {
		return RunStatus{}, err
	}
	s := RunStatus{Status: r.Status, Error: r.Error}
	if !s.Done() {
		return s, nil
	}
	o, err := a.stateOf(ctx, thread)
	if err != nil {
		return RunStatus{}, err
	}
	s.Text, s.Interrupt = lastText(o.Values), o.Interrupt
	return s, nil
}

// stateOf reads a thread's values and first pending interrupt.
func (a *Agent) stateOf(ctx context.Context, thread string) (outcome, error) {
	var st struct {
		Values     json.RawMessage `json:"values"`
		Interrupts []struct {
			Value json.RawMessage `json:"value"`
		} `json:"interrupts"`
	}
	if err := a.do(ctx, "GET", "/threads/"+thread+"/state", nil, &st, "read the thread's state"); err != nil {
		return outcome{}, err
	}
	o := outcome{Values: st.Values, Interrupts: len(st.Interrupts)}
	if len(st.Interrupts) > 0 {
		o.Interrupt = st.Interrupts[0].Value
	}
	return o, nil
}

// Cancel stops a run that has not ended (action "interrupt": the thread
// keeps what the run did so far) and waits until it has; a run that
// already ended is left as it is.
func (a *Agent) Cancel(ctx context.Context, thread, run string) error {
	s, err := a.Status(ctx, thread, run)
	if err != nil || s.Done() {
		return err
	}
	return a.do(ctx, "POST", "/threads/"+thread+"/runs/"+run+"/cancel?action=interrupt&wait=true", nil, nil, "cancel the run")
}
