package runs

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"
	"unicode"

	"github.com/trellis-agents/trellis/server/db"
)

// Titler writes a thread's title from its first exchange: the first user
// message and the first answer ("" when the run has not answered yet,
// e.g. it stopped at a question). The server passes one built on the
// default model when a real model is configured.
type Titler func(ctx context.Context, user, answer string) (string, error)

// titleRunes bounds a title, written or cut from the first message.
const titleRunes = 60

// titleTimeout bounds the model call of a Titler.
const titleTimeout = 30 * time.Second

// TitleKey is the thread metadata key holding the title.
const TitleKey = "title"

// giveTitle gives thread th a title after its first exchange, unless it
// has one: the Titler's (in the background, so the run's end does not
// wait for a model), falling back to the first user message cut short.
// values is the thread's state as the wire shows it. Without a Titler
// the title travels with the run's result instead (plainTitle).
func (s *Service) giveTitle(ctx context.Context, tenant string, th db.Thread, values json.RawMessage) {
	if _, ok := th.Metadata[TitleKey]; ok {
		return
	}
	user, answer := firstExchange(values)
	if user == "" {
		return
	}
	set := func(ctx context.Context, title string) {
		if _, err := s.cfg.DB.UpdateThreadMetadata(ctx, tenant, th.ID, db.Metadata{TitleKey: title}); err != nil {
			s.cfg.Log.Warn("could not set the thread's title", "thread", th.ID, "err", err)
		}
	}
	if s.cfg.Titler == nil {
		return
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), titleTimeout)
		defer cancel()
		title, err := s.cfg.Titler(tctx, user, answer)
		title = CutTitle(title)
		if err != nil || title == "" {
			if err != nil {
				s.cfg.Log.Warn("the title model failed; the thread is titled with its first message", "thread", th.ID, "err", err)
			}
			title = CutTitle(user)
		}
		set(tctx, title)
	}()
}

// plainTitle is the title a thread gets from values without a Titler: its
// first user message, cut short ("" when it has none). It reads values
// only as far as that message, as it runs after every run that does not
// fail and the DB keeps an existing title (db.ThreadResult.Title).
func plainTitle(values json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(values))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return ""
		}
		if key != "messages" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return ""
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('[') {
			return ""
		}
		for dec.More() {
			var m struct {
				Type    string          `json:"type"`
				Content json.RawMessage `json:"content"`
			}
			if dec.Decode(&m) != nil {
				return ""
			}
			if m.Type == "human" {
				if user := contentText(m.Content); user != "" {
					return CutTitle(user)
				}
			}
		}
		return ""
	}
	return ""
}

// Wait waits for the service's background work (titles being written).
func (s *Service) Wait() { s.bg.Wait() }

// firstExchange finds the first human message in values.messages (LangChain
// message JSON) and the first AI answer with text after it.
func firstExchange(values json.RawMessage) (user, answer string) {
	var v struct {
		Messages []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(values, &v) != nil {
		return "", ""
	}
	for _, m := range v.Messages {
		switch {
		case user == "" && m.Type == "human":
			user = contentText(m.Content)
		case user != "" && m.Type == "ai":
			if answer = contentText(m.Content); answer != "" {
				return user, answer
			}
		}
	}
	return user, answer
}

// contentText is a message's text: the string, or the text parts joined.
func contentText(c json.RawMessage) string {
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(c, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// CutTitle makes s a title: one line, spaces collapsed, quotes and a
// trailing full stop dropped, at most 60 runes, cut at a word boundary
// with "…" when longer.
func CutTitle(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.Trim(s, "\"'`“”‘’")
	s = strings.TrimSuffix(s, ".")
	r := []rune(s)
	if len(r) <= titleRunes {
		return s
	}
	cut := titleRunes - 1
	for i := cut; i > titleRunes/2; i-- {
		if unicode.IsSpace(r[i]) {
			cut = i
			break
		}
	}
	return strings.TrimRightFunc(string(r[:cut]), unicode.IsSpace) + "…"
}
