package llmtest_test

import (
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// A Respond turn builds its reply from the request that takes it, every
// time it repeats, and its calls get IDs as scripted calls do, streamed
// or not.
func TestRespondReadsTheRequest(t *testing.T) {
	m := llmtest.New()
	m.When(nil, llmtest.Respond(func(r *llmtest.Request) llmtest.Turn {
		if city, ok := strings.CutPrefix(r.LastUser(), "book "); ok {
			return llmtest.ToolCalls(llmtest.Call("book", `{"city":"`+city+`"}`))
		}
		return llmtest.Text("You said: " + r.LastUser())
	})).Repeat()
	if got := generate(t, m, ask("hello")).Message.Text(); got != "You said: hello" {
		t.Errorf("first reply %q", got)
	}
	calls := generate(t, m, ask("book Berlin")).Message.ToolCalls
	if len(calls) != 1 || calls[0].Arguments != `{"city":"Berlin"}` || calls[0].ID == "" {
		t.Fatalf("calls %+v", calls)
	}
	var text strings.Builder
	for c, err := range m.Stream(t.Context(), ask("again")) {
		if err != nil {
			t.Fatal(err)
		}
		text.WriteString(c.Text)
	}
	if text.String() != "You said: again" {
		t.Errorf("streamed %q", text.String())
	}
	second := generate(t, m, &llm.Request{Messages: []llm.Message{llm.User("book Prague")}}).Message.ToolCalls
	if len(second) != 1 || second[0].ID == calls[0].ID {
		t.Errorf("the second built call reuses ID %q", calls[0].ID)
	}
}
