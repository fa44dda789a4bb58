package web_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/apps/catalog"
	"github.com/trellis-agents/trellis/apps/planner"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server"
	"github.com/trellis-agents/trellis/server/runs"
)

// evilReply is a model reply that tries to run script in the page.
const evilReply = "Hello **there**. <script>window.__pwned = 'script'</script>\n\n" +
	"[click me](javascript:window.__pwned='link') <a href=\"javascript:window.__pwned='raw'\">raw</a> " +
	"<img src=x onerror=\"window.__pwned='img'\"> [ok](https://example.com/)"

// evilGraph answers every message with evilReply.
func evilGraph() runs.GraphSpec {
	return runs.GraphSpec{Description: "replies with markup that must stay inert", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(react.Messages)
		b.AddNode("reply", func(ctx context.Context, s graph.State) (graph.Output, error) {
			msg := llm.Assistant(evilReply)
			msg.ID = fmt.Sprintf("msg_evil_%d", len(react.Messages.Get(s)))
			return graph.Writes(graph.Append(react.Messages, msg)), nil
		})
		b.SetEntry("reply")
		b.AddEdge("reply", graph.END)
		return b.Compile()
	}}
}

// register is the part of the server a test adds graphs with.
type register interface {
	Register(graphID string, spec runs.GraphSpec) error
}

// serve starts trellis serve's server on a random loopback port with a
// temp SQLite file, the scripted apps, the evil graph and the test's
// extra graphs; it returns the page's URL.
func serve(t *testing.T, extra ...func(register) error) string {
	t.Helper()
	s, err := server.New(context.Background(), server.Config{
		Addr: "127.0.0.1:0", Database: filepath.Join(t.TempDir(), "web.db"), Logger: slog.New(slog.DiscardHandler), Scripted: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterApps(catalog.All(), server.Models{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Register("evil", evilGraph()); err != nil {
		t.Fatal(err)
	}
	for _, add := range extra {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	select {
	case <-s.Ready():
	case err := <-done:
		cancel()
		t.Fatalf("Run: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return "http://" + s.Addr() + "/"
}

// browser is a headless chromium tab; it fails the test on any uncaught
// exception in the page.
type browser struct {
	t    *testing.T
	ctx  context.Context
	shot string // where screenshots go

	mu   sync.Mutex
	errs []string
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("TRELLIS_REQUIRE_SERVICES") == "1" {
			t.Fatal("chromium is not installed (apt-get install chromium) and TRELLIS_REQUIRE_SERVICES=1")
		}
		t.Skip("chromium is not installed; the browser tests need it (apt-get install chromium)")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.WindowSize(1200, 900))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // chromium refuses to sandbox as root
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		acancel()
	})
	b := &browser{t: t, ctx: ctx, shot: screenshotDir(t)}
	if err := chromedp.Listen(ctx, func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			b.mu.Lock()
			d := e.ExceptionDetails
			msg := d.Text
			if d.Exception != nil && d.Exception.Description != "" {
				msg = d.Exception.Description
			}
			b.errs = append(b.errs, fmt.Sprintf("%s (%s:%d)", msg, d.URL, d.LineNumber+1))
			b.mu.Unlock()
		}
	}); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.errs {
			t.Errorf("uncaught exception in the page: %s", e)
		}
	})
	return b
}

// screenshotDir is TRELLIS_WEB_SCREENSHOTS, or a new temp folder kept
// after the test (its path is logged).
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("TRELLIS_WEB_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	d, err := os.MkdirTemp("", "trellis-web-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", d)
	return d
}

// do runs the steps, with a deadline so a missing element fails the test
// instead of hanging it.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	err := chromedp.Do(ctx, steps...)
	// A lone action whose node the page re-rendered between the query and
	// the action (a list refreshed by the run's end) did nothing: it is
	// queried and tried again. Several steps are not, as the first may
	// have acted.
	for try := 0; try < 3 && len(steps) == 1 && staleNode(err); try++ {
		time.Sleep(50 * time.Millisecond)
		err = chromedp.Do(ctx, steps...)
	}
	if err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// staleNode reports the DevTools error of an action on a node the page
// removed after it was found.
func staleNode(err error) bool {
	return err != nil && strings.Contains(err.Error(), "Could not find node with given id")
}

// eval evaluates a JavaScript expression.
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitFor waits until a JavaScript expression is truthy.
func (b *browser) waitFor(what, expr string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		b.t.Fatalf("waiting for %s (%s): %v; the page says: %s", what, expr, err, eval[string](b, "document.body.innerText"))
	}
}

// screenshot saves the viewport as name.png.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot %s: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(b.shot, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// button finds a button of the card by its text.
func button(text string) string {
	return fmt.Sprintf(`//*[@id='cards']//button[normalize-space()=%q]`, text)
}

// pick selects the assistant of the graph in the picker.
func (b *browser) pick(graphID string) {
	b.t.Helper()
	b.waitFor("the assistants", `document.querySelectorAll('#assistant option').length > 0`)
	ok := eval[bool](b, fmt.Sprintf(`(() => { const s = document.getElementById('assistant');
		const o = [...s.options].find((o) => o.textContent === %q); if (!o) return false;
		s.value = o.value; s.dispatchEvent(new Event('change')); return true; })()`, graphID))
	if !ok {
		b.t.Fatalf("no assistant %s in the picker", graphID)
	}
}

// send types a message and sends it with the keyboard (Enter).
func (b *browser) send(text string) {
	b.t.Helper()
	b.do("sending "+text, chromedp.Click(chromedp.ID("input")), chromedp.SendKeys(chromedp.ID("input"), text+"\r"))
}

// The planner flow, as a person does it: pick the planner, ask, choose the
// city, fill the form (an out-of-range number is caught in the page
// first), reject the plan with a comment, confirm the new one, approve the
// booking with the keyboard, read the answer.
func TestBrowserPlannerFlow(t *testing.T) {
	b := newBrowser(t)
	url := serve(t)
	b.do("opening the page", chromedp.Navigate(url))
	b.waitFor("the demo banner", `!document.getElementById('banner').hidden`)
	b.pick("planner")
	b.send("Plan our team offsite")

	b.waitFor("the city question", `document.querySelector('#cards .card[data-kind=planexec_ask] button.choice')`)
	if got := eval[string](b, `document.querySelector('#cards h3').textContent`); got != planner.CityQuestion {
		t.Errorf("the question reads %q", got)
	}
	b.screenshot("1-choice")
	b.do("choosing Lisbon", chromedp.Click(button("Lisbon")))

	b.waitFor("the form", `document.querySelector('#cards input[name=people]')`)
	b.do("filling the form wrongly",
		chromedp.SendKeys(chromedp.CSS(`#cards input[name=people]`), "50"),
		chromedp.SetValue(chromedp.CSS(`#cards select[name=length]`), "2 days"),
		chromedp.Click(button("Send")))
	b.waitFor("the page's verdict on people", `document.querySelector('#cards input[name=people]').getAttribute('aria-invalid') === 'true'`)
	if got := eval[string](b, `document.querySelector('#cards .field-error').textContent`); !strings.Contains(got, "at most 40") {
		t.Errorf("the error on people reads %q", got)
	}
	if got := eval[string](b, `document.activeElement.name`); got != "people" {
		t.Errorf("the focus is on %q, not the bad field", got)
	}
	b.screenshot("2-form-invalid")
	b.do("correcting the form",
		chromedp.SetValue(chromedp.CSS(`#cards input[name=people]`), ""),
		chromedp.SendKeys(chromedp.CSS(`#cards input[name=people]`), "12"),
		chromedp.Click(button("Send")))

	b.waitFor("the plan review", `document.querySelector('#cards .card[data-kind=planexec_plan_review]')`)
	steps := eval[[]string](b, `[...document.querySelectorAll('#cards .plan-steps li strong')].map((e) => e.textContent)`)
	if len(steps) != 5 || steps[0] != "Find venues" || steps[4] != "Book the venue" {
		t.Errorf("the plan's steps: %q", steps)
	}
	if got := eval[string](b, `document.querySelector('#cards li[data-step=book] .deps').textContent`); got != "After: Check availability, Estimate the budget" {
		t.Errorf("the booking's dependencies read %q", got)
	}
	eval[bool](b, `(document.querySelector('#cards .card').scrollIntoView({block: 'start'}), true)`)
	b.screenshot("3-plan-review")
	b.checkA11y("plan review")

	// Rejecting needs a comment; with one, the agent plans again.
	b.do("rejecting without a comment", chromedp.Click(button("Reject and re-plan")))
	b.waitFor("the page asking for a comment", `document.querySelector('#cards .plan .field-error').textContent !== ''`)
	eval[string](b, `document.querySelector('#cards .card').dataset.old = 'yes'`)
	b.do("rejecting with a comment",
		chromedp.SendKeys(chromedp.CSS(`#cards .plan textarea`), "Add a step for the catering"),
		chromedp.Click(button("Reject and re-plan")))
	b.waitFor("the plan again", `document.querySelector('#cards .card[data-kind=planexec_plan_review]:not([data-old])')`)
	eval[string](b, `document.querySelector('#cards .card').dataset.old = 'yes'`)
	b.do("confirming the plan", chromedp.Click(button("Confirm the plan")))

	// The scripted replan after the venues step changes the approved plan,
	// so it comes back for review instead of replacing it silently.
	b.waitFor("the revised plan", `document.querySelector('#cards .card[data-kind=planexec_plan_review]:not([data-old])')`)
	if got := eval[string](b, `document.getElementById('messages').innerText + document.getElementById('cards').innerText`); !strings.Contains(got, "revised") {
		t.Errorf("the second review does not say the plan was revised: %q", got)
	}
	b.do("confirming the revised plan", chromedp.Click(button("Confirm the plan")))

	// The approval takes the focus, so Enter approves: keyboard only.
	b.waitFor("the approval", `document.querySelector('#cards .card[data-kind=tool_approval]')`)
	b.waitFor("the focus on Approve", `document.activeElement.textContent === 'Approve'`)
	if got := eval[string](b, `document.querySelector('#cards .card h3').textContent`); got != "Approve book_venue?" {
		t.Errorf("the approval reads %q", got)
	}
	if got := eval[string](b, `document.querySelector('#cards pre.args').textContent`); !strings.Contains(got, `"venue": "Quinta Verde"`) {
		t.Errorf("the approval's arguments: %s", got)
	}
	b.screenshot("4-approval")
	b.checkA11y("approval")
	b.do("approving with Enter", chromedp.KeyEvent("\r"))

	b.waitFor("the final answer", fmt.Sprintf(`document.getElementById('messages').innerText.includes(%q)`, "Your offsite is booked"))
	b.waitFor("the idle thread", `!document.body.classList.contains('running') && document.getElementById('thread-status').textContent === 'idle'`)
	if n := eval[int](b, `document.querySelectorAll('#cards .card').length`); n != 0 {
		t.Errorf("%d cards left after the run", n)
	}
	b.waitFor("the thread in the list", `document.querySelector('#threads a[aria-current=page] .thread-title')?.textContent === 'Plan our team offsite'`)
	b.screenshot("5-answer")
	b.checkA11y("chat")

	// A reload shows the same thread and messages, once each.
	b.do("reloading", chromedp.Reload())
	b.waitFor("the answer after the reload", `document.getElementById('messages').innerText.includes('Your offsite is booked')`)
	if n := eval[int](b, `[...document.querySelectorAll('#messages .msg.ai')].filter((e) => e.innerText.includes('Your offsite is booked')).length`); n != 1 {
		t.Errorf("the answer shows %d times after the reload", n)
	}

	// At phone width the page is one column and nothing overflows.
	b.do("narrowing", chromedp.EmulateViewport(390, 844))
	if w := eval[int](b, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the page is %dpx wide at a 390px window", w)
	}
	b.screenshot("6-phone")
	b.checkA11y("phone-width chat")
}

// A model reply with script, javascript: links and event handlers renders
// as inert text and links: nothing runs, no javascript: href survives.
func TestBrowserUnsafeReplyIsInert(t *testing.T) {
	b := newBrowser(t)
	url := serve(t)
	b.do("opening the page", chromedp.Navigate(url))
	b.pick("evil")
	b.send("hi")
	b.waitFor("the reply", `[...document.querySelectorAll('#messages .msg.ai')].some((e) => e.innerText.includes('Hello there'))`)
	// Idle once the page has read the thread again after the stream (and
	// rendered its messages anew): only then are the links to click final.
	b.waitFor("the idle thread", `!document.body.classList.contains('running') && document.getElementById('thread-status').textContent === 'idle'`)
	if got := eval[string](b, `String(window.__pwned)`); got != "undefined" {
		t.Errorf("the reply ran script: window.__pwned = %s", got)
	}
	checks := map[string]string{
		"script elements":  `document.querySelectorAll('#messages script').length`,
		"javascript: URLs": `[...document.querySelectorAll('#messages [href], #messages [src]')].filter((e) => /^\s*javascript:/i.test(e.getAttribute('href') || e.getAttribute('src') || '')).length`,
		"event handlers":   `[...document.querySelectorAll('#messages *')].filter((e) => [...e.attributes].some((a) => a.name.startsWith('on'))).length`,
	}
	for what, expr := range checks {
		if n := eval[int](b, expr); n != 0 {
			t.Errorf("%d %s in the rendered reply", n, what)
		}
	}
	// Clicking the neutered links runs nothing either.
	b.do("clicking the links", chromedp.Click(`//*[@id='messages']//a[normalize-space()='click me']`), chromedp.Click(`//*[@id='messages']//a[normalize-space()='raw']`))
	if got := eval[string](b, `String(window.__pwned)`); got != "undefined" {
		t.Errorf("a link ran script: window.__pwned = %s", got)
	}
	if got := eval[string](b, `document.querySelector('#messages a[href^="https://example.com"]')?.rel || ''`); got != "noopener noreferrer nofollow" {
		t.Errorf("a safe link's rel is %q", got)
	}
	b.screenshot("unsafe-reply")

	// Dark when the system asks for it.
	b.do("asking for dark", chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}},
		})
		return err
	}))
	if got := eval[string](b, `getComputedStyle(document.body).backgroundColor`); got != "rgb(23, 23, 26)" {
		t.Errorf("the dark background is %s", got)
	}
	b.screenshot("unsafe-reply-dark")
	b.checkA11y("dark chat")
}
