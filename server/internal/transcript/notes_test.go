package transcript

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/server/db"
)

// A reviewer's critique (an assistant message with a voice) and the draft
// it answered are the agent's working: notes, not messages; the tool call,
// its result and the reply the reviewer approved stay messages. A named
// message's approval ends the run, yet the last unnamed reply is the one
// kept as the answer.
func TestBuildFoldsAnInternalVoiceIntoNotes(t *testing.T) {
	f := &fakeStore{}
	f.add("r1", `{"input":{"messages":[{"type":"human","content":"q"}]}}`,
		"values", `{"messages":[{"id":"h"},{"id":"c1"},{"id":"t1"},{"id":"d1"},{"id":"v1"},{"id":"d2"},{"id":"v2"}]}`)
	th := db.Thread{ID: "t", Values: json.RawMessage(`{"messages":[
		{"id":"h","type":"human","content":"q"},
		{"id":"c1","type":"ai","content":"","tool_calls":[{"id":"x","name":"lookup","args":{}}]},
		{"id":"t1","type":"tool","content":"policy","tool_call_id":"x"},
		{"id":"d1","type":"ai","content":"first draft"},
		{"id":"v1","type":"ai","name":"reviewer","content":"add the label"},
		{"id":"d2","type":"ai","content":[{"type":"text","text":"final reply"}]},
		{"id":"v2","type":"ai","name":"reviewer","content":"no changes needed"}]}`)}
	turns, err := Build(context.Background(), f, nil, "x", th)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tn := range turns {
		switch tn.Kind {
		case KindMessage:
			got = append(got, "msg "+idOf(tn.Message))
		case KindNote:
			got = append(got, "note "+idOf(tn.Message)+" "+tn.Author+": "+tn.Text)
		default:
			got = append(got, tn.Kind)
		}
	}
	want := strings.Join([]string{"run", "msg h", "msg c1", "msg t1",
		"note d1 : first draft", "note v1 reviewer: add the label", "msg d2", "note v2 reviewer: no changes needed"}, "\n")
	if s := strings.Join(got, "\n"); s != want {
		t.Errorf("transcript:\n%s\nwant:\n%s", s, want)
	}
}

// Without a voice, replies stay messages: a plain agent's two text
// replies in one run are both shown.
func TestBuildKeepsUnnamedRepliesAsMessages(t *testing.T) {
	f := &fakeStore{}
	f.add("r1", `{}`, "values", `{"messages":[{"id":"a"},{"id":"b"}]}`)
	th := db.Thread{ID: "t", Values: json.RawMessage(`{"messages":[{"id":"a","type":"ai","content":"one"},{"id":"b","type":"ai","content":"two"}]}`)}
	turns, err := Build(context.Background(), f, nil, "x", th)
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(turns); got != "run r1\nmsg one\nmsg two" {
		t.Errorf("transcript:\n%s", got)
	}
}
