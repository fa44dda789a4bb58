package web_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// Visible-text lookups in the chat (the page's main region), as a person
// reads it: an element whose rendered text is exactly the text, inside an
// element that says "You" first (what the person said).
const youSaidJS = `((text) => [...document.querySelectorAll('main *')].filter((e) =>
	e.checkVisibility() && e.innerText && e.innerText.trim() === text &&
	e.parentElement && e.parentElement.innerText.trim().startsWith('You')))`

// youSaid is a JavaScript expression: how many times the chat shows the
// person saying text.
func youSaid(text string) string {
	return fmt.Sprintf(`%s(%q).length`, youSaidJS, text)
}

// answersInOrder reports whether the chat shows each text as the person's,
// once, in this order.
func (b *browser) answersInOrder(texts []string) string {
	b.t.Helper()
	js := fmt.Sprintf(`(() => { const find = %s; const texts = %s; let prev = null; const out = [];
		for (const t of texts) { const f = find(t);
			if (f.length !== 1) { out.push(t + ': shown ' + f.length + ' times'); continue; }
			if (prev && !(prev.compareDocumentPosition(f[0]) & Node.DOCUMENT_POSITION_FOLLOWING)) out.push(t + ': before the answer it follows');
			prev = f[0]; }
		return out.join('; '); })()`, youSaidJS, jsonArgs(texts))
	return eval[string](b, js)
}

// Point 4 of the issue: every answer the person gives is part of the
// transcript, where it happened: the city chosen, the form's values, the
// plan rejected with a comment and then confirmed, one call approved and
// one rejected with a reason. Each shows as soon as it is sent, stays
// after the run, and is there again, once and in order, after a reload,
// at desktop and phone width. The step whose write was rejected says it
// was not done, with the reason.
func TestBrowserAnswersStayInTheTranscript(t *testing.T) {
	b := newBrowser(t)
	tools := &ran{}
	url := serve(t, func(s register) error { return s.Register("trip", tripGraph(tools)) })
	b.do("opening the page", chromedp.Navigate(url))
	b.pick("trip")
	b.send("Plan a team trip")

	b.waitFor("the city question", `document.querySelector('#cards button.choice')`)
	b.do("choosing the city", chromedp.Click(button(tripCity)))
	b.waitFor("the choice in the chat", youSaid(tripCity)+` === 1`)

	b.waitFor("the form", `document.querySelector('#cards input[name=people]')`)
	b.do("filling the form",
		chromedp.SendKeys(chromedp.CSS(`#cards input[name=people]`), "12"),
		chromedp.SetValue(chromedp.CSS(`#cards select[name=length]`), "2 nights"),
		chromedp.Click(button("Send")))
	const form = "Number of people: 12, Length: 2 nights"
	b.waitFor("the form's values in the chat", youSaid(form)+` === 1`)

	b.waitFor("the plan review", `document.querySelector('#cards .card[data-kind=planexec_plan_review]')`)
	eval[string](b, `document.querySelector('#cards .card').dataset.old = 'yes'`)
	b.do("rejecting the plan with a comment",
		chromedp.SendKeys(chromedp.CSS(`#cards .plan textarea`), "Add the catering"),
		chromedp.Click(button("Reject and re-plan")))
	const rejected = "Rejected the plan: Add the catering"
	b.waitFor("the rejection in the chat", youSaid(rejected)+` === 1`)
	b.waitFor("the plan again", `document.querySelector('#cards .card[data-kind=planexec_plan_review]:not([data-old])')`)
	b.do("confirming the plan", chromedp.Click(button("Confirm the plan")))
	b.waitFor("the confirmation in the chat", youSaid("Approved the plan")+` === 1`)

	b.waitFor("two approvals", `document.querySelectorAll('#cards .card[data-kind=tool_approval]').length === 2`)
	b.do("choosing approve for the booking", chromedp.Click(together(toolBook, "approve")))
	// The reason field opens with the choice to reject.
	b.do("choosing reject for the invitation", chromedp.Click(together(toolInvite, "reject")))
	b.do("typing the reason", chromedp.SendKeys(approvalCard(toolInvite)+`//input[@name='reason']`, "not before the budget is agreed"))
	b.do("sending both", chromedp.Click(`//*[@id='cards']//button[normalize-space()='Send the 2 decisions']`))
	b.waitFor("the answer", fmt.Sprintf(`document.getElementById('messages').innerText.includes(%q)`, tripAnswer))
	b.waitFor("the idle thread", `!document.body.classList.contains('running') && document.getElementById('thread-status').textContent === 'idle'`)

	want := []string{tripCity, form, rejected, "Approved the plan", "Approved " + toolBook, "Rejected " + toolInvite + ": not before the budget is agreed"}
	if bad := b.answersInOrder(want); bad != "" {
		t.Errorf("after the run: %s", bad)
	}
	// The final answer follows the last decision.
	if !eval[bool](b, fmt.Sprintf(`(() => { const a = %s(%q)[0]; const m = [...document.querySelectorAll('main .msg')].find((e) => e.innerText.includes(%q));
		return !!(a && m && (a.compareDocumentPosition(m) & Node.DOCUMENT_POSITION_FOLLOWING)); })()`, youSaidJS, want[len(want)-1], tripAnswer)) {
		t.Error("the agent's answer does not come after the person's last decision")
	}
	// The step whose write was rejected is not shown as done.
	notDone := `[...document.querySelectorAll('main details li')].map((li) => li.textContent).filter((s) => s.includes('Book the hotel') && /Done|Not done/.test(s)).join('|')`
	if got := eval[string](b, notDone); !strings.HasPrefix(got, "Not done: Book the hotel") || !strings.Contains(got, "not before the budget is agreed") || strings.Contains(got, "Done: Book the hotel|") {
		t.Errorf("the booking step's line reads %q, want it not done, with the reason", got)
	}
	b.screenshot("transcript-answers")
	b.checkA11y("transcript with answers")

	b.do("reloading", chromedp.Reload())
	b.waitFor("the answer after the reload", fmt.Sprintf(`document.getElementById('messages').innerText.includes(%q)`, tripAnswer))
	b.waitFor("the answers after the reload", youSaid(want[len(want)-1])+` === 1`)
	if bad := b.answersInOrder(want); bad != "" {
		t.Errorf("after a reload: %s", bad)
	}
	b.do("narrowing", chromedp.EmulateViewport(390, 844))
	if bad := b.answersInOrder(want); bad != "" {
		t.Errorf("at phone width: %s", bad)
	}
	if w := eval[int](b, `document.documentElement.scrollWidth`); w > 390 {
		t.Errorf("the page is %dpx wide at a 390px window", w)
	}
	b.screenshot("transcript-answers-phone")
	b.checkA11y("transcript with answers, phone width")
	b.do("dark", scheme(true))
	if bad := b.answersInOrder(want); bad != "" {
		t.Errorf("at phone width, dark: %s", bad)
	}
	b.checkA11y("transcript with answers, phone width, dark")
}
