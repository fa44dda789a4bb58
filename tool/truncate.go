package tool

import (
	"fmt"
	"unicode/utf8"

	"github.com/trellis-agents/trellis/llm"
)

// Limit bounds the tool results a model is shown: a result longer than
// Head+Tail runes keeps its first Head and last Tail runes around a marker
// saying how much was cut. The zero Limit keeps DefaultHead and
// DefaultTail runes; a negative Head or Tail keeps nothing of that end.
type Limit struct {
	Head int
	Tail int
}

// The runes of each end of a long result that the zero Limit keeps.
const (
	DefaultHead = 1000
	DefaultTail = 1000
)

func (l Limit) norm() (head, tail int) {
	if l == (Limit{}) {
		l = Limit{Head: DefaultHead, Tail: DefaultTail}
	}
	return max(l.Head, 0), max(l.Tail, 0)
}

// Truncate returns s cut to lim (see Limit): s itself when it fits, else
// its head and tail around a marker such as
// "[... 4000 of 6000 characters cut ...]". Counting is in runes, so
// multi-byte text is never split inside a character.
func Truncate(s string, lim Limit) string {
	t, _ := truncate(s, lim)
	return t
}

// truncate is Truncate that reports whether it cut. A cut that would not
// make the text shorter than the marker it adds is not made.
func truncate(s string, lim Limit) (string, bool) {
	head, tail := lim.norm()
	if len(s) <= head+tail { // bytes ≥ runes: fits for sure
		return s, false
	}
	n := utf8.RuneCountInString(s)
	if n <= head+tail {
		return s, false
	}
	cut := n - head - tail
	// Byte offsets of the head's end and the tail's start.
	hb, tb := 0, len(s)
	for i := 0; i < head; i++ {
		_, size := utf8.DecodeRuneInString(s[hb:])
		hb += size
	}
	for i := 0; i < tail; i++ {
		_, size := utf8.DecodeLastRuneInString(s[:tb])
		tb -= size
	}
	marker := fmt.Sprintf("\n[... %d of %d characters cut ...]\n", cut, n)
	if len(marker) >= tb-hb {
		return s, false
	}
	return s[:hb] + marker + s[tb:], true
}

// ForModel returns the history as a model request should carry it: tool
// results longer than lim are cut (see Truncate); every other message is
// unchanged. The full results stay in msgs, which is not modified, so they
// remain in the graph's state and its records. When nothing needs cutting,
// msgs itself is returned.
func ForModel(msgs []llm.Message, lim Limit) []llm.Message {
	var out []llm.Message
	for i, m := range msgs {
		if m.Role != llm.RoleTool {
			continue
		}
		for j, p := range m.Parts {
			if p.Type != llm.PartText {
				continue
			}
			t, cut := truncate(p.Text, lim)
			if !cut {
				continue
			}
			if out == nil {
				out = append([]llm.Message(nil), msgs...)
			}
			if &out[i].Parts[0] == &msgs[i].Parts[0] { // still shared with msgs
				out[i].Parts = append([]llm.Part(nil), m.Parts...)
			}
			out[i].Parts[j].Text = t
		}
	}
	if out == nil {
		return msgs
	}
	return out
}
