package aguiapi

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/apps/builder"
)

// The builder's reviewer is the agent's working, not its reply (issue 22,
// point 8): over AG-UI its critique and approval come as activities of
// type trellis.note, authored "reviewer", never as assistant text (live
// or landed), and the assistant's text ends with the final reply.
func TestReviewerIsANoteNotAReply(t *testing.T) {
	e := newEnv(t, 0)
	evs := e.run("builder-a", RunAgentInput{ThreadID: "t1", RunID: "r1", Messages: []Message{user("m1", builder.Question)}})
	if last := evs[len(evs)-1]; last.Type != RunFinished {
		t.Fatalf("last event %+v", last)
	}
	texts := map[string]*strings.Builder{}
	var order []string
	var notes []map[string]any
	for _, ev := range evs {
		switch ev.Type {
		case TextMessageStart:
			if ev.Role != "assistant" {
				t.Errorf("text message %s has role %q", ev.MessageID, ev.Role)
			}
			texts[ev.MessageID] = &strings.Builder{}
			order = append(order, ev.MessageID)
		case TextMessageContent:
			texts[ev.MessageID].WriteString(ev.Delta.(string))
		case ActivitySnapshot:
			if ev.ActivityType != NoteActivity {
				continue
			}
			var c map[string]any
			b, _ := json.Marshal(ev.Content)
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			if _, seen := texts[ev.MessageID]; seen {
				t.Errorf("note %s was also sent as assistant text", ev.MessageID)
			}
			notes = append(notes, c)
		}
	}
	var said []string
	for _, id := range order {
		said = append(said, texts[id].String())
	}
	all := strings.Join(said, "\n---\n")
	for _, s := range []string{"Please add that.", "No changes needed."} {
		if strings.Contains(all, s) {
			t.Errorf("the assistant's text holds the reviewer's %q:\n%s", s, all)
		}
	}
	if len(said) == 0 || !strings.Contains(said[len(said)-1], "prepaid return label") {
		t.Errorf("the last assistant text is not the final reply:\n%s", all)
	}
	if len(notes) != 2 {
		t.Fatalf("%d reviewer notes, want the critique and the approval: %v", len(notes), notes)
	}
	if notes[0]["author"] != builder.Reviewer || !strings.Contains(notes[0]["text"].(string), "Please add that.") ||
		!strings.Contains(notes[1]["text"].(string), "No changes needed.") {
		t.Errorf("notes %v", notes)
	}
}
