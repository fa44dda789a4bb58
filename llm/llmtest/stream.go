package llmtest

import (
	"unicode/utf8"

	"github.com/trellis-agents/trellis/llm"
)

// chunks cuts resp into the chunks Stream yields.
func (m *Model) chunks(resp *llm.Response) []llm.Chunk {
	var out []llm.Chunk
	msg := &resp.Message
	for _, s := range split(msg.Reasoning, m.chunkSize) {
		out = append(out, llm.Chunk{Reasoning: s})
	}
	for _, s := range split(msg.Text(), m.chunkSize) {
		out = append(out, llm.Chunk{Text: s})
	}
	// One list of deltas per call: its ID and name, then its arguments.
	calls := make([][]llm.ToolCallDelta, len(msg.ToolCalls))
	for i, c := range msg.ToolCalls {
		calls[i] = append(calls[i], llm.ToolCallDelta{Index: i, ID: c.ID, Name: c.Name})
		for _, s := range split(c.Arguments, m.chunkSize) {
			calls[i] = append(calls[i], llm.ToolCallDelta{Index: i, Arguments: s})
		}
	}
	add := func(d llm.ToolCallDelta) {
		out = append(out, llm.Chunk{ToolCalls: []llm.ToolCallDelta{d}})
	}
	if m.interleave {
		for j := 0; ; j++ {
			more := false
			for _, ds := range calls {
				if j < len(ds) {
					add(ds[j])
					more = true
				}
			}
			if !more {
				break
			}
		}
	} else {
		for _, ds := range calls {
			for _, d := range ds {
				add(d)
			}
		}
	}
	u := resp.Usage
	return append(out, llm.Chunk{FinishReason: resp.FinishReason, Usage: &u, Model: resp.Model})
}

// split cuts s into pieces of n runes (the last may be shorter). Invalid
// UTF-8 bytes count as one rune each, so pieces join back to s exactly.
func split(s string, n int) []string {
	var out []string
	for s != "" {
		i, count := 0, 0
		for i < len(s) && count < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			count++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return out
}
