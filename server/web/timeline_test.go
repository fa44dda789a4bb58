package web_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// timelineLines is the chat's "What the agent did" lines, in document
// order (folded or not), and whether every block is folded.
func (b *browser) timelineLines() ([]string, bool) {
	b.t.Helper()
	lines := eval[[]string](b, `[...document.querySelectorAll('main details.run-log .run-log-lines > li')].map((li) =>
		(li.querySelector(':scope > details > summary')?.textContent || li.textContent).replace(/\s+/g, ' ').trim())`)
	folded := eval[bool](b, `[...document.querySelectorAll('main details.run-log')].every((d) => !d.open)`)
	return lines, folded
}

// hasInOrder reports the first of want (each the start of a line) that
// lines lack in order, or "".
func hasInOrder(lines, want []string) string {
	i := 0
	for _, l := range lines {
		if i < len(want) && strings.HasPrefix(l, want[i]) {
			i++
		}
	}
	if i == len(want) {
		return ""
	}
	return want[i]
}

// historyEntries is what the time-travel panel's entries say, oldest
// first, as a person reads them (the buttons' text).
func (b *browser) historyEntries() []string {
	b.t.Helper()
	return eval[[]string](b, `[...document.querySelectorAll('[aria-labelledby=history-heading] button[aria-pressed]')].map((e) => e.textContent.replace(/\s+/g, ' ').trim())`)
}

// Point 5 of the issue: what the agent did is durable. After the trip's
// run, the chat's timeline — the questions asked, the plan, each step
// with its tool calls and results, the approvals asked, the step not done
// and the deliverer's reasoning — is the same, in the same order and
// folded, after a reload and after reopening the thread from the list
// (at phone width too); each entry of the time-travel panel says what its
// step did, not the first message again.
func TestBrowserTimelineIsDurable(t *testing.T) {
	b := newBrowser(t)
	tools := &ran{}
	url := serve(t, func(s register) error { return s.Register("trip", tripGraph(tools)) })
	b.do("opening the page", chromedp.Navigate(url))
	b.pick("trip")
	b.send("Plan a team trip")
	b.waitFor("the city question", `document.querySelector('#cards button.choice')`)
	b.do("choosing the city", chromedp.Click(button(tripCity)))
	b.waitFor("the form", `document.querySelector('#cards input[name=people]')`)
	b.do("filling the form",
		chromedp.SendKeys(chromedp.CSS(`#cards input[name=people]`), "12"),
		chromedp.SetValue(chromedp.CSS(`#cards select[name=length]`), "2 nights"),
		chromedp.Click(button("Send")))
	b.waitFor("the plan review", `document.querySelector('#cards .card[data-kind=planexec_plan_review]')`)
	b.do("confirming the plan", chromedp.Click(button("Confirm the plan")))
	b.waitFor("two approvals", `document.querySelectorAll('#cards .card[data-kind=tool_approval]').length === 2`)
	b.do("approving both", chromedp.Click(button("Approve all 2")))
	b.waitFor("the answer", fmt.Sprintf(`document.getElementById('messages').innerText.includes(%q)`, tripAnswer))
	b.waitFor("the idle thread", `!document.body.classList.contains('running') && document.getElementById('thread-status').textContent === 'idle'`)

	want := []string{
		"Asked you: " + tripQuestion,
		"Asked you: About the group",
		"The plan is ready (2 steps).",
		"Asked you: Review the plan",
		"Started: Find hotels",
		"Called " + toolFind + " done",
		"Done: Find hotels",
		"Started: Book the hotel",
		"Asked you: Approve " + toolBook + "?",
		"Asked you: Approve " + toolInvite + "?",
		"Called ", // the two calls run at once, in either order
		"Called ",
		"Done: Book the hotel",
		"Reasoning",
		"The answer is ready.",
	}
	after, folded := b.timelineLines()
	for _, call := range []string{"Called " + toolBook + " done", "Called " + toolInvite + " done"} {
		if !slices.Contains(after, call) {
			t.Errorf("the timeline lacks %q", call)
		}
	}
	if miss := hasInOrder(after, want); miss != "" || !folded {
		t.Errorf("after the run (folded %v), the timeline lacks %q in order:\n%s", folded, miss, strings.Join(after, "\n"))
	}
	b.screenshot("timeline-after-run")

	b.do("reloading", chromedp.Reload())
	b.waitFor("the answer after the reload", fmt.Sprintf(`document.getElementById('messages').innerText.includes(%q)`, tripAnswer))
	b.waitFor("the timeline after the reload", `document.querySelectorAll('main details.run-log').length > 0`)
	if got, folded := b.timelineLines(); !slices.Equal(got, after) || !folded {
		t.Errorf("after a reload (folded %v) the timeline reads:\n%s\nwant:\n%s", folded, strings.Join(got, "\n"), strings.Join(after, "\n"))
	}

	// The time-travel panel: each step says what it did.
	b.waitFor("the history", `document.querySelectorAll('[aria-labelledby=history-heading] button[aria-pressed]').length > 5`)
	entries := b.historyEntries()
	for _, w := range []string{"You: “Plan a team trip”", "asks: " + tripQuestion, "Your answer: " + tripCity, "Your answer: Number of people: 12, Length: 2 nights",
		"asks: review the plan", "Your answer: Approved the plan", "asks: approve " + toolBook + "?", "Your answer: Approved " + toolBook, "said “" + tripAnswer} {
		if !slices.ContainsFunc(entries, func(e string) bool { return strings.Contains(e, w) }) {
			t.Errorf("no history entry says %q:\n%s", w, strings.Join(entries, "\n"))
		}
	}
	if n := len(slices.DeleteFunc(slices.Clone(entries), func(e string) bool { return !strings.Contains(e, "Plan a team trip") })); n != 1 {
		t.Errorf("%d history entries repeat the first message; want only the step that added it:\n%s", n, strings.Join(entries, "\n"))
	}
	b.checkA11y("durable timeline")

	// Reopening the thread from the list, at phone width.
	// (At phone width the threads are a drawer, opened from the header.)
	b.do("narrowing", chromedp.EmulateViewport(390, 844))
	b.openThreads()
	b.do("starting a new thread", chromedp.Click(`//button[normalize-space()='New thread']`))
	b.waitFor("the empty chat", `document.querySelectorAll('main details.run-log').length === 0`)
	b.openThreads()
	b.do("reopening the thread from the list", chromedp.Click(`//nav//a[.//*[normalize-space()='Plan a team trip']]`))
	b.waitFor("the timeline again", fmt.Sprintf(`document.getElementById('messages').innerText.includes(%q) && document.querySelectorAll('main details.run-log').length > 0`, tripAnswer))
	if got, folded := b.timelineLines(); !slices.Equal(got, after) || !folded {
		t.Errorf("reopened from the list (folded %v), the timeline reads:\n%s\nwant:\n%s", folded, strings.Join(got, "\n"), strings.Join(after, "\n"))
	}
	if w := eval[int](b, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the page is %dpx wide at a 390px window", w)
	}
	b.do("opening the last run's timeline", chromedp.Click(`(//main//details[contains(@class,'run-log')])[last()]/summary`))
	b.screenshot("timeline-reopened-phone")
	b.checkA11y("reopened timeline, phone width")
	b.do("dark", scheme(true))
	b.checkA11y("reopened timeline, phone width, dark")
}

// A fork shows its own timeline after a reload: the thinker's reasoning
// and tool calls of the forked run, once, in order, and nothing of the
// branch it left.
func TestBrowserForkTimelineAfterReload(t *testing.T) {
	b := newBrowser(t)
	url := serve(t, func(s register) error { return s.Register("thinker", thinkerGraph()) })
	b.do("opening the page", chromedp.Navigate(url))
	b.pick("thinker")
	b.send("weather in Oslo?")
	b.waitFor("the answer", fmt.Sprintf(`document.getElementById('messages').innerText.includes(%q) && !document.body.classList.contains('running')`, thinkAnswer))
	b.waitFor("the history", `document.querySelectorAll('#timeline button[data-checkpoint]').length >= 3`)
	b.do("opening the step after the input", chromedp.Click(`(//*[@id='timeline']//button[@data-checkpoint])[2]`))
	eval[bool](b, `(() => { const ta = document.getElementById('fork-values'); ta.value = ta.value.replace('weather in Oslo?', 'weather in Oslo today?'); return true; })()`)
	b.do("forking", chromedp.Click(`//*[@id='checkpoint']//button[normalize-space()='Fork and run from here']`))
	b.waitFor("two branches", `document.getElementById('timeline').dataset.branches === '2' && !document.body.classList.contains('running')`)

	what := `[...document.querySelectorAll('main .msg')].flatMap((m) => m.matches('.human') ? ['you:' + m.querySelector('.text').textContent] :
		[...m.querySelectorAll('details.reasoning, details.tool-call, :scope > .text')].map((e) =>
			e.matches('.reasoning') ? 'reasoning:' + e.querySelector('.md').textContent.trim()
			: e.matches('.tool-call') ? 'call:' + e.querySelector('summary code').textContent + ':' + e.querySelector('.call-state').textContent
			: 'text:' + e.textContent.trim()))`
	want := []string{"you:weather in Oslo today?", "reasoning:" + thinkFirst, "call:weather:done", "call:forecast:failed", "reasoning:" + thinkSecond, "text:" + thinkSaved}
	if got := eval[[]string](b, what); !slices.Equal(got, want) {
		t.Errorf("after the fork the chat reads %q, want %q", got, want)
	}
	b.do("reloading", chromedp.Reload())
	b.waitFor("the fork after the reload", fmt.Sprintf(`document.getElementById('messages').innerText.includes(%q)`, thinkAnswer))
	if got := eval[[]string](b, what); !slices.Equal(got, want) {
		t.Errorf("after a reload the fork reads %q, want %q", got, want)
	}
}

// openThreads opens the threads drawer at phone width, as a person does
// with the header's menu button, unless it is open already; it first lets
// a drawer that is sliding (the window just narrowed) come to rest, and
// returns once the drawer has slid in.
func (b *browser) openThreads() {
	b.t.Helper()
	const open = `getComputedStyle(document.getElementById('sidebar')).visibility === 'visible' && document.getElementById('sidebar').getBoundingClientRect().left === 0 && document.getElementById('sidebar-open').getAttribute('aria-expanded') === 'true'`
	const closed = `getComputedStyle(document.getElementById('sidebar')).visibility === 'hidden'`
	b.waitFor("the threads drawer at rest", open+` || `+closed)
	if !eval[bool](b, open) {
		b.do("opening the threads", chromedp.Click(`//button[@aria-label='Threads and assistants']`))
	}
	b.waitFor("the threads drawer", open)
}
