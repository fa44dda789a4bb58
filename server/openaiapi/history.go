package openaiapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/internal/transcript"
	"github.com/trellis-agents/trellis/server/lcmsg"
)

// HistoryMessage is one entry of a thread's history on this wire: a chat
// message as the client sends them (user, assistant with its tool calls,
// tool), or, with trellis.kind "answer", what a person answered when the
// run waited for them — role user, the answer as readable text ("Rejected
// book_venue: over budget"), the structured answer in trellis.
type HistoryMessage struct {
	ID         string         `json:"id,omitempty"`
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	ToolCalls  []ChatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	// ReasoningContent is an assistant message's reasoning, when it kept
	// it.
	ReasoningContent string         `json:"reasoning_content,omitempty"`
	Trellis          *HistoryAnswer `json:"trellis,omitempty"`
}

// HistoryAnswer is the structured side of an answer in the history.
type HistoryAnswer struct {
	Kind string `json:"kind"` // "answer"
	// Outcome is answered, approved, edited, rejected, result or failed.
	Outcome     string          `json:"outcome"`
	InterruptID string          `json:"interrupt_id,omitempty"`
	RunID       string          `json:"run_id,omitempty"`
	Answer      json.RawMessage `json:"answer,omitempty"`
	// Asked is the value of the interrupt answered, as it was raised.
	Asked json.RawMessage `json:"asked,omitempty"`
}

// HistoryList is the answer of GET /v1/threads/{thread_id}/messages.
type HistoryList struct {
	Object   string           `json:"object"` // "list"
	ThreadID string           `json:"thread_id"`
	Data     []HistoryMessage `json:"data"`
}

// history answers GET /v1/threads/{thread_id}/messages (Trellis's own):
// the conversation as it happened, from the thread's transcript
// (server/internal/transcript, the same the web page shows): its
// messages and, where they were given, the answers to what the runs
// asked. Progress and reasoning of a plan's steps are not messages here.
func (h *Handler) history(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("thread_id")
	tenant := h.tenant(r)
	th, err := h.DB.GetThread(r.Context(), tenant, id)
	if errors.Is(err, db.ErrNotFound) {
		(&apiError{status: http.StatusNotFound, typ: "invalid_request_error", param: "thread_id", code: "thread_not_found", msg: "no thread " + id}).write(w)
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	turns, err := transcript.Build(r.Context(), h.DB, h.Saver, tenant, th)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	out := HistoryList{Object: "list", ThreadID: th.ID, Data: historyOf(turns)}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// historyOf turns a transcript into the wire's history.
func historyOf(turns []transcript.Turn) []HistoryMessage {
	out := []HistoryMessage{}
	for _, t := range turns {
		switch t.Kind {
		case transcript.KindAnswer:
			out = append(out, HistoryMessage{Role: "user", Content: t.Text, Trellis: &HistoryAnswer{Kind: "answer", Outcome: t.Outcome,
				InterruptID: t.InterruptID, RunID: t.RunID, Answer: t.Answer, Asked: t.Asked}})
		case transcript.KindMessage:
			var m struct {
				ID        string          `json:"id"`
				Type      string          `json:"type"`
				Content   json.RawMessage `json:"content"`
				ToolCalls []struct {
					ID   string          `json:"id"`
					Name string          `json:"name"`
					Args json.RawMessage `json:"args"`
				} `json:"tool_calls"`
				ToolCallID string `json:"tool_call_id"`
				Kwargs     struct {
					Reasoning string `json:"reasoning_content"`
				} `json:"additional_kwargs"`
			}
			if json.Unmarshal(t.Message, &m) != nil {
				continue
			}
			hm := HistoryMessage{ID: m.ID, Content: lcmsg.Text(m.Content)}
			switch m.Type {
			case "human":
				hm.Role = "user"
			case "ai", "AIMessageChunk":
				hm.Role, hm.ReasoningContent = "assistant", m.Kwargs.Reasoning
				for _, c := range m.ToolCalls {
					args := string(c.Args)
					if args == "" || args == "null" {
						args = "{}"
					}
					hm.ToolCalls = append(hm.ToolCalls, ChatToolCall{ID: c.ID, Type: "function", Function: ChatFunctionCall{Name: c.Name, Arguments: args}})
				}
			case "tool":
				hm.Role, hm.ToolCallID = "tool", m.ToolCallID
			default:
				continue
			}
			out = append(out, hm)
		}
	}
	return out
}
