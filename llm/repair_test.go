package llm_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/llm"
)

// shape renders a history as role[:call ids] strings, enough to compare
// structure.
func shape(msgs []llm.Message) []string {
	var out []string
	for _, m := range msgs {
		s := string(m.Role)
		switch {
		case m.Role == llm.RoleTool:
			s += ":" + m.ToolCallID
			if m.IsError {
				s += "!"
			}
		case len(m.ToolCalls) > 0:
			for _, c := range m.ToolCalls {
				s += ":" + c.ID
			}
		}
		out = append(out, s)
	}
	return out
}

func TestRepairHistory(t *testing.T) {
	a := llm.ToolCall{ID: "a", Name: "read"}
	b := llm.ToolCall{ID: "b", Name: "write"}
	c := llm.ToolCall{ID: "c", Name: "read"}
	cases := []struct {
		name string
		in   []llm.Message
		want []string
	}{
		{
			name: "valid history is unchanged",
			in:   []llm.Message{llm.System("s"), llm.User("u"), llm.Assistant("", a, b), llm.ToolResult(a, "1"), llm.ToolResult(b, "2"), llm.Assistant("done")},
			want: []string{"system", "user", "assistant:a:b", "tool:a", "tool:b", "assistant"},
		},
		{
			name: "missing result gets an error tool message",
			in:   []llm.Message{llm.User("u"), llm.Assistant("", a, b), llm.ToolResult(a, "1"), llm.User("next")},
			want: []string{"user", "assistant:a:b", "tool:a", "tool:b!", "user"},
		},
		{
			name: "results out of order are put in call order",
			in:   []llm.Message{llm.Assistant("", a, b), llm.ToolResult(b, "2"), llm.ToolResult(a, "1")},
			want: []string{"assistant:a:b", "tool:a", "tool:b"},
		},
		{
			name: "a result after a later message is moved up",
			in:   []llm.Message{llm.Assistant("", a), llm.User("hurry"), llm.ToolResult(a, "1")},
			want: []string{"assistant:a", "tool:a", "user"},
		},
		{
			name: "an orphan result is left out",
			in:   []llm.Message{llm.User("u"), llm.ToolResult(c, "stray"), llm.Assistant("hi")},
			want: []string{"user", "assistant"},
		},
		{
			name: "interrupted last turn",
			in:   []llm.Message{llm.User("u"), llm.Assistant("", a, b, c)},
			want: []string{"user", "assistant:a:b:c", "tool:a!", "tool:b!", "tool:c!"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			orig := append([]llm.Message(nil), tc.in...)
			got := llm.RepairHistory(tc.in)
			if d := cmp.Diff(tc.want, shape(got)); d != "" {
				t.Errorf("repaired shape (-want +got):\n%s", d)
			}
			if d := cmp.Diff(orig, tc.in); d != "" {
				t.Errorf("input modified:\n%s", d)
			}
			if again := llm.RepairHistory(got); len(again) != len(got) || &again[0] != &got[0] {
				t.Errorf("a repaired history was repaired again")
			}
		})
	}
}

func TestRepairKeepsTheLastOfDuplicateResults(t *testing.T) {
	a := llm.ToolCall{ID: "a", Name: "read"}
	got := llm.RepairHistory([]llm.Message{llm.Assistant("", a), llm.ToolResult(a, "old"), llm.ToolResult(a, "new")})
	if len(got) != 2 || got[1].Text() != "new" {
		t.Fatalf("got %v, want the assistant message and the last result", shape(got))
	}
}

func TestMessageHelpers(t *testing.T) {
	m := llm.UserParts(llm.Text("look at "), llm.ImageURL("https://example.test/cat.png"), llm.Text("this"))
	if m.Text() != "look at this" {
		t.Errorf("Text() = %q", m.Text())
	}
	if m.ID == "" || m.ID == llm.User("x").ID {
		t.Error("constructors must give fresh IDs")
	}
	c := m.Clone()
	c.Parts[0].Text = "changed"
	if m.Parts[0].Text != "look at " {
		t.Error("Clone shares parts")
	}
	e := llm.ToolError(llm.ToolCall{ID: "k", Name: "n"}, "bad")
	if !e.IsError || e.ToolCallID != "k" || e.ToolName != "n" || e.Role != llm.RoleTool {
		t.Errorf("ToolError = %+v", e)
	}
}
