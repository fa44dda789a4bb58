package tool_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool"
)

func TestTruncate(t *testing.T) {
	long := strings.Repeat("a", 1500) + strings.Repeat("b", 1000) + strings.Repeat("c", 1500)
	cases := []struct {
		name string
		in   string
		lim  tool.Limit
		want string
	}{
		{"fits", "short", tool.Limit{}, "short"},
		{"exactly the limit", strings.Repeat("x", 2000), tool.Limit{}, strings.Repeat("x", 2000)},
		{"default limit", long, tool.Limit{},
			strings.Repeat("a", 1000) + "\n[... 2000 of 4000 characters cut ...]\n" + strings.Repeat("c", 1000)},
		{"runes, not bytes", strings.Repeat("é", 30) + strings.Repeat("ü", 50) + strings.Repeat("ø", 30), tool.Limit{Head: 30, Tail: 30},
			strings.Repeat("é", 30) + "\n[... 50 of 110 characters cut ...]\n" + strings.Repeat("ø", 30)},
		{"head only", long, tool.Limit{Head: 3, Tail: -1}, "aaa\n[... 3997 of 4000 characters cut ...]\n"},
		{"tail only", long, tool.Limit{Tail: 2}, "\n[... 3998 of 4000 characters cut ...]\ncc"},
		{"cut smaller than the marker", strings.Repeat("x", 2010), tool.Limit{}, strings.Repeat("x", 2010)},
	}
	for _, tc := range cases {
		got := tool.Truncate(tc.in, tc.lim)
		if got != tc.want {
			t.Errorf("%s: got %d bytes %.80q…, want %d bytes %.80q…", tc.name, len(got), got, len(tc.want), tc.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("%s: cut inside a character", tc.name)
		}
	}
}

func TestForModel(t *testing.T) {
	long := strings.Repeat("z", 50)
	c := llm.ToolCall{ID: "c1", Name: "t"}
	short := []llm.Message{llm.User(long), llm.Assistant("", c), llm.ToolResult(c, "ok")}
	lim := tool.Limit{Head: 5, Tail: 5}
	if got := tool.ForModel(short, lim); &got[0] != &short[0] {
		t.Error("ForModel copied a history that needed no cut")
	}

	multi := llm.ToolResult(c, "")
	multi.Parts = []llm.Part{llm.Text(long), llm.ImageURL("https://example.com/i.png"), llm.Text("tiny")}
	msgs := []llm.Message{llm.User(long), llm.Assistant(long, c), multi}
	before := cloneAll(msgs)
	got := tool.ForModel(msgs, lim)
	if d := cmp.Diff(before, msgs); d != "" {
		t.Fatalf("ForModel changed its input (-before +after):\n%s", d)
	}
	cut := "zzzzz\n[... 40 of 50 characters cut ...]\nzzzzz"
	if got[0].Text() != long || got[1].Text() != long {
		t.Error("ForModel cut a message that is not a tool result")
	}
	want := []llm.Part{llm.Text(cut), llm.ImageURL("https://example.com/i.png"), llm.Text("tiny")}
	if d := cmp.Diff(want, got[2].Parts); d != "" {
		t.Errorf("tool message parts (-want +got):\n%s", d)
	}
	if got[2].ID != msgs[2].ID || got[2].ToolCallID != "c1" {
		t.Errorf("the cut message lost its identity: %+v", got[2])
	}
}

func cloneAll(msgs []llm.Message) []llm.Message {
	out := make([]llm.Message, len(msgs))
	for i, m := range msgs {
		out[i] = m.Clone()
	}
	return out
}
