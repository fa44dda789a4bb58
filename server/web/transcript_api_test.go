package web_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// turn is a transcript entry as the API answers it.
type turn struct {
	Kind        string          `json:"kind"`
	RunID       string          `json:"run_id"`
	Text        string          `json:"text"`
	Outcome     string          `json:"outcome"`
	InterruptID string          `json:"interrupt_id"`
	Message     json.RawMessage `json:"message"`
	Data        json.RawMessage `json:"data"`
}

// pendingIDs reads the interrupts a thread waits on, by tool (approvals)
// or kind.
func pendingIDs(t *testing.T, url, thread string) map[string]string {
	t.Helper()
	var st struct {
		Interrupts []struct {
			ID    string         `json:"id"`
			Value map[string]any `json:"value"`
		} `json:"interrupts"`
	}
	call(t, url, "GET", "/threads/"+thread+"/state", nil, &st, 200)
	out := map[string]string{}
	for _, in := range st.Interrupts {
		key, _ := in.Value["tool"].(string)
		if key == "" {
			key, _ = in.Value["kind"].(string)
		}
		out[key] = in.ID
	}
	return out
}

// The trip flow through the LangGraph API, as any client drives it: the
// transcript has each answer where it was given (the choice, the form, the
// plan rejected with its comment then approved, one call rejected with its
// reason, one approved), the timeline of the plan's steps between them,
// and the messages, in order.
func TestTranscriptHasTheAnswersInOrder(t *testing.T) {
	tools := &ran{}
	url := serve(t, func(s register) error { return s.Register("trip", tripGraph(tools)) })
	var th struct {
		ID string `json:"thread_id"`
	}
	call(t, url, "POST", "/threads", map[string]any{}, &th, 200)
	modes := []string{"values", "messages-tuple", "custom"}
	run := func(body map[string]any) {
		body["assistant_id"] = "trip"
		body["stream_mode"] = modes
		body["stream_subgraphs"] = true
		call(t, url, "POST", "/threads/"+th.ID+"/runs/wait", body, nil, 200)
	}
	run(map[string]any{"input": map[string]any{"messages": []any{map[string]any{"type": "human", "content": "Plan a team trip"}}}})
	run(map[string]any{"command": map[string]any{"resume": tripCity}})
	run(map[string]any{"command": map[string]any{"resume": map[string]any{"people": 12, "length": "2 nights"}}})
	run(map[string]any{"command": map[string]any{"resume": map[string]any{"action": "reject", "feedback": "Add the catering"}}})
	run(map[string]any{"command": map[string]any{"resume": map[string]any{"action": "approve"}}})
	ids := pendingIDs(t, url, th.ID)
	run(map[string]any{"command": map[string]any{"resume": map[string]any{
		ids[toolBook]:   map[string]any{"action": "approve"},
		ids[toolInvite]: map[string]any{"action": "reject", "message": "not before the budget is agreed"},
	}}})

	var turns []turn
	call(t, url, "GET", "/threads/"+th.ID+"/transcript", nil, &turns, 200)
	var seq []string
	for _, tr := range turns {
		switch tr.Kind {
		case "answer":
			seq = append(seq, "answer: "+tr.Text+" ("+tr.Outcome+")")
		case "message":
			var m struct {
				Type    string `json:"type"`
				Content any    `json:"content"`
			}
			_ = json.Unmarshal(tr.Message, &m)
			seq = append(seq, fmt.Sprintf("%s: %v", m.Type, m.Content))
		case "event":
			var e struct {
				Kind  string `json:"kind"`
				Title string `json:"title"`
				Error string `json:"error"`
			}
			_ = json.Unmarshal(tr.Data, &e)
			seq = append(seq, "event "+e.Kind+" "+e.Title+" "+e.Error)
		default:
			seq = append(seq, tr.Kind+" "+tr.Text)
		}
	}
	want := []string{
		"human: Plan a team trip",
		"wait " + tripQuestion,
		"answer: " + tripCity + " (answered)",
		"answer: Number of people: 12, Length: 2 nights (answered)",
		"event plan_ready",
		"answer: Rejected the plan: Add the catering (rejected)",
		"answer: Approved the plan (approved)",
		"event step_finished Find hotels",
		"wait Approve book_hotel?",
		"answer: Approved " + toolBook + " (approved)",
		"answer: Rejected " + toolInvite + ": not before the budget is agreed (rejected)",
		"event step_finished Book the hotel not carried out: " + toolInvite,
		"ai: " + tripAnswer,
	}
	if !inOrder(seq, want) {
		t.Errorf("the transcript:\n%s\nwant, in this order, lines starting:\n%s", strings.Join(seq, "\n"), strings.Join(want, "\n"))
	}
}

// inOrder reports whether each of want starts a line of got, in order.
func inOrder(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && strings.HasPrefix(g, want[i]) {
			i++
		}
	}
	return i == len(want)
}
