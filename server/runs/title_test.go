package runs

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trellis-agents/trellis/checkpoint/sqlite"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/db"
	dbsqlite "github.com/trellis-agents/trellis/server/db/sqlite"
)

func TestCutTitle(t *testing.T) {
	long := strings.Repeat("plan ", 20)
	for in, want := range map[string]string{
		"  Plan my\n week.  ":   "Plan my week",
		`"Weekly study plan"`:   "Weekly study plan",
		long:                    strings.TrimSpace(strings.Repeat("plan ", 12)) + "…",
		strings.Repeat("长", 70): strings.Repeat("长", 59) + "…",
		"":                      "",
	} {
		if got := CutTitle(in); got != want {
			t.Errorf("CutTitle(%q) = %q, want %q", in, got, want)
		}
		if n := len([]rune(CutTitle(in))); n > titleRunes {
			t.Errorf("CutTitle(%q) has %d runes", in, n)
		}
	}
}

func TestFirstExchange(t *testing.T) {
	u, a := firstExchange(json.RawMessage(`{"messages":[{"type":"system","content":"be brief"},
		{"type":"human","content":[{"type":"text","text":"plan"},{"type":"image_url"},{"type":"text","text":"my week"}]},
		{"type":"ai","content":""},{"type":"tool","content":"ok"},{"type":"ai","content":"Here is a plan."},{"type":"human","content":"later"}]}`))
	if u != "plan my week" || a != "Here is a plan." {
		t.Errorf("first exchange %q / %q", u, a)
	}
	if u, a := firstExchange(json.RawMessage(`{"log":["x"]}`)); u != "" || a != "" {
		t.Errorf("values without messages gave %q / %q", u, a)
	}
}

func TestPlainTitle(t *testing.T) {
	for in, want := range map[string]string{
		`{"log":["x"],"messages":[{"type":"system","content":"be brief"},{"type":"human","content":""},` +
			`{"type":"human","content":[{"type":"text","text":"Plan my"},{"type":"text","text":"week."}]},{"type":"human","content":"later"}]}`: "Plan my week",
		`{"messages":[{"type":"ai","content":"hi"}]}`: "",
		`{"log":["x"]}`: "",
		`[1,2]`:         "",
		`{"messages":[{"type":"human","content":"ok"},`: "ok", // read only as far as the first message
		`{"messages":[{"type":"human","content":`:       "",
		``: "",
	} {
		if got := plainTitle(json.RawMessage(in)); got != want {
			t.Errorf("plainTitle(%s) = %q, want %q", in, got, want)
		}
	}
}

var titleMsgs = llm.NewMessagesKey("messages")

// titleEnv is a run service whose graph answers every message with
// "Sure."; titler may be nil.
func titleEnv(t *testing.T, titler Titler) (*Service, *dbsqlite.DB) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "trellis.db")
	d, err := dbsqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); d.Close() })
	reg := NewRegistry(0)
	if err := reg.Register("bot", GraphSpec{New: func(context.Context, Assistant) (*graph.Graph, error) {
		b := graph.New(titleMsgs)
		b.AddNode("bot", func(context.Context, graph.State) (graph.Output, error) {
			return graph.Writes(graph.Append(titleMsgs, llm.Assistant("Sure."))), nil
		})
		b.SetEntry("bot")
		b.AddEdge("bot", graph.END)
		return b.Compile()
	}}); err != nil {
		t.Fatal(err)
	}
	svc, err := New(Config{DB: d, Saver: s, Graphs: reg, Wire: LCWire{}, Converter: LCConverter(), Titler: titler})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateAssistant(ctx, "acme", db.Assistant{ID: "bot-a", GraphID: "bot", Name: "bot"}, db.IfExistsRaise); err != nil {
		t.Fatal(err)
	}
	return svc, d
}

// say runs one message on thread and waits for background titles.
func say(t *testing.T, svc *Service, thread, text string) {
	t.Helper()
	in, _ := json.Marshal(map[string]any{"messages": []map[string]string{{"role": "user", "content": text}}})
	if _, err := svc.Create(context.Background(), nil, CreateRequest{Tenant: "acme", ThreadID: thread, AssistantID: "bot-a",
		Kwargs: Kwargs{Input: in}, CreateThread: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Advance(context.Background(), "acme", thread); err != nil {
		t.Fatal(err)
	}
	svc.Wait()
}

func titleOf(t *testing.T, d *dbsqlite.DB, thread string) any {
	t.Helper()
	th, err := d.GetThread(context.Background(), "acme", thread)
	if err != nil {
		t.Fatal(err)
	}
	return th.Metadata[TitleKey]
}

// Without a model the title is the first user message, cut short; it is
// set once, after the first exchange.
func TestThreadTitleFromFirstMessage(t *testing.T) {
	svc, d := titleEnv(t, nil)
	say(t, svc, "t1", "Plan   my study week, please.")
	if got := titleOf(t, d, "t1"); got != "Plan my study week, please" {
		t.Fatalf("title %v", got)
	}
	say(t, svc, "t1", "And the next one")
	if got := titleOf(t, d, "t1"); got != "Plan my study week, please" {
		t.Fatalf("the second exchange changed the title to %v", got)
	}
}

// A titler writes the title from the first exchange; when it fails the
// first message is the title.
func TestThreadTitleFromTitler(t *testing.T) {
	var seen []string
	svc, d := titleEnv(t, func(_ context.Context, user, answer string) (string, error) {
		seen = append(seen, user+" | "+answer)
		if strings.Contains(user, "fail") {
			return "", errors.New("the model is down")
		}
		return `"Study week planning."`, nil
	})
	say(t, svc, "t1", "plan my week")
	if got := titleOf(t, d, "t1"); got != "Study week planning" {
		t.Fatalf("title %v", got)
	}
	if len(seen) != 1 || seen[0] != "plan my week | Sure." {
		t.Fatalf("the titler saw %q", seen)
	}
	say(t, svc, "t2", "please fail")
	if got := titleOf(t, d, "t2"); got != "please fail" {
		t.Fatalf("title after the titler failed: %v", got)
	}
}
