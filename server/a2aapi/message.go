package a2aapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/lcmsg"
)

// maxParts bounds a message's parts.
const maxParts = 64

// message is what a client's message carries: its text parts and its
// data parts (as JSON), in order.
type message struct {
	texts []string
	data  []json.RawMessage
}

// text is the message's text parts, joined.
func (m message) text() string { return strings.Join(m.texts, "\n") }

// content is the message as a run's input: its text, then each data
// part as JSON.
func (m message) content() string {
	parts := append([]string{}, m.texts...)
	for _, d := range m.data {
		parts = append(parts, string(d))
	}
	return strings.TrimSpace(strings.Join(parts, "\n\n"))
}

// textModes are the output modes that accept this agent's answers.
var textModes = map[string]bool{"text/plain": true, "text/*": true, "*/*": true, "text": true, "application/json": true}

// readMessage checks a request's message: a user's, with text and data
// parts only (a file part is refused: the runs read text), and output
// modes that take text.
func readMessage(req *a2a.SendMessageRequest) (message, error) {
	var m message
	if req == nil || req.Message == nil {
		return m, a2a.NewError(a2a.ErrInvalidParams, "the request has no message")
	}
	msg := req.Message
	if msg.Role != a2a.MessageRoleUser {
		return m, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("message.role is %q; a client's message has role user", msg.Role))
	}
	if len(msg.Parts) == 0 {
		return m, a2a.NewError(a2a.ErrInvalidParams, "message.parts is empty: send a text part (or a data part)")
	}
	if len(msg.Parts) > maxParts {
		return m, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("message.parts has %d parts; at most %d are read", len(msg.Parts), maxParts))
	}
	if msg.TaskID != "" && db.IDProblem(string(msg.TaskID)) != "" {
		return m, a2a.NewError(a2a.ErrInvalidParams, "message.taskId "+db.IDProblem(string(msg.TaskID)))
	}
	if req.Config != nil && len(req.Config.AcceptedOutputModes) > 0 {
		ok := false
		for _, mode := range req.Config.AcceptedOutputModes {
			if textModes[strings.ToLower(strings.TrimSpace(mode))] {
				ok = true
			}
		}
		if !ok {
			return m, a2a.NewError(a2a.ErrUnsupportedContentType, fmt.Sprintf("configuration.acceptedOutputModes %v: this agent answers with text/plain (and application/json data parts); accept one of them", req.Config.AcceptedOutputModes))
		}
	}
	for i, p := range msg.Parts {
		if p == nil {
			return m, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("message.parts[%d] is null", i))
		}
		switch c := p.Content.(type) {
		case a2a.Text:
			m.texts = append(m.texts, string(c))
		case a2a.Data:
			b, err := json.Marshal(c.Value)
			if err != nil {
				return m, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("message.parts[%d].data is not JSON: %v", i, err))
			}
			m.data = append(m.data, b)
		case a2a.Raw, a2a.URL:
			name := p.Filename
			if name == "" {
				name = "a file"
			}
			return m, a2a.NewError(a2a.ErrUnsupportedContentType, fmt.Sprintf("message.parts[%d] is %s (%s): this agent reads text and data parts only and stores no files; send the content as text, or a link to it in a text part", i, name, orDefault(p.MediaType, "no media type")))
		default:
			return m, a2a.NewError(a2a.ErrInvalidParams, fmt.Sprintf("message.parts[%d] has no content", i))
		}
	}
	return m, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// chunker reads a run's logged model chunks into the answer's text as it
// streams. A model message that starts like JSON (an agent's structured
// reply, such as a planner's) is held back: it is the agent talking to
// itself, and the final answer says what landed.
type chunker struct {
	msgs map[string]*held
	last string // the message the text came from last
	sent int    // chunks handed out
}

// held is one model message: undecided until its first non-space
// character, then prose (streamed) or JSON (held).
type held struct {
	decided, prose bool
	buf            strings.Builder
}

func newChunker() *chunker { return &chunker{msgs: map[string]*held{}} }

// lcChunk is the part of a LangChain message chunk the wire reads.
type lcChunk struct {
	ID      string          `json:"id"`
	Content json.RawMessage `json:"content"`
	// Name is a voice's (a reviewer's, a remote agent's the run called):
	// the agent's working, not its answer.
	Name string `json:"name"`
}

// add reads one logged event; it returns the text to stream ("" for none).
func (c *chunker) add(ev db.Event) string {
	mode, ns, _ := strings.Cut(ev.Event, "|")
	if mode != "messages" || ns != "" {
		return "" // a subgraph's model talking to itself
	}
	var tuple [1]lcChunk // [chunk, metadata]
	if json.Unmarshal(ev.Data, &tuple) != nil {
		return ""
	}
	ch := tuple[0]
	text := lcmsg.Text(ch.Content)
	if text == "" || ch.Name != "" {
		return ""
	}
	h := c.msgs[ch.ID]
	if h == nil {
		if len(c.msgs) >= 1000 {
			return "" // bounded: a run with this many messages streams no more
		}
		h = &held{}
		c.msgs[ch.ID] = h
	}
	if !h.decided {
		h.buf.WriteString(text)
		s := strings.TrimLeftFunc(h.buf.String(), unicode.IsSpace)
		if s == "" {
			return ""
		}
		h.decided, h.prose = true, s[0] != '{' && s[0] != '['
		if !h.prose {
			h.buf.Reset()
			return ""
		}
		text = h.buf.String()
		h.buf.Reset()
	} else if !h.prose {
		return ""
	}
	if c.last != "" && c.last != ch.ID {
		text = "\n\n" + text // a new message's text, apart from the one before
	}
	c.last = ch.ID
	c.sent++
	return text
}
