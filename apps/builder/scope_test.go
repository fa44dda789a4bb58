package builder

import (
	"context"
	"strings"
	"testing"

	agentbuilder "github.com/trellis-agents/trellis/agent/builder"
	"github.com/trellis-agents/trellis/agent/react"
)

// Asked something outside its scenario, the scripted model says what it
// can demonstrate instead of answering the returns question.
func TestScriptSaysWhatItCanDemonstrate(t *testing.T) {
	a, err := NewAgent(Config{Model: Script()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Run(context.Background(), agentbuilder.Input("What does shipping to Canada cost?"))
	if err != nil {
		t.Fatal(err)
	}
	var replies []string
	for _, m := range react.Messages.Get(res.FinalState) {
		if m.Role == "assistant" && m.Text() != "" {
			replies = append(replies, m.Text())
		}
	}
	if len(replies) == 0 || replies[0] != Scope || strings.Contains(strings.Join(replies, "\n"), "faulty items can be returned") {
		t.Errorf("replies %q", replies)
	}
}
