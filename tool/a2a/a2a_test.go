package a2a_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	proto "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"go.uber.org/goleak"

	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/internal/netguard"
	"github.com/trellis-agents/trellis/internal/testenv"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/tool/a2a"
)

// Every test stops what it starts: remote servers, streams, connections.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// asker is an a2a-go agent that asks one question ("What is your name?")
// and greets the answer, or fails, or works until released or cancelled.
type asker struct {
	mu       sync.Mutex
	executes []proto.TaskID // the task of each Execute
	answers  []string
	cancels  int
	fail     bool
	reply    bool          // answer with a message, not a task
	block    chan struct{} // non-nil: the first message works until it closes
	working  chan struct{} // closed once the blocking task is working
}

func (x *asker) Execute(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[proto.Event, error] {
	return func(yield func(proto.Event, error) bool) {
		x.mu.Lock()
		x.executes = append(x.executes, ec.TaskID)
		x.mu.Unlock()
		say := func(s proto.TaskState, text string) bool {
			var m *proto.Message
			if text != "" {
				m = proto.NewMessageForTask(proto.MessageRoleAgent, ec, proto.NewTextPart(text))
			}
			return yield(proto.NewStatusUpdateEvent(ec, s, m), nil)
		}
		if x.reply {
			yield(proto.NewMessage(proto.MessageRoleAgent, proto.NewTextPart("Hi there")), nil)
			return
		}
		if ec.StoredTask == nil {
			if !yield(proto.NewSubmittedTask(ec, ec.Message), nil) {
				return
			}
			switch {
			case x.fail:
				say(proto.TaskStateFailed, "the remote broke: no greeting today")
			case x.block != nil:
				if !say(proto.TaskStateWorking, "thinking") {
					return
				}
				close(x.working)
				select {
				case <-x.block:
				case <-ctx.Done():
					return
				}
				if yield(proto.NewArtifactEvent(ec, proto.NewTextPart("finally done")), nil) {
					say(proto.TaskStateCompleted, "")
				}
			default:
				say(proto.TaskStateInputRequired, "What is your name?")
			}
			return
		}
		var answer string
		for _, p := range ec.Message.Parts {
			answer += p.Text()
		}
		x.mu.Lock()
		x.answers = append(x.answers, answer)
		x.mu.Unlock()
		if say(proto.TaskStateWorking, "") && yield(proto.NewArtifactEvent(ec, proto.NewTextPart("Hello, "+answer)), nil) {
			say(proto.TaskStateCompleted, "")
		}
	}
}

func (x *asker) Cancel(ctx context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[proto.Event, error] {
	return func(yield func(proto.Event, error) bool) {
		x.mu.Lock()
		x.cancels++
		x.mu.Unlock()
		yield(proto.NewStatusUpdateEvent(ec, proto.TaskStateCanceled, nil), nil)
	}
}

func (x *asker) seen() (executes []proto.TaskID, answers []string, cancels int) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]proto.TaskID(nil), x.executes...), append([]string(nil), x.answers...), x.cancels
}

// remote serves x with a2a-go's own server on 127.0.0.1; the card names
// the JSON-RPC endpoint at rpcBase (the server itself when "").
// auth, when set, is the Authorization every request must carry.
type remote struct {
	srv  *httptest.Server
	mu   sync.Mutex
	auth []string // the Authorization header of every request
}

func serveRemote(t *testing.T, x *asker, rpcBase string) *remote {
	t.Helper()
	r := &remote{}
	mux := http.NewServeMux()
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.auth = append(r.auth, req.Header.Get("Authorization"))
		r.mu.Unlock()
		mux.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	base := rpcBase
	if base == "" {
		base = r.srv.URL
	}
	card := &proto.AgentCard{
		Name: "greeter", Description: "Greets you by name.", Version: "1",
		SupportedInterfaces: []*proto.AgentInterface{proto.NewAgentInterface(base+"/rpc", proto.TransportProtocolJSONRPC)},
		DefaultInputModes:   []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"},
		Capabilities: proto.AgentCapabilities{Streaming: true},
	}
	mux.Handle(a2asrv.WellKnownAgentCardPath, a2asrv.NewStaticAgentCardHandler(card))
	if x != nil {
		mux.Handle("/rpc", a2asrv.NewJSONRPCHandler(a2asrv.NewHandler(x)))
	}
	return r
}

func (r *remote) seenAuth() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auth...)
}

func newAgent(t *testing.T, cfg a2a.Config) *a2a.Agent {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "greeter"
	}
	cfg.AllowPrivate = true
	cfg.PollInterval = 20 * time.Millisecond
	a, err := a2a.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

var (
	reply = graph.NewKey[string]("reply")
	start = graph.Writes(reply.Set(""))
)

// callGraph is one node that calls the agent with "greet me" and keeps
// the answer (or the error's text, when keepErr).
func callGraph(t *testing.T, a *a2a.Agent, keepErr bool) *graph.Graph {
	t.Helper()
	b := graph.New(reply)
	b.AddNode("call", func(ctx context.Context, _ graph.State) (graph.Output, error) {
		res, err := a.Call(ctx, "greet me")
		if err != nil {
			if _, remote := errors.AsType[*a2a.RemoteError](err); keepErr && remote {
				return graph.Writes(reply.Set("error: " + err.Error())), nil
			}
			return nil, err
		}
		return graph.Writes(reply.Set(res.Text)), nil
	})
	b.SetEntry("call")
	b.AddEdge("call", graph.END)
	g, err := b.Compile()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// run streams a run and returns its final error (an interrupt as an
// *graph.InterruptError), its last state and its custom events.
func run(ctx context.Context, g *graph.Graph, input graph.Update, opts ...graph.RunOption) (events []a2a.Event, state graph.State, err error) {
	return watch(ctx, g, input, nil, opts...)
}

// watch is run calling see with each custom event as it comes.
func watch(ctx context.Context, g *graph.Graph, input graph.Update, see func(a2a.Event), opts ...graph.RunOption) (events []a2a.Event, state graph.State, err error) {
	opts = append(opts, graph.WithEvents(graph.EventCustom|graph.EventValues|graph.EventInterrupt))
	for ev, e := range g.Stream(ctx, input, opts...) {
		if e != nil {
			return events, state, e
		}
		switch ev.Kind {
		case graph.EventCustom:
			if x, ok := ev.Custom.(a2a.Event); ok {
				events = append(events, x)
				if see != nil {
					see(x)
				}
			}
		case graph.EventValues:
			state = ev.State
		case graph.EventInterrupt:
			return events, state, &graph.InterruptError{Interrupts: ev.Interrupts}
		}
	}
	return events, state, nil
}

// The remote's question is a local interrupt; the answer goes back on
// the same remote task, which completes; the task's status and artifacts
// stream as the local run's events naming the agent and the task.
func TestRemoteQuestionIsALocalInterrupt(t *testing.T) {
	x := &asker{}
	r := serveRemote(t, x, "")
	a := newAgent(t, a2a.Config{CardURL: r.srv.URL})
	g := callGraph(t, a, false)
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t1")}
	events, _, err := run(context.Background(), g, start, opts...)
	ie, ok := errors.AsType[*graph.InterruptError](err)
	if !ok || len(ie.Interrupts) != 1 {
		t.Fatalf("the first run: %v, want one interrupt", err)
	}
	var q a2a.Question
	if err := json.Unmarshal(ie.Interrupts[0].Payload, &q); err != nil || q.Kind != "ask_human" || q.Question != "What is your name?" || q.Agent != "greeter" || q.TaskID == "" {
		t.Fatalf("the interrupt's payload %s (%v)", ie.Interrupts[0].Payload, err)
	}
	if len(events) == 0 || events[len(events)-1].State != "input-required" || events[len(events)-1].TaskID != q.TaskID {
		t.Errorf("events of the first run: %+v; want the last input-required for task %s", events, q.TaskID)
	}
	events, st, err := run(context.Background(), g, nil, append(opts, graph.WithResume("Ada"))...)
	if err != nil {
		t.Fatal(err)
	}
	if got := reply.Get(st); got != "Hello, Ada" {
		t.Errorf("reply %q, want Hello, Ada", got)
	}
	executes, answers, _ := x.seen()
	if len(executes) != 2 || executes[0] != executes[1] || string(executes[0]) != q.TaskID {
		t.Errorf("remote executions %v; want two on task %s (the question, then its answer)", executes, q.TaskID)
	}
	if len(answers) != 1 || answers[0] != "Ada" {
		t.Errorf("remote answers %v", answers)
	}
	var art, done bool
	for _, e := range events {
		art = art || e.Kind == "remote_artifact" && e.Text == "Hello, Ada"
		done = done || e.Kind == "remote_status" && e.State == "completed"
	}
	if !art || !done {
		t.Errorf("events of the resumed run %+v; want the artifact and completed", events)
	}
}

// A remote failure is a *RemoteError saying what the remote said, and the
// thread stays usable: the node kept the error, the run finished.
func TestRemoteFailureIsAClearError(t *testing.T) {
	r := serveRemote(t, &asker{fail: true}, "")
	a := newAgent(t, a2a.Config{CardURL: r.srv.URL})
	g := callGraph(t, a, true)
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t1")}
	_, st, err := run(context.Background(), g, start, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if got := reply.Get(st); !strings.Contains(got, "remote agent greeter") || !strings.Contains(got, "failed") || !strings.Contains(got, "the remote broke") {
		t.Errorf("reply %q; want the remote's failure named", got)
	}
	// The tool says the same as its error, for a model.
	_, st, err = run(context.Background(), g, graph.Writes(reply.Set("again")), opts...)
	if err != nil || !strings.Contains(reply.Get(st), "the remote broke") {
		t.Errorf("a second run on the thread: %v %q", err, reply.Get(st))
	}
	// An agent nothing listens for is a RemoteError too, not a panic.
	dead := serveRemote(t, nil, "http://127.0.0.1:1")
	b := newAgent(t, a2a.Config{CardURL: dead.srv.URL})
	_, st, err = run(context.Background(), callGraph(t, b, true), start, opts...)
	if err != nil || !strings.Contains(reply.Get(st), "remote agent greeter: send the message") {
		t.Errorf("an unreachable endpoint: %v %q", err, reply.Get(st))
	}
}

// cancelOnWorking calls cancel once the remote task says it works.
func cancelOnWorking(cancel func()) func(a2a.Event) {
	return func(e a2a.Event) {
		if e.State == "working" {
			cancel()
		}
	}
}

// Cancelling the local run cancels the remote task.
func TestCancelGoesDown(t *testing.T) {
	x := &asker{block: make(chan struct{}), working: make(chan struct{})}
	defer close(x.block)
	r := serveRemote(t, x, "")
	a := newAgent(t, a2a.Config{CardURL: r.srv.URL})
	g := callGraph(t, a, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, _, err := watch(ctx, g, start, cancelOnWorking(func() { cancel() }), graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t1"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled run: %v", err)
	}
	if _, _, cancels := x.seen(); cancels != 1 {
		t.Errorf("remote cancels %d, want 1", cancels)
	}
}

// A run stopped with the remote kept (a server stopping for takeover)
// leaves the remote task running; the next run on the thread, with a new
// Agent as after a restart, reattaches to that task by its saved IDs and
// does not send the message again.
func TestRestartReattaches(t *testing.T) {
	x := &asker{block: make(chan struct{}), working: make(chan struct{})}
	r := serveRemote(t, x, "")
	errStopping := errors.New("stopping")
	keep := func(cause error) bool { return errors.Is(cause, errStopping) }
	a := newAgent(t, a2a.Config{CardURL: r.srv.URL, KeepRemoteOn: keep})
	saver := checkpoint.NewMemory()
	opts := []graph.RunOption{graph.WithCheckpointer(saver), graph.WithThread("t1"), graph.WithDurability(graph.DurabilitySync)}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	if _, _, err := watch(ctx, callGraph(t, a, false), start, cancelOnWorking(func() { cancel(errStopping) }), opts...); err == nil {
		t.Fatal("the stopped run did not fail")
	}
	if _, _, cancels := x.seen(); cancels != 0 {
		t.Fatalf("the kept remote task was cancelled %d times", cancels)
	}
	b := newAgent(t, a2a.Config{CardURL: r.srv.URL})
	time.AfterFunc(100*time.Millisecond, func() { close(x.block) })
	_, st, err := run(context.Background(), callGraph(t, b, false), nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if got := reply.Get(st); got != "finally done" {
		t.Errorf("reply %q, want the first task's artifact", got)
	}
	if executes, _, _ := x.seen(); len(executes) != 1 {
		t.Errorf("remote executions %v; want the one task, reattached", executes)
	}
}

// Headers go only to the card URL's origin: a card that names another
// host's endpoint gets no credential sent there.
func TestCredentialsStayWithTheirOrigin(t *testing.T) {
	x := &asker{}
	other := serveRemote(t, x, "")
	home := serveRemote(t, nil, other.srv.URL)
	a := newAgent(t, a2a.Config{CardURL: home.srv.URL, Headers: map[string]string{"Authorization": "Bearer k1"}})
	_, _, err := run(context.Background(), callGraph(t, a, false), start, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t1"))
	if _, ok := errors.AsType[*graph.InterruptError](err); !ok {
		t.Fatalf("the run: %v, want the remote's question", err)
	}
	if got := home.seenAuth(); len(got) == 0 || got[0] != "Bearer k1" {
		t.Errorf("the card's origin saw %q, want the configured header", got)
	}
	for _, h := range other.seenAuth() {
		if h != "" {
			t.Errorf("another origin got the credential %q", h)
		}
	}
}

// Non-public addresses are refused unless allowed: a literal one when the
// agent is configured, a name that resolves to one when it is dialled;
// hosts off the allow-list are refused too.
func TestGuardedDialer(t *testing.T) {
	if _, err := a2a.New(a2a.Config{Name: "x", CardURL: "http://127.0.0.1:9/"}); !errors.Is(err, netguard.ErrRefused) {
		t.Errorf("a loopback card URL: %v, want a refusal", err)
	}
	if _, err := a2a.New(a2a.Config{Name: "x", CardURL: "https://agents.example/", AllowHosts: []string{"other.example"}}); err == nil || !strings.Contains(err.Error(), "allowed hosts") {
		t.Errorf("a host off the allow-list: %v", err)
	}
	if _, err := a2a.New(a2a.Config{Name: "bad name", CardURL: "https://agents.example/"}); err == nil {
		t.Error("a name with a space was accepted")
	}
	if _, err := a2a.New(a2a.Config{Name: "x", CardURL: "ftp://agents.example/"}); err == nil {
		t.Error("an ftp URL was accepted")
	}
	r := serveRemote(t, &asker{}, "")
	a, err := a2a.New(a2a.Config{Name: "x", CardURL: strings.Replace(r.srv.URL, "127.0.0.1", "localhost", 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := a.Card(context.Background()); !errors.Is(err, netguard.ErrRefused) {
		t.Errorf("a name resolving to loopback: %v, want a refusal", err)
	}
}

// jsAgent starts server/testdata/js/a2a_asker.mjs (an agent on
// @a2a-js/sdk's server classes) and returns its URL; the test is skipped
// without node and the SDK (failed under TRELLIS_REQUIRE_SERVICES=1).
func jsAgent(t *testing.T) string {
	t.Helper()
	dir, _ := filepath.Abs("../../server/testdata/js")
	_, nodeErr := exec.LookPath("node")
	_, sdkErr := os.Stat(filepath.Join(dir, "node_modules", "@a2a-js", "sdk"))
	if nodeErr != nil || sdkErr != nil {
		msg := "this test needs node and server/testdata/js/node_modules (npm ci there)"
		if testenv.Required() {
			t.Fatal(testenv.RequireVar + "=1 but " + msg)
		}
		t.Skip(msg)
	}
	cmd := exec.Command("node", "a2a_asker.mjs")
	cmd.Dir = dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = stdin.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan string, 1)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		_ = cmd.Wait()
	}()
	select {
	case l := <-lines:
		url, ok := strings.CutPrefix(l, "listening ")
		if !ok {
			t.Fatalf("the JS agent said %q", l)
		}
		return url
	case <-time.After(60 * time.Second):
		t.Fatal("the JS agent did not start")
	}
	return ""
}

// A remote agent on @a2a-js/sdk's server classes: its question becomes
// a local interrupt, and the answer completes the remote task.
func TestJSAgentAsTheRemote(t *testing.T) {
	url := jsAgent(t)
	a := newAgent(t, a2a.Config{CardURL: url})
	g := callGraph(t, a, false)
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t1")}
	_, _, err := run(context.Background(), g, start, opts...)
	ie, ok := errors.AsType[*graph.InterruptError](err)
	if !ok || len(ie.Interrupts) != 1 || !strings.Contains(string(ie.Interrupts[0].Payload), "What is your name?") {
		t.Fatalf("the first run: %v; want the JS agent's question", err)
	}
	_, st, err := run(context.Background(), g, nil, append(opts, graph.WithResume("Grace"))...)
	if err != nil {
		t.Fatal(err)
	}
	if got := reply.Get(st); got != "Hello, Grace" {
		t.Errorf("reply %q, want Hello, Grace", got)
	}
}

// chunks runs g streaming message chunks and returns them.
func chunks(ctx context.Context, t *testing.T, g *graph.Graph, input graph.Update, opts ...graph.RunOption) []graph.Event {
	t.Helper()
	var out []graph.Event
	opts = append(opts, graph.WithEvents(graph.EventMessages|graph.EventInterrupt))
	for ev, err := range g.Stream(ctx, input, opts...) {
		if err != nil {
			if _, ok := errors.AsType[*graph.InterruptError](err); !ok {
				t.Fatal(err)
			}
			break
		}
		if ev.Kind == graph.EventMessages {
			out = append(out, ev)
		}
	}
	return out
}

// The remote's words stream as the local run's message chunks, in the
// remote agent's voice, from the node that called it: its progress note
// while it works and its artifact's text, not its question (that is the
// interrupt).
func TestRemoteTextStreamsAsMessageChunks(t *testing.T) {
	x := &asker{block: make(chan struct{}), working: make(chan struct{})}
	r := serveRemote(t, x, "")
	a := newAgent(t, a2a.Config{CardURL: r.srv.URL})
	g := callGraph(t, a, false)
	go func() { <-x.working; close(x.block) }()
	got := chunks(context.Background(), t, g, start, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t1"))
	var texts []string
	for _, ev := range got {
		c := ev.Message
		if ev.Node != "call" || c.Part != graph.PartText || c.Meta[llm.MetaVoice] != "greeter" || c.Meta["remote_agent"] != "greeter" || c.Meta["a2a_task_id"] == "" || !strings.HasPrefix(c.MessageID, "a2a:"+c.Meta["a2a_task_id"]+":") {
			t.Errorf("chunk %+v from node %q: want a text chunk of node call in greeter's voice naming its task", c, ev.Node)
		}
		texts = append(texts, c.Text)
	}
	if strings.Join(texts, "|") != "thinking|finally done" {
		t.Errorf("chunks %q, want the progress note then the artifact", texts)
	}

	// A question is not a chunk; the answer's artifact is.
	g2 := callGraph(t, newAgent(t, a2a.Config{CardURL: serveRemote(t, &asker{}, "").srv.URL}), false)
	opts := []graph.RunOption{graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t2")}
	if first := chunks(context.Background(), t, g2, start, opts...); len(first) != 0 {
		t.Errorf("chunks before the question: %+v, want none", first)
	}
	texts = texts[:0]
	for _, ev := range chunks(context.Background(), t, g2, nil, append(opts, graph.WithResume("Ada"))...) {
		texts = append(texts, ev.Message.Text)
	}
	if strings.Join(texts, "|") != "Hello, Ada" {
		t.Errorf("chunks after the answer %q, want the artifact", texts)
	}

	// An agent that answers with a message, not a task: its text is one
	// chunk, with no task named.
	g3 := callGraph(t, newAgent(t, a2a.Config{CardURL: serveRemote(t, &asker{reply: true}, "").srv.URL}), false)
	texts = texts[:0]
	for _, ev := range chunks(context.Background(), t, g3, start, graph.WithCheckpointer(checkpoint.NewMemory()), graph.WithThread("t3")) {
		texts = append(texts, ev.Message.Text+" "+ev.Message.Meta[llm.MetaVoice]+" "+ev.Message.Meta["a2a_task_id"])
	}
	if strings.Join(texts, "|") != "Hi there greeter " {
		t.Errorf("chunks of a message reply %q, want its text in greeter's voice", texts)
	}
}
