package llm

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/trellis-agents/trellis/graph"
)

// NewMessagesKey declares a graph state key holding a chat history. Its
// reducer merges by message ID: writing a message with a known ID replaces
// it in place (an edited tool call, a repaired result), a new ID appends,
// and graph.Remove deletes by ID.
func NewMessagesKey(name string) *graph.Key[[]Message] {
	return graph.NewKey(name, graph.MergeByIDFunc(func(m Message) string { return m.ID }))
}

// Call asks m for a reply the way a graph node should:
//
//   - the history is repaired first (see RepairHistory), so a call that
//     was interrupted or cancelled, or a malformed call a model made,
//     never makes the provider reject the request;
//   - a tool call of the reply whose ID is missing, malformed or already
//     used in the history gets a fresh ID (NewCallID), so every call can
//     be routed and recorded apart; its name and arguments are left as
//     the model wrote them, for the tool node to answer with an error the
//     model can correct;
//   - when the run streams messages (graph.EventMessages), the reply is
//     streamed and its tokens go to the graph's stream as they arrive,
//     tagged with the node, namespace and the reply's message ID, reasoning
//     and answer text marked apart; otherwise Generate is used;
//   - the reply is bounded by the model's Limits (LimitsOf): a longer one
//     fails with a *LimitError instead of growing without end;
//   - the reply's usage is recorded on the running task (graph.RecordUsage).
//
// Outside a graph node Call simply repairs and generates. Errors name the
// model; APIErrors from providers already do.
func Call(ctx context.Context, m Model, req *Request) (resp *Response, err error) {
	ctx, end := graph.Observe(ctx, graph.Op{Kind: graph.OpModelCall, Model: m.Name()})
	defer func() {
		if err != nil || resp == nil { // resp is nil too when the model panicked
			end(graph.OpEnd{Err: err})
			return
		}
		end(graph.OpEnd{Usage: resp.Usage, FinishReason: string(resp.FinishReason), ResponseModel: resp.Model})
	}()
	history := req.Messages
	if fixed, changed := repair(req.Messages); changed {
		req = req.Clone()
		req.Messages = fixed
	}
	if w := graph.Messages(ctx); w.Enabled() {
		resp, err = streamTo(ctx, m, req, w)
	} else {
		resp, err = m.Generate(ctx, req)
		if err == nil && resp == nil {
			err = errors.New("Generate returned neither a reply nor an error")
		}
		if err == nil {
			err = LimitsOf(m).CheckResponse(resp, m.Name())
		}
		if err == nil && resp.Message.ID == "" {
			resp.Message.ID = NewID()
		}
	}
	if err != nil {
		_, api := errors.AsType[*APIError](err)
		_, limit := errors.AsType[*LimitError](err)
		if !api && !limit {
			err = fmt.Errorf("llm: model %s: %w", m.Name(), err)
		}
		return nil, err
	}
	fixReplyIDs(&resp.Message, history)
	if resp.Usage.Requests == 0 {
		resp.Usage.Requests = 1
	}
	graph.RecordUsage(ctx, resp.Usage)
	return resp, nil
}

func streamTo(ctx context.Context, m Model, req *Request, w graph.MessageWriter) (*Response, error) {
	a := Assembler{ID: NewID(), Limits: LimitsOf(m), Model: m.Name()}
	voice := VoiceOf(ctx)
	meta := func(m map[string]string) map[string]string {
		if voice == "" {
			return m
		}
		if m == nil {
			m = map[string]string{}
		}
		m[MetaVoice] = voice
		return m
	}
	for c, err := range m.Stream(ctx, req) {
		if err != nil {
			return nil, err
		}
		if err := a.Add(c); err != nil {
			return nil, err // breaking off the stream stops the request
		}
		if c.Reasoning != "" {
			w.Write(graph.MessageChunk{MessageID: a.ID, Part: graph.PartReasoning, Text: c.Reasoning, Meta: meta(nil)})
		}
		if c.Text != "" {
			w.Write(graph.MessageChunk{MessageID: a.ID, Part: graph.PartText, Text: c.Text, Meta: meta(nil)})
		}
		for _, d := range c.ToolCalls {
			cm := map[string]string{"index": strconv.Itoa(d.Index)}
			if d.ID != "" {
				cm["call_id"] = d.ID
			}
			if d.Name != "" {
				cm["name"] = d.Name
			}
			w.Write(graph.MessageChunk{MessageID: a.ID, Part: graph.PartToolCall, Text: d.Arguments, Meta: meta(cm)})
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	return a.Response(), nil
}
