// Package memory gives agents long-term memory over the run's store: a
// remember tool that saves a fact about the user, and a recall tool that
// finds the saved facts closest to a question. Memories live in a
// namespace of their own per user (by default ["memories", <user_id>],
// the user ID read from the run context), so every thread of that user
// sees them.
//
// With a store opened with an index (store.IndexConfig, e.g. the
// service's store.index), recall ranks memories by similarity; without
// one it falls back to memories sharing a word with the question.
//
//	tools := memory.Tools(memory.Config{})
//	agent, _ := react.New(react.Config{Model: m, Tools: tools, Policy: memory.Policy()})
//	agent.Invoke(ctx, react.Input("I'm vegetarian"),
//		graph.WithStore(st), graph.WithRunContext(map[string]any{"user_id": "ann"}))
package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/google/uuid"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/store"
	"github.com/trellis-agents/trellis/tool"
)

// Tool names.
const (
	RememberName = "remember"
	RecallName   = "recall"
)

// MaxMemoryRunes bounds one memory's text.
const MaxMemoryRunes = 2000

// Config configures the tools.
type Config struct {
	// Namespace returns the namespace of the run's memories; nil means
	// UserNamespace("memories", "user_id").
	Namespace func(ctx context.Context) ([]string, error)
	// Store is the store to use; nil means the run's (graph.StoreFrom).
	Store store.Store
	// Limit is how many memories recall returns; 0 means 5.
	Limit int
}

// UserNamespace returns a Namespace function giving [prefix, <id>], the
// ID read from the run context's field named field (a JSON object, as the
// service passes LangGraph's context). A run without that field fails the
// tool with an error the model sees and the log records.
func UserNamespace(prefix, field string) func(ctx context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		rc, err := graph.RunContext[map[string]any](ctx)
		if err != nil {
			return nil, fmt.Errorf("memory: the run has no context with %q to file memories under: %w", field, err)
		}
		id, _ := rc[field].(string)
		if id == "" {
			return nil, fmt.Errorf("memory: the run context has no %q (a non-empty string) to file memories under; pass it in the run's context", field)
		}
		return []string{prefix, id}, nil
	}
}

// Policy lets remember run without asking a person (it only writes the
// user's own memories); add its rules to the agent's tool.Policy.
func Policy() tool.Policy {
	return tool.Policy{RememberName: tool.AutoApprove()}
}

// Memory is one saved memory as recall returns it.
type Memory struct {
	ID     string   `json:"id"`
	Memory string   `json:"memory"`
	Score  *float64 `json:"score,omitempty"`
}

type rememberArgs struct {
	Memory string `json:"memory" jsonschema:"the fact to remember, as one self-contained sentence"`
	ID     string `json:"id,omitempty" jsonschema:"the id of a memory to replace (from recall), to correct it; leave out for a new memory"`
}

type recallArgs struct {
	Query string `json:"query" jsonschema:"what to look for, as a question or keywords"`
}

// Tools returns remember and recall.
func Tools(cfg Config) []tool.Tool {
	ns := cfg.Namespace
	if ns == nil {
		ns = UserNamespace("memories", "user_id")
	}
	limit := cmp.Or(cfg.Limit, 5)
	storeOf := func(ctx context.Context) (store.Store, error) {
		if cfg.Store != nil {
			return cfg.Store, nil
		}
		if s := graph.StoreFrom(ctx); s != nil {
			return s, nil
		}
		return nil, errors.New("memory: the run has no store; run the agent with graph.WithStore")
	}
	remember := tool.MustFunc(RememberName,
		"Save a lasting fact about the user (a preference, a detail of their life or work) so that later conversations can use it. Save one fact per call.",
		func(ctx context.Context, a rememberArgs) (string, error) {
			text := strings.TrimSpace(a.Memory)
			if text == "" {
				return "", tool.BadArguments(RememberName, "memory is empty; give the fact to remember")
			}
			if n := len([]rune(text)); n > MaxMemoryRunes {
				return "", tool.BadArguments(RememberName, "memory has %d characters, more than %d; save a shorter fact", n, MaxMemoryRunes)
			}
			s, err := storeOf(ctx)
			if err != nil {
				return "", err
			}
			namespace, err := ns(ctx)
			if err != nil {
				return "", err
			}
			id := a.ID
			if id == "" {
				id = uuid.NewString()
			}
			if err := store.Put(ctx, s, namespace, id, map[string]string{"text": text}, store.PutOptions{}); err != nil {
				return "", err
			}
			return fmt.Sprintf("Remembered (id %s).", id), nil
		}, tool.Summary(func(a rememberArgs) string { return "remember: " + a.Memory }))
	recall := tool.MustFunc(RecallName,
		"Look up what you know about the user from earlier conversations. Returns the saved memories closest to the query, best first.",
		func(ctx context.Context, a recallArgs) ([]Memory, error) {
			if strings.TrimSpace(a.Query) == "" {
				return nil, tool.BadArguments(RecallName, "query is empty; say what to look for")
			}
			s, err := storeOf(ctx)
			if err != nil {
				return nil, err
			}
			namespace, err := ns(ctx)
			if err != nil {
				return nil, err
			}
			items, err := s.Search(ctx, namespace, store.Query{Text: a.Query, Limit: limit})
			if errors.Is(err, store.ErrNoIndex) {
				return wordMatches(ctx, s, namespace, a.Query, limit)
			}
			if err != nil {
				return nil, err
			}
			return memories(items), nil
		}, tool.ReadOnly(), tool.Summary(func(a recallArgs) string { return "recall: " + a.Query }))
	return []tool.Tool{remember, recall}
}

// maxScan bounds the memories the fallback reads.
const maxScan = 1000

// wordMatches is recall without an index: the memories sharing a word
// with the query, in key order.
func wordMatches(ctx context.Context, s store.Store, namespace []string, query string, limit int) ([]Memory, error) {
	items, err := s.Search(ctx, namespace, store.Query{Limit: maxScan})
	if err != nil {
		return nil, err
	}
	words := map[string]bool{}
	for _, w := range fields(query) {
		if len([]rune(w)) > 2 {
			words[w] = true
		}
	}
	var keep []*store.Item
	for _, it := range items {
		var v struct{ Text string }
		if json.Unmarshal(it.Value, &v) != nil {
			continue
		}
		for _, w := range fields(v.Text) {
			if words[w] {
				keep = append(keep, it)
				break
			}
		}
		if len(keep) == limit {
			break
		}
	}
	return memories(keep), nil
}

func fields(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

func memories(items []*store.Item) []Memory {
	out := []Memory{}
	for _, it := range items {
		var v struct{ Text string }
		_ = json.Unmarshal(it.Value, &v)
		out = append(out, Memory{ID: it.Key, Memory: v.Text, Score: it.Score})
	}
	return out
}
