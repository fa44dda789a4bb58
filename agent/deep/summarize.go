package deep

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/agent/middleware"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/history"
)

// SummarizeConfig configures summarisation with offload. Every field has
// the default its comment names.
type SummarizeConfig struct {
	// Off turns summarisation off.
	Off bool
	// Model writes the summaries (nil: the agent's model).
	Model llm.Model
	// MaxTokens is the estimated size (history.Estimate) of a request's
	// history past which its older messages are summarised (default
	// 80000).
	MaxTokens int
	// KeepMessages is how many of the latest messages are always sent as
	// they are (default 8; a tool result is never separated from its
	// call, so a few more may be kept).
	KeepMessages int
	// Dir is the directory of the virtual filesystem the summarised
	// messages are written to (default /conversation_history; with
	// shared files, a directory per thread below it).
	Dir string
	// Prompt replaces DefaultSummaryPrompt.
	Prompt string
}

// DefaultSummaryPrompt is the system prompt of the summary call.
const DefaultSummaryPrompt = "You condense the older part of an agent's working conversation so it can carry on without it. " +
	"Given the summary so far and the messages after it, write the new summary: the task and the person's wishes, " +
	"decisions taken, what is done and what is left, facts and tool results still needed, and paths of files written. " +
	"Write only the summary."

// Summary holds the running summary of a deep agent's thread: what the
// older messages said and where their full text was written.
var Summary = graph.NewKey[ConversationSummary]("deep_summary")

// ConversationSummary is the running summary of the oldest part of a
// thread.
type ConversationSummary struct {
	// Text is the summary.
	Text string `json:"text,omitempty"`
	// Through is the ID of the last message it covers.
	Through string `json:"through,omitempty"`
	// Messages is how many messages it covers.
	Messages int `json:"messages,omitempty"`
	// Files are the paths the summarised messages were written to, oldest
	// first.
	Files []string `json:"files,omitempty"`
}

// maxTranscriptRunes bounds one message in the summary call.
const maxTranscriptRunes = 2000

// Summarization returns the middleware that keeps requests under
// cfg.MaxTokens: when the history (after the last summary) is estimated
// above it, all but the last KeepMessages messages are written, in full,
// to a file of fs under cfg.Dir, and folded by one model call into the
// running summary (kept in Summary). Requests carry the summary, which
// names the files, instead of those messages; the thread's state keeps
// every message. model is the agent's model, used when cfg.Model is nil.
func Summarization(cfg SummarizeConfig, fs *Filesystem, model llm.Model) (middleware.Middleware, error) {
	cfg.Model = cmp.Or[llm.Model](cfg.Model, model)
	cfg.MaxTokens = cmp.Or(cfg.MaxTokens, 80000)
	cfg.KeepMessages = cmp.Or(cfg.KeepMessages, 8)
	cfg.Dir = cmp.Or(cfg.Dir, "/conversation_history")
	var errs []error
	if cfg.Model == nil {
		errs = append(errs, errors.New("deep: summarisation has no model"))
	}
	if fs == nil {
		errs = append(errs, errors.New("deep: summarisation has no filesystem to offload to"))
	}
	if cfg.MaxTokens < 0 || cfg.KeepMessages < 0 {
		errs = append(errs, fmt.Errorf("deep: SummarizeConfig.MaxTokens (%d) and KeepMessages (%d) must not be negative", cfg.MaxTokens, cfg.KeepMessages))
	}
	dir, err := dirPath(cfg.Dir)
	if err != nil || dir == "" {
		errs = append(errs, fmt.Errorf("deep: SummarizeConfig.Dir %q: give a directory below / (%v)", cfg.Dir, err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	cfg.Dir = dir
	return &summarizer{cfg: cfg, fs: fs}, nil
}

type summarizer struct {
	cfg SummarizeConfig
	fs  *Filesystem
}

func (s *summarizer) Name() string { return "summarization" }

// StateKeys returns Summary.
func (s *summarizer) StateKeys() []graph.AnyKey { return []graph.AnyKey{Summary} }

func (s *summarizer) WrapModel(ctx context.Context, call *middleware.ModelCall, next middleware.ModelHandler) (*llm.Response, error) {
	msgs := call.Request.Messages
	n := 0
	for n < len(msgs) && msgs[n].Role == llm.RoleSystem {
		n++
	}
	system, rest := msgs[:n:n], msgs[n:]
	sum := Summary.Get(call.State)
	if sum.Through != "" {
		at := -1
		for i := len(rest) - 1; i >= 0; i-- {
			if rest[i].ID == sum.Through {
				at = i
				break
			}
		}
		if at < 0 {
			sum = ConversationSummary{} // the thread was rewound or edited: start over
		} else {
			rest = rest[at+1:]
		}
	}
	if tokens(system)+tokens(rest) > s.cfg.MaxTokens {
		cut := len(rest) - s.cfg.KeepMessages
		for cut > 0 && rest[cut].Role == llm.RoleTool {
			cut-- // keep a call's results with the call
		}
		if cut > 0 {
			var err error
			if sum, err = s.fold(ctx, sum, rest[:cut]); err != nil {
				return nil, err
			}
			rest = rest[cut:]
			call.Write(Summary.Set(sum))
		}
	}
	if sum.Text == "" {
		return next(ctx, call)
	}
	req := *call.Request
	req.Messages = append(append(append(make([]llm.Message, 0, n+1+len(rest)), system...), llm.System(summaryNote(sum))), rest...)
	call.Request = &req
	return next(ctx, call)
}

// fold writes msgs to a file and extends sum with them.
func (s *summarizer) fold(ctx context.Context, sum ConversationSummary, msgs []llm.Message) (ConversationSummary, error) {
	from, to := sum.Messages+1, sum.Messages+len(msgs)
	dir := s.cfg.Dir
	if th := graph.ThreadID(ctx); s.fs.cfg.Shared && th != "" {
		dir += "/" + pathElement(th) // threads share the files: keep theirs apart
	}
	if ns := graph.Namespace(ctx); ns != "" {
		// A sub-agent shares its parent's files but counts its own
		// messages: keep its folds apart from the parent's.
		sum := sha256.Sum256([]byte(ns))
		dir += "/subagents/" + hex.EncodeToString(sum[:6])
	}
	p := fmt.Sprintf("%s/messages-%d-%d.md", dir, from, to)
	var tr strings.Builder
	for _, m := range msgs {
		writeMessage(&tr, m, 0)
	}
	if err := s.fs.WriteFile(ctx, p, tr.String()); err != nil {
		return sum, fmt.Errorf("deep: summarisation: write the summarised messages to %s: %w", p, err)
	}
	var in strings.Builder
	in.WriteString("Summary so far:\n")
	in.WriteString(cmp.Or(sum.Text, "(none yet)"))
	in.WriteString("\n\nMessages that follow it:\n")
	for _, m := range msgs {
		writeMessage(&in, m, maxTranscriptRunes)
	}
	resp, err := s.cfg.Model.Generate(ctx, &llm.Request{Messages: []llm.Message{llm.System(cmp.Or(s.cfg.Prompt, DefaultSummaryPrompt)), llm.User(in.String())}})
	if err != nil {
		return sum, fmt.Errorf("deep: summarising %d messages with %s: %w", len(msgs), s.cfg.Model.Name(), err)
	}
	if resp == nil || strings.TrimSpace(resp.Message.Text()) == "" {
		return sum, fmt.Errorf("deep: summarising %d messages with %s: the reply is empty", len(msgs), s.cfg.Model.Name())
	}
	graph.RecordUsage(ctx, resp.Usage)
	return ConversationSummary{Text: strings.TrimSpace(resp.Message.Text()), Through: msgs[len(msgs)-1].ID,
		Messages: to, Files: append(append([]string(nil), sum.Files...), p)}, nil
}

// summaryNote is the system message that stands for the summarised
// messages.
func summaryNote(sum ConversationSummary) string {
	return fmt.Sprintf("Summary of the first %d messages of this conversation, which are not shown. "+
		"Their full text is in %s; read it with %s when you need a detail the summary leaves out.\n\n%s",
		sum.Messages, strings.Join(sum.Files, ", "), ReadFileTool, sum.Text)
}

func tokens(msgs []llm.Message) int {
	n := 0
	for _, m := range msgs {
		n += history.Estimate.Count(m)
	}
	return n
}

// writeMessage writes one message as transcript lines; cut > 0 bounds
// its text and arguments.
func writeMessage(b *strings.Builder, m llm.Message, cut int) {
	trim := func(s string) string {
		if cut > 0 {
			return cutRunes(s, cut)
		}
		return s
	}
	who := string(m.Role)
	if m.Role == llm.RoleTool {
		who = "tool " + m.ToolName + " result"
	}
	fmt.Fprintf(b, "%s: %s", who, trim(m.Text()))
	for _, c := range m.ToolCalls {
		fmt.Fprintf(b, " [calls %s(%s)]", c.Name, trim(c.Arguments))
	}
	b.WriteByte('\n')
}

// pathElement makes s a safe path element: characters other than ASCII
// letters, digits, '.', '-' and '_' become '_', and it is cut to 100
// bytes.
func pathElement(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	if len(b) > 100 {
		b = b[:100]
	}
	if s := string(b); s != "." && s != ".." {
		return s
	}
	return "_"
}
