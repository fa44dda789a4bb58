// Package convo is how the chat wires (the OpenAI wire, server/openaiapi,
// and the AG-UI wire, server/aguiapi) keep a conversation on a thread when
// the client sends the whole history every time: the thread's metadata
// records a fingerprint of each history a wire answered, so the next
// request's messages are matched against it and only what the thread has
// not seen is appended — never the history twice.
package convo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
)

// Thread metadata the wires keep: the fingerprints of the histories the
// thread answered (oldest first), and the checkpoint each ended at, for
// forks. The names say "openai" because that wire introduced them; both
// wires share them, so a conversation may move between them.
const (
	MetadataTurns       = "openai_turns"
	MetadataCheckpoints = "openai_checkpoints"
	// MaxTurns bounds the fingerprints a thread keeps.
	MaxTurns = 100
)

// Turn is one message of a conversation as the fingerprint sees it.
type Turn struct {
	Role string // "user", "assistant" or "tool"
	Text string
}

// Fingerprints returns, for each i, the fingerprint of msgs[:i+1]: a chain
// of SHA-256 over each message's role and trimmed text.
func Fingerprints(msgs []Turn) []string {
	out := make([]string, len(msgs))
	prev := ""
	for i, m := range msgs {
		h := sha256.New()
		h.Write([]byte(prev))
		h.Write([]byte{0})
		h.Write([]byte(m.Role))
		h.Write([]byte{0})
		h.Write([]byte(strings.TrimSpace(m.Text)))
		prev = hex.EncodeToString(h.Sum(nil))[:32]
		out[i] = prev
	}
	return out
}

// Recorded reads a thread's fingerprints and their checkpoints.
func Recorded(t db.Thread) ([]string, map[string]any) {
	var turns []string
	if list, ok := t.Metadata[MetadataTurns].([]any); ok {
		for _, v := range list {
			if s, ok := v.(string); ok {
				turns = append(turns, s)
			}
		}
	}
	at, _ := t.Metadata[MetadataCheckpoints].(map[string]any)
	if at == nil {
		at = map[string]any{}
	}
	return turns, at
}

// Unseen returns the messages of msgs a thread that recorded turns has
// not seen: those after the longest prefix of msgs it answered (none when
// it answered all of them), or just the last message when it answered no
// prefix (a thread made through another API). A thread that does not exist yet has seen nothing: pass
// nil turns and exists false.
func Unseen(turns []string, exists bool, msgs []Turn) []Turn {
	if !exists || len(msgs) == 0 {
		return msgs
	}
	fps := Fingerprints(msgs)
	for i := len(msgs) - 1; i >= 0; i-- {
		if slices.Contains(turns, fps[i]) {
			return msgs[i+1:]
		}
	}
	return msgs[len(msgs)-1:]
}

// Remember records on the thread that it answered history (after turns,
// its earlier fingerprints, and at, their checkpoints), and returns the
// history's fingerprint. With forkable it also records the checkpoint the
// turn ended at, where an edit of a later message may fork; a turn that
// ended waiting for an answer is not forkable (the answer given later is
// recorded on that checkpoint, so a branch from it could not answer
// again).
func Remember(ctx context.Context, d db.DB, saver checkpoint.Saver, tenant, thread string, turns []string, at map[string]any, history []Turn, forkable bool) (string, error) {
	fps := Fingerprints(history)
	fp := fps[len(fps)-1]
	turns = append(slices.Clone(turns), fp)
	if at == nil {
		at = map[string]any{}
	}
	if forkable && saver != nil {
		if tup, err := saver.Get(ctx, checkpoint.Ref{ThreadID: runs.ThreadKey(tenant, thread)}); err == nil {
			at[fp] = tup.Ref.ID
		}
	}
	if len(turns) > MaxTurns {
		for _, old := range turns[:len(turns)-MaxTurns] {
			delete(at, old)
		}
		turns = turns[len(turns)-MaxTurns:]
	}
	list := make([]any, len(turns))
	for i, s := range turns {
		list[i] = s
	}
	if _, err := d.UpdateThreadMetadata(ctx, tenant, thread, db.Metadata{MetadataTurns: list, MetadataCheckpoints: at}); err != nil {
		return "", err
	}
	return fp, nil
}
