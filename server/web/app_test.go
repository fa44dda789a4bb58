package web_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/apps/planner"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/runs"
)

// richReply is a model answer with what a chat page must render well: a
// heading, code in two languages and a table.
const richReply = "## Loans by genre\n\nThe query:\n\n```sql\nSELECT genre, count(*) AS loans FROM loans GROUP BY genre;\n```\n\n" +
	"| genre | loans |\n|---|---:|\n| Fantasy | 42 |\n| History | 17 |\n\nThe same in Go:\n\n```go\nfunc main() {\n\tfmt.Println(\"42 loans\")\n}\n```\n"

// richGraph answers every message with richReply.
func richGraph() runs.GraphSpec {
	return runs.GraphSpec{Description: "answers with Markdown: code and a table", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(react.Messages)
		b.AddNode("reply", func(ctx context.Context, s graph.State) (graph.Output, error) {
			msg := llm.Assistant(richReply)
			msg.ID = fmt.Sprintf("msg_rich_%d", len(react.Messages.Get(s)))
			return graph.Writes(graph.Append(react.Messages, msg)), nil
		})
		b.SetEntry("reply")
		b.AddEdge("reply", graph.END)
		return b.Compile()
	}}
}

// scheme emulates the system's light or dark preference.
func scheme(dark bool) chromedp.Action[chromedp.Void] {
	v := "light"
	if dark {
		v = "dark"
	}
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}},
		})
		return err
	})
}

// screens are the four ways each test looks at the page.
var screens = []struct {
	name          string
	width, height int64
	dark          bool
}{
	{"desktop", 1280, 860, false},
	{"desktop-dark", 1280, 860, true},
	{"phone", 390, 844, false},
	{"phone-dark", 390, 844, true},
}

// fits checks the app shell at the current window: the page itself never
// scrolls (sideways or down; only the transcript does), and the composer
// is wholly inside the window.
func (b *browser) fits(screen string) {
	b.t.Helper()
	got := eval[[]int](b, `(() => { const s = document.scrollingElement, c = document.getElementById('composer').getBoundingClientRect();
		return [s.scrollWidth, s.scrollHeight, innerWidth, innerHeight, Math.floor(c.left), Math.floor(c.top), Math.ceil(c.right), Math.ceil(c.bottom)]; })()`)
	sw, sh, w, h := got[0], got[1], got[2], got[3]
	if sw > w {
		b.t.Errorf("%s: the page scrolls sideways: %dpx wide in a %dpx window", screen, sw, w)
	}
	if sh > h {
		b.t.Errorf("%s: the page itself scrolls: %dpx tall in a %dpx window", screen, sh, h)
	}
	if l, tp, r, bt := got[4], got[5], got[6], got[7]; l < 0 || tp < 0 || r > w || bt > h || bt-tp < 40 {
		b.t.Errorf("%s: the composer is at (%d,%d)-(%d,%d), not wholly inside the %dx%d window", screen, l, tp, r, bt, w, h)
	}
}

// Point 7: an empty thread shows the assistants with their names and
// descriptions and the chosen one's example requests; choosing by the
// card changes the picker; an example starts the thread. An assistant
// that does not chat shows only its declared input, described.
func TestBrowserWelcomeShowsAssistantsAndExamples(t *testing.T) {
	b := newBrowser(t)
	url := serve(t)
	b.do("opening the page", chromedp.Navigate(url))
	b.waitFor("the welcome", `!document.getElementById('welcome').hidden && document.querySelectorAll('#welcome .assistant-card').length > 5`)

	// Every assistant of /assistants shows with its name and description,
	// in the picker's order: the defaults by name.
	cards := eval[[]string](b, `[...document.querySelectorAll('#welcome .assistant-card')].map((c) => c.querySelector('strong').textContent + '|' + (c.querySelector('span')?.textContent || ''))`)
	api, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](`fetch('/assistants/search', {method: 'POST', headers: {'content-type': 'application/json'}, body: '{"limit": 100}'})
		.then((r) => r.json()).then((l) => l.map((a) => a.name + '|' + (a.description || '')).sort())`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if got := append([]string(nil), cards...); strings.Join(got, "\n") != strings.Join(api, "\n") {
		t.Errorf("the cards read\n%s\nthe assistants are\n%s", strings.Join(got, "\n"), strings.Join(api, "\n"))
	}
	options := eval[[]string](b, `[...document.querySelectorAll('#assistant option')].map((o) => o.textContent)`)
	for i := 1; i < len(options); i++ {
		if options[i-1] > options[i] {
			t.Errorf("the picker is not in order: %q", options)
			break
		}
	}

	for _, s := range screens {
		b.do("resizing to "+s.name, chromedp.EmulateViewport(s.width, s.height), scheme(s.dark))
		b.do("choosing the planner by its card", chromedp.Click(`//*[@id='welcome']//button[contains(@class,'assistant-card')][strong='planner']`))
		b.waitFor("the planner's examples", `[...document.querySelectorAll('#welcome .example')].some((e) => e.textContent === 'Plan our team offsite')`)
		if got := eval[string](b, `document.querySelector('#assistant').selectedOptions[0].textContent + '|' + document.querySelector('#welcome [aria-pressed=true] strong').textContent`); got != "planner|planner" {
			t.Errorf("%s: after the planner's card the picker and the card say %q", s.name, got)
		}
		if got := eval[string](b, `document.getElementById('assistant-about').textContent`); got != planner.Summary {
			t.Errorf("%s: the picker describes the planner as %q", s.name, got)
		}
		b.fits(s.name + " welcome")
		b.checkA11y(s.name + " welcome")
		b.screenshot("welcome-" + s.name)
	}
	b.do("widening", chromedp.EmulateViewport(1280, 860), scheme(false))

	// The non-chat assistant: its one declared key, described; none of
	// its internal state keys, no reducer hints.
	b.do("choosing the testplanner", chromedp.Click(`//*[@id='welcome']//button[contains(@class,'assistant-card')][strong='testplanner']`))
	b.waitFor("the input form", `!document.getElementById('input-form').hidden && document.querySelector('#input-form input[name=thread]')`)
	if got := eval[[]string](b, `[...document.querySelectorAll('#input-form [name]')].map((e) => e.name)`); strings.Join(got, ",") != "thread" {
		t.Errorf("the input form's fields are %q, not the declared input (thread)", got)
	}
	form := eval[string](b, `document.getElementById('input-form').innerText`)
	for _, bad := range []string{"reducer", "schema_of_run", "batch"} {
		if strings.Contains(form, bad) {
			t.Errorf("the input form shows %q: %s", bad, form)
		}
	}
	if !strings.Contains(form, "Thread") || !strings.Contains(form, "test plans in the store") {
		t.Errorf("the input form does not label and describe its key: %s", form)
	}
	if got := eval[string](b, `document.querySelector('#welcome .hint')?.textContent || ''`); !strings.Contains(got, "fill it in") {
		t.Errorf("the welcome of a form assistant says %q", got)
	}
	b.screenshot("welcome-form")

	// An example starts the thread with it.
	b.do("choosing the planner", chromedp.Click(`//*[@id='welcome']//button[contains(@class,'assistant-card')][strong='planner']`))
	b.do("sending an example", chromedp.Click(`//*[@id='welcome']//button[normalize-space()='Plan our team offsite']`))
	b.waitFor("the city question", `document.querySelector('#cards .card[data-kind=planexec_ask] button.choice')`)
	if got := eval[string](b, `document.querySelector('#messages .msg.human').textContent`); !strings.Contains(got, "Plan our team offsite") {
		t.Errorf("the example sent %q", got)
	}
	if !eval[bool](b, `document.getElementById('welcome').hidden`) {
		t.Error("the welcome still shows on a thread")
	}
	// The graph marks the node that waits for the answer, and says so.
	b.waitFor("the waiting node", `document.querySelector('#graph .graph-node.waiting')`)
	if got := eval[string](b, `[...document.querySelectorAll('#graph .graph-node.waiting')].map((n) => n.dataset.node).join(',') + '|' + document.getElementById('graph-running').textContent`); got != "ask|Waiting for you at: ask" {
		t.Errorf("the graph's waiting node and line: %q", got)
	}
}

// Point 8: at phone width a thread with a long title does not scroll
// sideways, the title is cut with an ellipsis, the composer is whole, the
// header stays while only the transcript scrolls; the threads and the run
// panel open as drawers.
func TestBrowserPhoneWidthLayout(t *testing.T) {
	b := newBrowser(t)
	url := serve(t, func(s register) error { return s.Register("rich", richGraph()) })
	b.do("opening the page", chromedp.Navigate(url))
	b.pick("rich")
	long := "Compare the loans of every genre across all the branches of the library for the whole of 2025, " +
		"month by month, with the members who borrowed most: " + strings.Repeat("Supercalifragilistic", 6)
	for i := range 3 {
		b.send(fmt.Sprintf("%s (%d)", long, i))
		b.waitFor("the answer", fmt.Sprintf(`document.querySelectorAll('#messages .msg.ai').length === %d && !document.body.classList.contains('running')`, i+1))
	}
	b.waitFor("the long title", `document.getElementById('thread-title').textContent.startsWith('Compare the loans')`)

	for _, s := range screens {
		b.do("resizing to "+s.name, chromedp.EmulateViewport(s.width, s.height), scheme(s.dark))
		b.fits(s.name + " long thread")
		got := eval[[]int](b, `(() => { const t = document.getElementById('thread-title'), l = document.getElementById('log'), hd = document.querySelector('.chat-head').getBoundingClientRect();
			l.scrollTop = 0; const before = document.getElementById('composer').getBoundingClientRect().top; l.scrollTop = l.scrollHeight;
			return [t.scrollWidth, t.clientWidth, l.scrollHeight, l.clientHeight, Math.round(hd.top), Math.round(before), Math.round(document.getElementById('composer').getBoundingClientRect().top), Math.ceil(hd.right), innerWidth]; })()`)
		if got[0] <= got[1] || eval[string](b, `getComputedStyle(document.getElementById('thread-title')).textOverflow`) != "ellipsis" {
			t.Errorf("%s: the long title is not cut with an ellipsis (%d of %dpx)", s.name, got[0], got[1])
		}
		if got[2] <= got[3] {
			t.Errorf("%s: the transcript does not scroll (%d in %dpx); the test needs it to", s.name, got[2], got[3])
		}
		if got[5] != got[6] {
			t.Errorf("%s: the composer moved from %d to %d when the transcript scrolled", s.name, got[5], got[6])
		}
		if got[7] > got[8] {
			t.Errorf("%s: the header ends at %dpx in a %dpx window", s.name, got[7], got[8])
		}
		b.checkA11y(s.name + " long thread")
		b.screenshot("long-thread-" + s.name)
	}

	// At phone width the threads and the run panel are drawers.
	b.do("phone width", chromedp.EmulateViewport(390, 844), scheme(false))
	if eval[bool](b, `getComputedStyle(document.getElementById('sidebar')).visibility === 'visible'`) {
		t.Error("the threads show over the chat before they are asked for")
	}
	b.do("opening the threads", chromedp.Click(`//button[@aria-label='Threads and assistants']`))
	b.waitFor("the threads drawer", `getComputedStyle(document.getElementById('sidebar')).visibility === 'visible' && document.getElementById('sidebar').getBoundingClientRect().left === 0`)
	if got := eval[string](b, `document.getElementById('sidebar-open').getAttribute('aria-expanded') + '|' + document.activeElement.id`); got != "true|sidebar-close" {
		t.Errorf("with the drawer open: expanded and focus %q", got)
	}
	b.fits("phone, threads drawer")
	b.checkA11y("phone, threads drawer")
	b.screenshot("phone-threads-drawer")
	b.do("closing it with Escape", chromedp.KeyEvent("\x1b"))
	b.waitFor("the drawer closed", `getComputedStyle(document.getElementById('sidebar')).visibility === 'hidden' && document.activeElement.id === 'sidebar-open'`)
	b.do("opening the run panel", chromedp.Click(`//button[normalize-space()='Run']`))
	b.waitFor("the run drawer", `getComputedStyle(document.getElementById('inspector')).visibility === 'visible' && document.querySelectorAll('#graph .graph-node').length > 0`)
	b.fits("phone, run drawer")
	b.checkA11y("phone, run drawer")
	b.screenshot("phone-run-drawer")
}

// Point 9: a model's Markdown shows its code highlighted, each block with
// a copy button that copies the code, and its table as a table, in light
// and dark, wide and narrow.
func TestBrowserMarkdownCodeAndTables(t *testing.T) {
	b := newBrowser(t)
	url := serve(t, func(s register) error { return s.Register("rich", richGraph()) })
	b.do("opening the page", chromedp.Navigate(url))
	b.pick("rich")
	b.send("Loans by genre?")
	b.waitFor("the answer", `document.querySelector('#messages .msg.ai .code-block') && !document.body.classList.contains('running')`)

	langs := eval[[]string](b, `[...document.querySelectorAll('#messages .code-block .code-lang')].map((e) => e.textContent)`)
	if strings.Join(langs, ",") != "SQL,Go" {
		t.Errorf("the code blocks are labelled %q", langs)
	}
	if got := eval[[]string](b, `[...document.querySelectorAll('#messages .code-block code.hljs .hljs-keyword')].map((e) => e.textContent)`); !strings.Contains(strings.Join(got, " "), "SELECT") || !strings.Contains(strings.Join(got, " "), "func") {
		t.Errorf("the keywords highlighted: %q", got)
	}
	if got := eval[[]string](b, `[...document.querySelectorAll('#messages .table-wrap table th, #messages .table-wrap table td')].map((e) => e.textContent)`); strings.Join(got, "|") != "genre|loans|Fantasy|42|History|17" {
		t.Errorf("the table's cells: %q", got)
	}

	// The copy button copies the block's code as text.
	eval[bool](b, `(navigator.clipboard.writeText = (t) => { window.__copied = t; return Promise.resolve(); }, true)`)
	b.do("copying the Go code", chromedp.Click(`//*[@id='messages']//button[contains(., 'the Go code')]`))
	b.waitFor("the copy", `window.__copied !== undefined`)
	if got := eval[string](b, `window.__copied`); got != "func main() {\n\tfmt.Println(\"42 loans\")\n}\n" {
		t.Errorf("the copy button copied %q", got)
	}
	b.waitFor("the button saying so", `[...document.querySelectorAll('#messages button.copy')].some((e) => e.textContent.startsWith('Copied'))`)

	for _, s := range screens {
		b.do("resizing to "+s.name, chromedp.EmulateViewport(s.width, s.height), scheme(s.dark))
		// The keyword colour differs from the text's: highlighting shows.
		if got := eval[bool](b, `getComputedStyle(document.querySelector('#messages .hljs-keyword')).color !== getComputedStyle(document.querySelector('#messages .msg.ai')).color`); !got {
			t.Errorf("%s: keywords are the colour of the text", s.name)
		}
		b.fits(s.name + " markdown")
		eval[bool](b, `(document.querySelector('#messages .msg.ai').scrollIntoView({block: 'start'}), true)`)
		b.checkA11y(s.name + " markdown")
		b.screenshot("markdown-" + s.name)
	}
}

// Point 9: streaming does not jump. While a reply streams the transcript
// follows it if the reader is at the end; once they scroll up to read,
// the rest of the reply (and the saved messages replacing the streamed
// one) leave their place alone.
func TestBrowserStreamingFollowsOnlyAtTheEnd(t *testing.T) {
	b := newBrowser(t)
	gate := make(chan struct{})
	open := true
	t.Cleanup(func() {
		if open {
			close(gate)
		}
	})
	url := serve(t, func(s register) error {
		if err := s.Register("rich", richGraph()); err != nil {
			return err
		}
		return s.Register("gated", gatedGraph(gate))
	})
	b.do("opening the page", chromedp.Navigate(url), chromedp.EmulateViewport(1280, 700))
	b.pick("rich")
	for i := range 3 {
		b.send(fmt.Sprintf("Loans by genre, take %d", i))
		b.waitFor("the answer", fmt.Sprintf(`document.querySelectorAll('#messages .msg.ai').length === %d && !document.body.classList.contains('running')`, i+1))
	}
	atEnd := `(() => { const l = document.getElementById('log'); return l.scrollHeight - l.scrollTop - l.clientHeight < 4; })()`
	b.pick("gated")
	b.send("stream something")
	b.waitFor("the first half, followed to the end", `document.querySelector('#live .msg')?.innerText.includes('The first half') && `+atEnd)

	b.do("scrolling up to read", chromedp.Evaluate[chromedp.Void](`document.getElementById('log').scrollTop = 0`))
	b.waitFor("the scroll", `document.getElementById('log').scrollTop === 0`)
	// The reader selects the first answer's heading to copy it.
	b.do("selecting", chromedp.Evaluate[chromedp.Void](`window.firstAnswer = document.querySelector('#messages .msg.ai');
		getSelection().selectAllChildren(firstAnswer.querySelector('h2, p'))`))
	close(gate)
	open = false
	b.waitFor("the whole reply saved", fmt.Sprintf(`[...document.querySelectorAll('#messages .msg.ai')].some((e) => e.innerText.includes(%q)) && !document.body.classList.contains('running')`, secondHalf))
	if got := eval[int](b, `document.getElementById('log').scrollTop`); got != 0 {
		t.Errorf("the transcript jumped to %dpx while the reader was at the top", got)
	}
	// The answers that did not change were left in place, not drawn again:
	// the same element, the reader's selection still in it.
	if !eval[bool](b, `firstAnswer.isConnected && getSelection().toString().includes('Loans by genre')`) {
		t.Errorf("the redraw replaced the unchanged first answer or lost the selection (%q)", eval[string](b, `getSelection().toString()`))
	}
	if got := eval[string](b, `[...document.querySelectorAll('#messages .msg.ai')].pop().innerText`); !strings.Contains(got, "The first half") {
		t.Errorf("the last answer is not the gated assistant's (the picker went back to the thread's?): %q", got)
	}
	b.send("and again")
	b.waitFor("the end after sending", `document.querySelectorAll('#messages .msg.human').length === 5 && !document.body.classList.contains('running') && `+atEnd)
}
