package openaiapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/trellis-agents/trellis/server/db"
)

// sse writes a streamed completion: "data: {chunk}" events, then
// "data: [DONE]".
type sse struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	id      string
	model   string
	created int64
	buf     bytes.Buffer
	started bool
}

func newSSE(w http.ResponseWriter, id, model string, created int64) *sse {
	return &sse{w: w, rc: http.NewResponseController(w), id: id, model: model, created: created}
}

func (s *sse) header() {
	if s.started {
		return
	}
	s.started = true
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
}

func (s *sse) send(v any) {
	s.header()
	s.buf.Reset()
	s.buf.WriteString("data: ")
	_ = json.NewEncoder(&s.buf).Encode(v) // ends with \n
	s.buf.WriteByte('\n')
	_, _ = s.w.Write(s.buf.Bytes())
	_ = s.rc.Flush()
}

// chunk sends one chunk with delta d (and ext, when set).
func (s *sse) chunk(d Delta, finish *string, ext *Extension) {
	s.send(ChatChunk{ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.model,
		Choices: []ChunkChoice{{Delta: d, FinishReason: finish}}, Trellis: ext})
}

// end sends the last chunk (finish_reason stop, or tool_calls when the
// run waits for client tool results, with the status and the interaction), the usage chunk when asked, and [DONE].
func (s *sse) end(ext *Extension, includeUsage bool, usage *ChatUsage) {
	stop := "stop"
	if ext.Status == "tool_calls" {
		stop = "tool_calls"
	}
	s.chunk(Delta{}, &stop, &Extension{ThreadID: ext.ThreadID, RunID: ext.RunID, Status: ext.Status, Interaction: ext.Interaction})
	if includeUsage {
		if usage == nil {
			usage = &ChatUsage{}
		}
		s.send(ChatChunk{ID: s.id, Object: "chat.completion.chunk", Created: s.created, Model: s.model, Choices: []ChunkChoice{}, Usage: usage})
	}
	s.done()
}

func (s *sse) done() {
	s.header()
	_, _ = s.w.Write([]byte("data: [DONE]\n\n"))
	_ = s.rc.Flush()
}

// fail sends an error where OpenAI's SDKs look for one in a stream.
func (s *sse) fail(e *apiError) {
	d := ErrorDetail{Message: e.msg, Type: e.typ}
	if e.code != "" {
		d.Code = &e.code
	}
	s.send(ErrorResponse{Error: d})
	s.done()
}

// stream serves a streamed turn: a first chunk with the role and the
// thread, the answer and reasoning as they come, progress as chunks with
// an empty delta and the event in the extension, then the end.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, ct chatTurn, tg target, run db.Run) {
	// The status is known at the end: a trailer, and the last chunk.
	w.Header().Set(HeaderThread, tg.ThreadID)
	w.Header().Set("Trailer", HeaderStatus)
	s := newSSE(w, "chatcmpl-"+run.ID, ct.req.Model, run.CreatedAt.Unix())
	if run.CreatedAt.IsZero() {
		s.created = time.Now().Unix()
	}
	s.chunk(Delta{Role: "assistant"}, nil, &Extension{ThreadID: tg.ThreadID, RunID: run.ID})
	ctx, tenant := r.Context(), h.tenant(r)
	out, err := h.follow(ctx, tenant, run, func(d Delta, ev *ProgressEvent) {
		if ev != nil {
			s.chunk(Delta{}, nil, &Extension{Event: ev})
			return
		}
		s.chunk(d, nil, nil)
	})
	if err != nil {
		if ctx.Err() == nil {
			s.fail(h.internal(r, err))
		}
		return
	}
	if out.runErr != "" {
		s.fail(&apiError{typ: "server_error", code: "run_failed", msg: fmt.Sprintf("the run %s on thread %s failed: %s", run.ID, tg.ThreadID, out.runErr)})
		return
	}
	h.finish(ctx, tenant, ct, tg, &out)
	w.Header().Set(HeaderStatus, out.ext.Status)
	if len(out.toolCalls) > 0 {
		s.chunk(Delta{ToolCalls: out.toolCalls}, nil, nil)
	}
	s.end(&out.ext, ct.req.StreamOptions != nil && ct.req.StreamOptions.IncludeUsage, out.usage)
}
