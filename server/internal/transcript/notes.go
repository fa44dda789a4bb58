package transcript

import "encoding/json"

// notes turns the agent's working among the message turns into KindNote
// turns: a named assistant message (an internal voice, such as a
// reviewer), and, within one run, an unnamed text reply that such a voice
// answered and a later unnamed text reply replaced (a draft). What stays a
// message is the conversation: the person's input, the agent's tool calls
// and results, and its reply.
func notes(turns []Turn) []Turn {
	type run struct{ draft, critiqued int }
	state := map[string]*run{}
	for i := range turns {
		t := &turns[i]
		if t.Kind != KindMessage {
			continue
		}
		var m struct {
			Type      string            `json:"type"`
			Name      string            `json:"name"`
			Content   json.RawMessage   `json:"content"`
			ToolCalls []json.RawMessage `json:"tool_calls"`
		}
		if json.Unmarshal(t.Message, &m) != nil || m.Type != "ai" {
			continue
		}
		r := state[t.RunID]
		if r == nil {
			r = &run{draft: -1, critiqued: -1}
			state[t.RunID] = r
		}
		text := contentText(m.Content)
		switch {
		case m.Name != "":
			t.Kind, t.Author, t.Text = KindNote, m.Name, text
			if r.draft >= 0 {
				r.critiqued, r.draft = r.draft, -1
			}
		case text != "" && len(m.ToolCalls) == 0:
			if c := r.critiqued; c >= 0 {
				turns[c].Kind, turns[c].Text = KindNote, contentText(contentOf(turns[c].Message))
				r.critiqued = -1
			}
			r.draft = i
		}
	}
	return turns
}

func contentOf(msg json.RawMessage) json.RawMessage {
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(msg, &m)
	return m.Content
}

// contentText is a LangChain message content's text: the string, or its
// text parts joined.
func contentText(c json.RawMessage) string {
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(c, &parts)
	out := ""
	for _, p := range parts {
		if p.Type == "text" {
			out += p.Text
		}
	}
	return out
}
