package remotegraph

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	a2atool "github.com/trellis-agents/trellis/tool/a2a"
)

// StreamModes are the stream modes a call asks the remote run for, so
// its events can be joined and passed on (see Event).
var StreamModes = []string{"values", "updates", "messages-tuple", "custom"}

// Kinds of the events a call passes on from the remote run's stream.
const (
	// KindRun is the remote run's lifecycle: Status "created", then how
	// it ended ("success", "interrupted", "error", ...).
	KindRun = "remote_run"
	// KindNode says a node of the remote graph finished (updates mode):
	// Node names it.
	KindNode = "remote_node"
	// KindMessage is a chunk of a message the remote graph streams
	// (messages-tuple mode): Text, with Append false on a message's first
	// chunk.
	KindMessage = "remote_message"
	// KindCustom is a custom event of the remote graph: Data is its value.
	KindCustom = "remote_custom"
)

// MetaThread is the MessageChunk.Meta key naming the remote thread a
// streamed chunk came from.
const MetaThread = "remote_thread_id"

// Limits of what a joined stream may hold: one SSE line (a values event
// carries the remote's whole state), and a custom event's data passed on.
const (
	maxStreamLine = 16 << 20
	maxCustomData = 64 << 10
)

// sseEvent is one dispatched server-sent event.
type sseEvent struct {
	id, name string
	data     []byte
}

// readSSE calls fn with each event of r until r ends, fn fails, or a line
// is longer than maxStreamLine. Comment lines are skipped; a partial
// event at the end is dropped.
func readSSE(r io.Reader, fn func(sseEvent) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxStreamLine)
	var ev sseEvent
	var data bytes.Buffer
	has := false
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if has {
				ev.data = bytes.TrimSuffix(data.Bytes(), []byte("\n"))
				if err := fn(ev); err != nil {
					return err
				}
			}
			ev, has = sseEvent{id: ev.id}, false
			data.Reset()
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.name = string(value)
		case "data":
			data.Write(value)
			data.WriteByte('\n')
			has = true
		case "id":
			ev.id = string(value)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("a line of the remote's stream is longer than %d bytes", maxStreamLine)
		}
		return err
	}
	return nil
}

// errStreamCut is a joined stream that ended without its end event.
var errStreamCut = errors.New("the stream ended before the run did")

// Defaults of how often a round saves the last event it passed on (see
// Config.SaveEvery and Config.SaveInterval).
const (
	DefaultSaveEvery    = 100
	DefaultSaveInterval = time.Second
)

// mark is a durable step of a round: where the round's stream stood (the
// last event id passed on, the message being streamed) while the run
// went on (Partial), or how the run ended. A round is a series of marks
// under one step name ended by its outcome, so a node that runs again
// after a crash rejoins the stream after the last saved mark instead of
// from the start. An outcome saved by an earlier version (one step per
// round) reads as a mark without Partial: the round's end.
type mark struct {
	outcome
	Partial bool   `json:"partial,omitempty"`
	Seen    string `json:"seen,omitempty"`
	MsgID   string `json:"msg_id,omitempty"`
}

// joiner follows one remote run's event stream (GET
// /threads/{thread}/runs/{run}/stream) across the marks of a round,
// passing its events on as custom events of the local run. Its connection
// stays open from one mark to the next. A stream cut short is joined
// again after the last event seen (Last-Event-ID), a few times; a server
// that cannot stream a joined run is waited on with /join instead.
type joiner struct {
	a           *Agent
	thread, run string
	last        string // the id of the last event passed on; "-1": from the start
	pass        passer
	conn        *conn
	attempt     int
}

// conn is one open connection of the stream, read by its own goroutine.
type conn struct {
	events chan sseEvent
	err    error // read after events is closed: nil when the run ended
	cancel context.CancelFunc
	done   chan struct{}
}

func (a *Agent) joiner(thread, run string) *joiner {
	return &joiner{a: a, thread: thread, run: run, last: "-1", pass: passer{a: a, thread: thread, run: run}}
}

// open joins the stream after j.last.
func (j *joiner) open(ctx context.Context) *conn {
	cctx, cancel := context.WithCancel(ctx)
	c := &conn{events: make(chan sseEvent), cancel: cancel, done: make(chan struct{})}
	last := j.last
	go func() {
		defer close(c.done)
		c.err = j.a.joinStream(cctx, j.thread, j.run, last, func(ev sseEvent) error {
			ev.data = slices.Clone(ev.data) // the reader reuses its buffer
			select {
			case c.events <- ev:
				return nil
			case <-cctx.Done():
				return cctx.Err()
			}
		})
		close(c.events)
	}()
	return c
}

// close drops the open connection, waiting for its reader to end.
func (j *joiner) close() {
	if j.conn != nil {
		j.conn.cancel()
		for range j.conn.events {
		}
		<-j.conn.done
		j.conn = nil
	}
}

// step passes events on until the run ends (the outcome) or until
// SaveEvery events, or SaveInterval after the first of them, were passed
// on (a Partial mark to save).
func (j *joiner) step(ctx context.Context) (mark, error) {
	every, interval := j.a.cfg.SaveEvery, j.a.cfg.SaveInterval
	if every <= 0 {
		every = DefaultSaveEvery
	}
	if interval <= 0 {
		interval = DefaultSaveInterval
	}
	var due <-chan time.Time
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	n := 0
	partial := func() mark { return mark{Partial: true, Seen: j.last, MsgID: j.pass.msgID} }
	for {
		if j.conn == nil {
			j.conn = j.open(ctx)
		}
		select {
		case <-ctx.Done():
			return mark{}, ctx.Err()
		case <-due:
			return partial(), nil
		case ev, ok := <-j.conn.events:
			if !ok {
				<-j.conn.done
				err := j.conn.err
				j.conn = nil
				if err == nil {
					o, err := j.a.ended(ctx, j.thread, j.run)
					return mark{outcome: o}, err
				}
				if ctx.Err() != nil {
					return mark{}, ctx.Err()
				}
				if e, ok := errors.AsType[*Error](err); ok && e.status/100 == 4 && e.status != http.StatusTooManyRequests {
					// No joinable stream here (an old server, a run that
					// kept no events): wait for the run's end instead.
					if err := j.a.do(ctx, "GET", "/threads/"+j.thread+"/runs/"+j.run+"/join", nil, nil, "join the run"); err != nil {
						return mark{}, err
					}
					o, err := j.a.ended(ctx, j.thread, j.run)
					return mark{outcome: o}, err
				}
				if j.attempt++; j.attempt > 4 {
					return mark{}, err
				}
				continue
			}
			if ev.id != "" {
				j.last = ev.id
			}
			if err := j.pass.event(ctx, ev); err != nil {
				return mark{}, err
			}
			if n++; n >= every {
				return partial(), nil
			}
			if n == 1 {
				timer = time.NewTimer(interval)
				due = timer.C
			}
		}
	}
}

// joinStream reads one connection of the run's stream.
func (a *Agent) joinStream(ctx context.Context, thread, run, lastID string, fn func(sseEvent) error) error {
	const op = "stream the run"
	req, err := a.request(ctx, "GET", "/threads/"+thread+"/runs/"+run+"/stream", nil)
	if err != nil {
		return &Error{Agent: a.cfg.Name, Op: op, Err: err}
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", lastID)
	resp, err := a.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return &Error{Agent: a.cfg.Name, Op: op, Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return &Error{Agent: a.cfg.Name, Op: op, status: resp.StatusCode, Err: fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(b))}
	}
	ended := false
	err = readSSE(resp.Body, func(ev sseEvent) error {
		if ev.name == "end" {
			ended = true
			return errEnd
		}
		return fn(ev)
	})
	switch {
	case ended:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return &Error{Agent: a.cfg.Name, Op: op, Err: err}
	}
	return &Error{Agent: a.cfg.Name, Op: op, Err: errStreamCut}
}

var errEnd = errors.New("end")

// passer turns the remote run's events into local custom events.
type passer struct {
	a           *Agent
	thread, run string
	msgID       string // the message whose chunks are being passed on
}

func (p *passer) emit(ctx context.Context, e Event) {
	e.Agent, e.ThreadID, e.RunID = p.a.cfg.Name, p.thread, p.run
	graph.Emit(ctx, e)
}

func (p *passer) event(ctx context.Context, ev sseEvent) error {
	base, _, _ := strings.Cut(ev.name, "|") // a subgraph's events: "updates|ns"
	switch base {
	case "updates":
		var u map[string]json.RawMessage
		if json.Unmarshal(ev.data, &u) != nil {
			return nil
		}
		for _, node := range slices.Sorted(maps.Keys(u)) {
			if strings.HasPrefix(node, "__") { // __interrupt__, __metadata__
				continue
			}
			p.emit(ctx, Event{Kind: KindNode, Node: node})
		}
	case "messages":
		var tuple []json.RawMessage
		if json.Unmarshal(ev.data, &tuple) != nil || len(tuple) == 0 {
			return nil
		}
		var m struct {
			ID      string          `json:"id"`
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(tuple[0], &m) != nil || (m.Type != "" && !strings.HasPrefix(m.Type, "AIMessage") && m.Type != "ai") {
			return nil
		}
		text := contentText(m.Content)
		if text == "" {
			return nil
		}
		p.emit(ctx, Event{Kind: KindMessage, MessageID: m.ID, Text: text, Append: m.ID != "" && m.ID == p.msgID})
		p.msgID = m.ID
		// The same words as the local run's message chunk, in the remote
		// agent's voice (see tool/a2a's MetaAgent): a client streaming
		// messages sees the remote answer as it comes, and the wires keep
		// it apart from the local answer.
		if w := graph.Messages(ctx); w.Enabled() {
			w.Write(graph.MessageChunk{MessageID: m.ID, Part: graph.PartText, Text: text,
				Meta: map[string]string{llm.MetaVoice: p.a.cfg.Name, a2atool.MetaAgent: p.a.cfg.Name, MetaThread: p.thread}})
		}
	case "custom":
		if len(ev.data) > maxCustomData {
			p.emit(ctx, Event{Kind: KindCustom, Text: fmt.Sprintf("(a custom event of %d bytes, not passed on)", len(ev.data))})
			return nil
		}
		p.emit(ctx, Event{Kind: KindCustom, Data: json.RawMessage(slices.Clone(ev.data))})
	case "error":
		// The run failed; its status, read next, says how.
	}
	return nil
}

// contentText is a message content's text: a string, or text parts.
func contentText(c json.RawMessage) string {
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(c, &parts)
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "" || p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}
