package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// approvalCard is an XPath to the approval card of a tool.
func approvalCard(toolName string) string {
	return fmt.Sprintf(`//*[@id='cards']//section[@data-kind='tool_approval'][.//h3[normalize-space()=%q]]`, "Approve "+toolName+"?")
}

// threadState reads a thread's state through the API, as a client would.
func threadState(t *testing.T, url, threadID string) map[string]any {
	t.Helper()
	res, err := http.Get(url + "threads/" + threadID + "/state")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var st struct {
		Values map[string]any `json:"values"`
	}
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("reading the thread's state: %v (HTTP %d)", err, res.StatusCode)
	}
	return st.Values
}

// darkAndNarrow checks a screen at tablet width (nothing overflows), then
// at phone width and in dark mode (nothing overflows, axe finds nothing
// serious); then it restores the window.
func (b *browser) darkAndNarrow(screen string) {
	b.t.Helper()
	dark := func(on bool) chromedp.Action[chromedp.Void] {
		v := "light"
		if on {
			v = "dark"
		}
		return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: v}},
			})
			return err
		})
	}
	// A tablet width, where the inspector moves under the chat, first.
	b.do("a tablet width", chromedp.EmulateViewport(820, 1000))
	if w := eval[int](b, `document.documentElement.scrollWidth`); w > 820 {
		b.t.Errorf("%s: the page is %dpx wide at an 820px window", screen, w)
	}
	b.do("narrowing", chromedp.EmulateViewport(390, 844), dark(true))
	if w := eval[int](b, `document.documentElement.scrollWidth`); w > 390 {
		b.t.Errorf("%s: the page is %dpx wide at a 390px window", screen, w)
	}
	b.checkA11y(screen + ", phone width, dark")
	b.screenshot(strings.ReplaceAll(screen, " ", "-") + "-phone-dark")
	b.do("widening", chromedp.EmulateViewport(1200, 900), dark(false))
}

// The planner flow of the issue, with a plan edited in the page and the
// tool calls' arguments edited: ask answered with a choice, a form (one
// invalid value corrected in the page first), the plan edited (a step
// added, moved and made a dependency; the page refusing an empty title and
// a cycle first) and sent, a write call run with edited arguments (an
// out-of-range value caught in the page first), another rejected with a
// reason, the answer streamed with its reasoning folded. The server's
// state and tools then show that the edited plan and arguments ran.
func TestBrowserPlanEditAndApprovals(t *testing.T) {
	b := newBrowser(t)
	tools := &ran{}
	url := serve(t, func(s register) error { return s.Register("trip", tripGraph(tools)) })
	b.do("opening the page", chromedp.Navigate(url))
	b.pick("trip")
	b.send("Plan a team trip")

	b.waitFor("the city question", `document.querySelector('#cards button.choice')`)
	b.do("choosing the city", chromedp.Click(button(tripCity)))
	b.waitFor("the form", `document.querySelector('#cards input[name=people]')`)
	b.do("filling the form wrongly",
		chromedp.SendKeys(chromedp.CSS(`#cards input[name=people]`), "50"),
		chromedp.SetValue(chromedp.CSS(`#cards select[name=length]`), "2 nights"),
		chromedp.Click(button("Send")))
	b.waitFor("the page's verdict", `document.querySelector('#cards input[name=people]').getAttribute('aria-invalid') === 'true'`)
	b.do("correcting the form",
		chromedp.SetValue(chromedp.CSS(`#cards input[name=people]`), ""),
		chromedp.SendKeys(chromedp.CSS(`#cards input[name=people]`), "12"),
		chromedp.Click(button("Send")))

	// The plan: a list and a graph of two steps and one dependency.
	b.waitFor("the plan review", `document.querySelector('#cards .card[data-kind=planexec_plan_review] svg.dag')`)
	if got := eval[string](b, `[...document.querySelectorAll('#cards svg.dag .dag-node')].map((g) => g.dataset.step).join(',') + ' ' + document.querySelectorAll('#cards svg.dag .dag-edge').length`); got != "hotels,book 1" {
		t.Errorf("the graph's nodes and edge count: %s", got)
	}

	// Edit: the form opens on the first step's title.
	b.do("opening the editor", chromedp.Click(button("Edit the plan")))
	b.waitFor("the editor", `document.activeElement.name === 'title' && document.activeElement.value === 'Find hotels'`)
	b.do("adding a step", chromedp.Click(button("Add a step")))
	b.waitFor("the new step's title focused", `document.activeElement.name === 'title' && document.activeElement.value === '' && document.querySelectorAll('#cards .plan-edit-steps > li').length === 3`)
	newKey := eval[string](b, `document.activeElement.dataset.k`)

	// An untitled step is refused in the page, with the focus on it.
	b.do("sending with an empty title", chromedp.Click(button("Send the edited plan")))
	b.waitFor("the problem", `document.querySelector('#cards .plan-problems').textContent.includes('Step 3 has no title')`)
	if got := eval[string](b, `document.activeElement.dataset.k + ' ' + document.activeElement.getAttribute('aria-invalid')`); got != newKey+" true" {
		t.Errorf("after the refusal the focus is on %q, want the new step's title (%s) marked invalid", got, newKey)
	}
	b.do("typing the title with the keyboard", chromedp.KeyEvent("Check the budget"))
	b.do("describing the step", chromedp.SendKeys(chromedp.CSS(fmt.Sprintf(`#cards [data-k="%s"][name=description]`, newKey)), "Add up the hotel and the travel."))

	// Move the new step above the booking, and make the booking wait for it.
	b.do("moving the step up", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#cards button[data-move="-1"][data-k="%s"]`, newKey))))
	if got := eval[[]string](b, `[...document.querySelectorAll('#cards .plan-edit-steps input[name=title]')].map((e) => e.value)`); !slices.Equal(got, []string{"Find hotels", "Check the budget", "Book the hotel"}) {
		t.Errorf("after the move the steps are %q", got)
	}
	if got := eval[string](b, `document.activeElement.dataset.move + ' ' + document.activeElement.dataset.k`); got != "-1 "+newKey {
		t.Errorf("after the move the focus is on %q, want the moved step's Move up", got)
	}
	bookDep := fmt.Sprintf(`#cards .plan-edit-steps > li:nth-child(3) input[data-dep="%s"]`, newKey)
	b.do("making the booking wait for the new step", chromedp.Click(chromedp.CSS(bookDep)))
	if got := eval[int](b, `document.querySelectorAll('#cards svg.dag .dag-edge').length`); got != 2 {
		t.Errorf("the edited graph has %d edges, want 2", got)
	}

	eval[bool](b, `(document.querySelector('#cards .plan-edit').scrollIntoView({block: 'start'}), true)`)
	b.screenshot("plan-edit")

	// A cycle is refused in the page, naming its steps.
	bookKey := eval[string](b, `document.querySelector('#cards .plan-edit-steps > li:nth-child(3)').dataset.k`)
	hotelsDep := fmt.Sprintf(`#cards .plan-edit-steps > li:nth-child(1) input[data-dep="%s"]`, bookKey)
	b.do("making a cycle", chromedp.Click(chromedp.CSS(hotelsDep)), chromedp.Click(button("Send the edited plan")))
	b.waitFor("the cycle refused", `document.querySelector('#cards .plan-problems').textContent.includes('cycle')`)
	if got := eval[string](b, `document.querySelector('#cards .plan-problems').textContent`); !strings.Contains(got, `"Find hotels" → "Book the hotel" → "Find hotels"`) {
		t.Errorf("the cycle problem reads %q", got)
	}
	b.do("breaking the cycle", chromedp.Click(chromedp.CSS(hotelsDep)))
	b.checkA11y("plan edit")
	b.darkAndNarrow("plan edit")
	b.do("sending the edited plan", chromedp.Click(button("Send the edited plan")))

	// Two write calls wait at once.
	b.waitFor("two approvals", `document.querySelectorAll('#cards .card[data-kind=tool_approval]').length === 2 && document.querySelector('#cards .approval-group')`)
	if got := eval[string](b, `document.querySelector('#cards .approval .badge').textContent`); got != "writes" {
		t.Errorf("the approval's kind reads %q", got)
	}
	b.do("editing the booking's arguments", chromedp.Click(together(toolBook, "edit")))
	nightsField := approvalCard(toolBook) + `//input[@name='nights']`
	b.waitFor("the argument form", `document.querySelector('#cards input[name=nights]')?.value === '2'`)
	b.do("asking for too many nights",
		chromedp.SetValue(nightsField, ""), chromedp.SendKeys(nightsField, "30"),
		chromedp.Click(`//*[@id='cards']//section[contains(@class,'approval-send')]//button[normalize-space()='Send the 1 decision']`))
	b.waitFor("the page's verdict on nights", `document.querySelector('#cards input[name=nights]').getAttribute('aria-invalid') === 'true'`)
	if got := eval[string](b, `document.querySelector('#cards input[name=nights]').closest('.field').querySelector('.field-error').textContent`); !strings.Contains(got, "at most 14") {
		t.Errorf("the error on nights reads %q", got)
	}
	eval[bool](b, `(document.querySelector('#cards .card[data-kind=tool_approval] h3').scrollIntoView({block: 'start'}), true)`)
	b.screenshot("approval-edit")
	b.do("asking for three nights", chromedp.SetValue(nightsField, ""), chromedp.SendKeys(nightsField, "3"))
	b.checkA11y("approval edit")
	b.darkAndNarrow("approval edit")
	b.do("running with the edit", chromedp.Focus(`//*[@id='cards']//section[contains(@class,'approval-send')]//button[normalize-space()='Send the 1 decision']`), chromedp.KeyEvent("\r"))

	b.waitFor("the invitation alone", `document.querySelectorAll('#cards .card[data-kind=tool_approval]').length === 1 && !document.querySelector('#cards .approval-group') && document.querySelector('#cards h3').textContent === 'Approve send_invites?'`)
	// Nested arguments are edited as JSON, checked in the page.
	b.do("editing the invitation", chromedp.Click(approvalCard(toolInvite)+`//button[normalize-space()='Edit the arguments']`))
	jsonField := approvalCard(toolInvite) + `//textarea`
	b.waitFor("the JSON editor", `document.activeElement.matches('#cards textarea.mono') && JSON.parse(document.activeElement.value).to.group === 'the team'`)
	runArgs := approvalCard(toolInvite) + `//button[normalize-space()='Run with these arguments']`
	b.do("sending broken JSON", chromedp.SetValue(jsonField, `{"to": {`), chromedp.Focus(runArgs), chromedp.KeyEvent("\r"))
	b.waitFor("the JSON refused", `document.querySelector('#cards .args-form .field-error').textContent.startsWith('The arguments are not JSON')`)
	b.do("sending arguments the schema refuses", chromedp.SetValue(jsonField, `{"to": {}, "message": 5, "cc": "boss"}`), chromedp.Focus(runArgs), chromedp.KeyEvent("\r"))
	b.waitFor("the schema's verdict", `document.querySelector('#cards .args-form .field-error').textContent.includes('/to/group: is required')`)
	if got := eval[string](b, `document.querySelector('#cards .args-form .field-error').textContent + '|' + document.querySelector('#cards textarea.mono').getAttribute('aria-invalid')`); !strings.Contains(got, "/message: must be string") || !strings.Contains(got, "/cc: is not an argument") || !strings.HasSuffix(got, "|true") {
		t.Errorf("the JSON editor's verdict: %q", got)
	}
	b.checkA11y("JSON argument edit")
	b.do("rejecting the invitation",
		chromedp.SendKeys(approvalCard(toolInvite)+`//input[@name='reason']`, "not before the budget is agreed\r")) // Enter rejects

	b.waitFor("the answer", fmt.Sprintf(`document.getElementById('messages').innerText.includes(%q)`, tripAnswer))
	b.waitFor("the idle thread", `!document.body.classList.contains('running') && document.getElementById('thread-status').textContent === 'idle'`)
	if got := eval[string](b, `(() => { const d = [...document.querySelectorAll('#messages details.reasoning')].pop(); return d ? d.open + ' ' + d.textContent.trim() : 'none'; })()`); got != "false Reasoning"+tripReasoning {
		t.Errorf("the answer's reasoning block: %q, want it folded with the reasoning", got)
	}
	b.screenshot("plan-answer")

	// What ran, as the server saw it.
	threadID := eval[string](b, `location.hash.replace('#/thread/', '')`)
	values := threadState(t, url, threadID)
	planJSON, _ := json.Marshal(values["planexec_plan"])
	var plan struct {
		Steps []struct {
			ID, Title, Description string
			DependsOn              []string `json:"depends_on"`
		} `json:"steps"`
	}
	if err := json.Unmarshal(planJSON, &plan); err != nil || len(plan.Steps) != 3 {
		t.Fatalf("the thread's plan: %s (%v)", planJSON, err)
	}
	added := plan.Steps[1]
	if plan.Steps[0].ID != stepHotels || added.Title != "Check the budget" || added.Description != "Add up the hotel and the travel." || plan.Steps[2].ID != stepBook ||
		!slices.Equal(plan.Steps[2].DependsOn, []string{stepHotels, added.ID}) {
		t.Errorf("the plan that ran is not the edited one: %s", planJSON)
	}
	stepsJSON, _ := json.Marshal(values["planexec_steps"])
	var steps map[string]struct{ Status string }
	if err := json.Unmarshal(stepsJSON, &steps); err != nil || steps[added.ID].Status != "done" || steps[stepBook].Status != "done" {
		t.Errorf("the steps' results: %s (%v)", stepsJSON, err)
	}
	want := []string{toolFind + ` {"city":"Porto"}`, toolBook + ` {"hotel":"Hotel Azul","nights":3,"guests":12}`}
	if got := tools.list(); !slices.Equal(got, want) {
		t.Errorf("the tools ran %q, want %q (the booking with the edited nights, no invitation)", got, want)
	}
}

// Several approvals answered together: one resume approves both calls;
// the run's log shows each step's tool calls with their results, in the
// order they happened; the answer's reasoning is folded and opens with
// the keyboard.
func TestBrowserApproveAllTogether(t *testing.T) {
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
	b.screenshot("plan-review")

	// Removing a step drops the dependencies on it, says so, and redraws;
	// discarding the edit brings the plan back as it was.
	b.do("opening the editor", chromedp.Click(button("Edit the plan")))
	b.waitFor("the editor", `document.querySelector('#cards .plan-edit-steps')`)
	b.do("removing the first step with the keyboard", chromedp.Focus(`(//*[@id='cards']//button[normalize-space()='Remove step'])[1]`), chromedp.KeyEvent("\r"))
	b.waitFor("the announcement", `document.querySelector('#cards .plan-edit [aria-live]').textContent !== ''`)
	if got := eval[string](b, `document.querySelector('#cards .plan-edit [aria-live]').textContent`); got != `Removed "Find hotels". Book the hotel no longer waits for it.` {
		t.Errorf("the removal is announced as %q", got)
	}
	if got := eval[string](b, `document.querySelectorAll('#cards .plan-edit-steps > li').length + ' ' + document.querySelectorAll('#cards svg.dag .dag-node').length + ' ' + document.querySelectorAll('#cards svg.dag .dag-edge').length + ' ' + document.activeElement.value`); got != "1 1 0 Book the hotel" {
		t.Errorf("after the removal: steps, nodes, edges, focus = %q, want 1 1 0 and the focus on the next step's title", got)
	}
	b.do("discarding the edit", chromedp.Focus(button("Discard the changes")), chromedp.KeyEvent("\r"))
	b.waitFor("the plan as it was, the focus on Edit", `document.querySelectorAll('#cards .plan-steps li').length === 2 && document.activeElement.textContent === 'Edit the plan'`)
	b.do("confirming the plan", chromedp.Click(button("Confirm the plan")))

	b.waitFor("two approvals", `document.querySelectorAll('#cards .card[data-kind=tool_approval]').length === 2`)
	b.waitFor("the focus on the first card's decision, not Approve all", `document.activeElement.value === 'approve' && document.activeElement.closest('.interrupt')`)
	if got := eval[string](b, `document.querySelector('#cards .approval-group h3').textContent`); got != "2 tool calls wait for you" {
		t.Errorf("the group reads %q", got)
	}
	b.screenshot("approvals")
	b.checkA11y("two approvals")
	b.do("approving both", chromedp.Click(button("Approve all 2")))

	b.waitFor("the answer", fmt.Sprintf(`document.getElementById('messages').innerText.includes(%q)`, tripAnswer))
	b.waitFor("the idle thread", `!document.body.classList.contains('running') && document.getElementById('thread-status').textContent === 'idle'`)
	got := tools.list()
	slices.Sort(got[1:])
	want := []string{toolFind + ` {"city":"Porto"}`, toolBook + ` {"hotel":"Hotel Azul","nights":2,"guests":12}`, toolInvite + ` {"to":{"group":"the team"},"message":"Porto, here we come"}`}
	if !slices.Equal(got, want) {
		t.Errorf("the tools ran %q, want %q", got, want)
	}

	// The log, folded now the run is done: steps and their calls in
	// order, each call with its result.
	lines := eval[[]string](b, `[...document.querySelectorAll('#messages .run-log-lines > li')].map((li) => li.className + ':' + (li.querySelector('summary')?.textContent || li.textContent))`)
	order := []string{"status:Started: Find hotels", "call:Called find_hotels done", "status done:Done: Find hotels", "status:Started: Book the hotel"}
	pos := 0
	for _, l := range lines {
		if pos < len(order) && strings.TrimSpace(l) == order[pos] {
			pos++
		}
	}
	if pos != len(order) {
		t.Errorf("the run's log %q lacks %q in order", lines, order[pos:])
	}
	if got := eval[string](b, `document.querySelector('#messages .run-log details.tool-call .call-result pre')?.textContent || ''`); !strings.Contains(got, "Hotel Azul (€90 a night)") {
		t.Errorf("the find_hotels call's result: %q", got)
	}

	// The reasoning opens with the keyboard, once its run's log is open.
	b.do("opening the last run's log", chromedp.Click(`(//*[@id='messages']//details[contains(@class,'run-log')][.//details[contains(@class,'reasoning')]])[last()]/summary`))
	b.do("focusing the reasoning", chromedp.Focus(chromedp.CSS(`#messages .run-log details.reasoning summary`)))
	b.do("opening it with Enter", chromedp.KeyEvent("\r"))
	if open := eval[bool](b, `document.querySelector('#messages .run-log details.reasoning').open`); !open {
		t.Error("Enter on the reasoning's summary did not open it")
	}
	b.screenshot("reasoning-open")
	b.checkA11y("answer with reasoning")
}

// A ReAct agent's turn: its reasoning folded before its tool calls, each
// call opening to its arguments and result, the failed one marked where
// it happened with a place for a retry, then the second turn's reasoning
// and answer — in the order they happened, after a reload too.
func TestBrowserReasoningAndToolCalls(t *testing.T) {
	b := newBrowser(t)
	url := serve(t, func(s register) error { return s.Register("thinker", thinkerGraph()) })
	b.do("opening the page", chromedp.Navigate(url))
	b.pick("thinker")
	b.send("Weather in Oslo?")
	b.waitFor("the answer", fmt.Sprintf(`[...document.querySelectorAll('#messages .msg.ai')].some((e) => e.innerText.includes(%q))`, thinkAnswer))
	b.waitFor("the idle thread", `!document.body.classList.contains('running') && document.getElementById('thread-status').textContent === 'idle'`)
	for pass := range 2 {
		// What the conversation shows, in document order.
		got := eval[[]string](b, `[...document.querySelectorAll('#messages details.reasoning, #messages details.tool-call, #messages .msg.ai > .text')].filter((e) => e.textContent.trim()).map((e) =>
			e.matches('.reasoning') ? 'reasoning:' + e.querySelector('.md').textContent.trim() + ':' + e.open
			: e.matches('.tool-call') ? 'call:' + e.querySelector('summary code').textContent + ':' + e.querySelector('.call-state').textContent + ':' + e.open
			: 'text:' + e.textContent.trim())`)
		want := []string{"reasoning:" + thinkFirst + ":false", "call:weather:done:false", "call:forecast:failed:false", "reasoning:" + thinkSecond + ":false", "text:" + thinkSaved}
		if !slices.Equal(got, want) {
			t.Errorf("pass %d: the conversation shows %q, want %q", pass, got, want)
		}
		if pass == 0 {
			b.do("reloading", chromedp.Reload())
			b.waitFor("the answer after the reload", fmt.Sprintf(`document.getElementById('messages').innerText.includes(%q)`, thinkAnswer))
		}
	}
	b.do("opening the failed call", chromedp.Click(`//*[@id='messages']//details[contains(@class,'tool-call')][.//code[.='forecast']]/summary`))
	if got := eval[string](b, `(() => { const d = document.querySelector('#messages details.tool-call.failed'); return d.open + '|' + d.querySelector('.call-args').textContent.replace(/\s+/g, '') + '|' + d.querySelector('.call-error').textContent + '|' + !!d.querySelector('.retry-slot'); })()`); !strings.Contains(got, `true|{"city":"Oslo"}|`) || !strings.Contains(got, thinkFailed) || !strings.HasSuffix(got, "|true") {
		t.Errorf("the failed call opens to %q", got)
	}
	b.screenshot("tool-calls")
	b.checkA11y("tool calls")
	b.darkAndNarrow("tool calls")
}

// The page's checks, called as the page calls them: the plan editor's
// (planexec's rules) and the argument editor's (the tool's JSON Schema).
func TestPageChecksPlansAndArguments(t *testing.T) {
	b := newBrowser(t)
	url := serve(t)
	b.do("opening the page", chromedp.Navigate(url))
	b.waitFor("the page", `document.querySelectorAll('#assistant option').length > 0`)
	load := `Promise.all([import('/ui/plan.js'), import('/ui/approvals.js'), import('/ui/dag.js')]).then(([p, a, d]) => { window.__t = {p, a, d}; return true; })`
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](load, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatalf("loading the modules: %v", err)
	}
	step := func(k int, id, title string, deps ...any) string {
		d, _ := json.Marshal(append([]any{}, deps...))
		return fmt.Sprintf(`{k: %d, id: %q, title: %q, description: '', done_when: '', deps: %s, replan: false}`, k, id, title, d)
	}
	for _, tc := range []struct {
		name, drafts string
		want         []string // a part of each problem, in order
	}{
		{"fine", "[" + step(1, "a", "A") + "," + step(2, "b", "B", 1) + "]", nil},
		{"empty", "[]", []string{"no steps"}},
		{"no title, no id", "[" + step(1, "", " ") + "]", []string{"Step 1 has no title", "has no ID"}},
		{"duplicate id", "[" + step(1, "a", "A") + "," + step(2, "a", "B") + "]", []string{`the ID "a" of another step`}},
		{"bad id", "[" + step(1, "a b", "A") + "]", []string{"an ID takes letters"}},
		{"self", "[" + step(1, "a", "A", 1) + "]", []string{"depends on itself"}},
		{"unknown", "[" + step(1, "a", "A", "gone") + "]", []string{`depends on "gone", which is not a step`}},
		{"cycle", "[" + step(1, "a", "A", 3) + "," + step(2, "b", "B", 1) + "," + step(3, "c", "C", 2) + "]", []string{`"A" → "C" → "B" → "A" wait for each other`}},
	} {
		got := eval[[]string](b, `window.__t.p.problems(`+tc.drafts+`).map((p) => p.message)`)
		ok := len(got) == len(tc.want)
		for i := 0; ok && i < len(got); i++ {
			ok = strings.Contains(got[i], tc.want[i])
		}
		if !ok {
			t.Errorf("%s: problems %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := eval[string](b, `JSON.stringify(window.__t.p.planOf('T', [`+step(1, " a ", "A")+`, {k: 2, id: 'b', title: 'B', description: 'd', done_when: 'w', deps: [1], replan: true}]))`); got != `{"task":"T","steps":[{"id":"a","title":"A","description":""},{"id":"b","title":"B","description":"d","done_when":"w","depends_on":["a"]}],"replan":["b"]}` {
		t.Errorf("planOf = %s", got)
	}
	if got := eval[string](b, `JSON.stringify([...window.__t.d.levels([{id: 'c', depends_on: ['a', 'b']}, {id: 'a'}, {id: 'b', depends_on: ['a', 'x']}, {id: 'l', depends_on: ['m']}, {id: 'm', depends_on: ['l']}])])`); got != `[["a",0],["b",1],["c",2],["m",1],["l",2]]` {
		t.Errorf("levels = %s", got)
	}

	schema := `{type: 'object', required: ['n', 'tags'], additionalProperties: false, properties: {
		n: {type: 'integer', minimum: 1, maximum: 3}, code: {type: 'string', pattern: '^[A-Z]{3}$'}, s: {type: 'string', minLength: 2, maxLength: 3, enum: ['ab', 'abc']},
		tags: {type: 'array', minItems: 1, items: {type: 'string'}}, o: {anyOf: [{type: 'string'}, {type: 'null'}]}}}`
	for _, tc := range []struct {
		value string
		want  []string
	}{
		{`{n: 2, tags: ['x'], s: 'ab', o: null}`, nil},
		{`{n: 2.5, tags: ['x']}`, []string{"/n: must be integer"}},
		{`{n: 9, tags: []}`, []string{"/n: must be at most 3", "/tags: needs at least 1 items"}},
		{`{n: 1, tags: [3], s: 'zzzz', o: 5, extra: 1}`, []string{"/tags/0: must be string", "/s: must be one of", "/s: takes at most 3", "/o: fits none", "/extra: is not an argument"}},
		{`{}`, []string{"/n: is required", "/tags: is required"}},
		{`{n: 1, tags: ['x'], code: 'OPO'}`, nil},
		{`{n: 1, tags: ['x'], code: 'opo'}`, []string{"code /code: must match ^[A-Z]{3}$"}},
		{`[1]`, []string{"The arguments: must be object"}},
	} {
		got := eval[[]string](b, `window.__t.a.schemaProblems(`+schema+`, `+tc.value+`).map((p) => p.key + ' ' + p.message)`)
		ok := len(got) == len(tc.want)
		for i := 0; ok && i < len(got); i++ {
			ok = strings.Contains(got[i], tc.want[i])
		}
		if !ok {
			t.Errorf("%s: problems %q, want %q", tc.value, got, tc.want)
		}
	}
}

// A run that fails is marked once at the end of the conversation, where
// it happened, with Retry filling the line's retry slot.
func TestBrowserRunErrorInPlace(t *testing.T) {
	b := newBrowser(t)
	url := serve(t, func(s register) error { return s.Register("failing", failingGraph()) })
	b.do("opening the page", chromedp.Navigate(url))
	b.pick("failing")
	b.send("Try it")
	b.waitFor("the error in the conversation", `document.querySelector('#messages .msg.run-error') && !document.body.classList.contains('running')`)
	got := eval[string](b, `(() => { const e = document.querySelector('#messages .msg.run-error'); return (e.previousElementSibling?.innerText || '') + '|' + e.innerText + '|' + (e.querySelector('.retry-slot button')?.textContent || '') + '|' + document.querySelectorAll('.msg.run-error').length + '|' + (e === document.getElementById('messages').lastElementChild); })()`)
	if !strings.Contains(got, "Try it|") || !strings.Contains(got, failingError) || !strings.HasSuffix(got, "|Retry|1|true") {
		t.Errorf("the error line and what comes before it (before|line|retry|lines|last): %q", got)
	}
	b.checkA11y("run error")
}
