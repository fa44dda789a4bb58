package web_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
)

// toTripApprovals drives the trip graph to its two pending approvals:
// the city chosen, the form filled, the plan confirmed.
func (b *browser) toTripApprovals() {
	b.t.Helper()
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
}

// together is an XPath to a card's choice of the decision to send with
// the others.
func together(toolName, value string) string {
	return approvalCard(toolName) + fmt.Sprintf(`//fieldset[contains(@class,'together')]//input[@value=%q]`, value)
}

// Two approvals, each with its own decision, sent together in one resume:
// the booking with edited arguments (an invalid edit stops the sending in
// the page first), the invitation rejected with a reason. Nothing runs
// until both go, and then no card is left.
func TestBrowserApprovalDecisionsTogether(t *testing.T) {
	b := newBrowser(t)
	tools := &ran{}
	url := serve(t, func(s register) error { return s.Register("trip", tripGraph(tools)) })
	b.do("opening the page", chromedp.Navigate(url))
	b.toTripApprovals()
	const count = `document.querySelector('#cards .approval-send [aria-live]').textContent`
	if got := eval[string](b, count); got != "0 of 2 calls have a decision to send together." {
		t.Errorf("before any choice the count reads %q", got)
	}

	// The booking: edited arguments, first out of range.
	b.do("choosing the edited arguments for the booking", chromedp.Click(together(toolBook, "edit")))
	nightsField := approvalCard(toolBook) + `//input[@name='nights']`
	b.waitFor("the argument form opened by the choice", `document.querySelector('#cards input[name=nights]')?.value === '2'`)
	// The editor is built from the tool's schema: labels from the keys as
	// words, the enum a select, the integers number boxes.
	if got := eval[[]string](b, `[...document.querySelectorAll('#cards .args-form .field')].map((f) => f.querySelector('label').textContent.replace(/\s*\*$/, '') + ':' + f.querySelector('input, select, textarea').tagName + ':' + (f.querySelector('input')?.type || ''))`); !slices.Equal(got, []string{"Hotel:SELECT:", "Nights:INPUT:number", "Guests:INPUT:number"}) {
		t.Errorf("the argument editor's fields: %q", got)
	}
	b.do("asking for too many nights", chromedp.SetValue(nightsField, ""), chromedp.SendKeys(nightsField, "30"))
	// The invitation: rejected, with a reason, using the keyboard; the
	// reason opens with the choice.
	b.do("choosing reject for the invitation", chromedp.Focus(together(toolInvite, "reject")), chromedp.KeyEvent(" "))
	b.do("typing the reason", chromedp.SendKeys(approvalCard(toolInvite)+`//input[@name='reason']`, "not before the budget is agreed"))
	// Compact: each card has one decision control and no buttons that
	// answer it alone; one button sends.
	if n := eval[int](b, `document.querySelectorAll('#cards .card[data-kind=tool_approval] button').length`); n != 0 {
		t.Errorf("the grouped cards have %d buttons of their own", n)
	}
	if n := eval[int](b, `document.querySelectorAll('#cards .card[data-kind=tool_approval] fieldset.decision').length`); n != 2 {
		t.Errorf("%d decision controls for two calls", n)
	}
	b.waitFor("two decisions counted", count+` === '2 of 2 calls have a decision to send together.'`)
	send := `//*[@id='cards']//section[contains(@class,'approval-send')]//button[normalize-space()='Send the 2 decisions']`
	b.do("sending with a bad edit", chromedp.Click(send))
	b.waitFor("the page's verdict", `document.querySelector('#cards input[name=nights]').getAttribute('aria-invalid') === 'true'`)
	if got := eval[string](b, `document.querySelector('#cards .approval-send .card-problem').textContent + '|' + document.activeElement.name`); got != "Not sent: the edited arguments of "+toolBook+" need fixing.|nights" {
		t.Errorf("after the refused edit: %q, want the problem said and the focus on nights", got)
	}
	if got := tools.list(); len(got) != 1 {
		t.Errorf("a call ran before the decisions were sent: %q", got)
	}
	b.screenshot("approvals-together")
	b.checkA11y("approval decisions")
	b.darkAndNarrow("approval decisions")

	b.do("asking for four nights", chromedp.SetValue(nightsField, ""), chromedp.SendKeys(nightsField, "4"))
	if got := eval[string](b, `document.querySelector('#cards .approval-send .card-problem').textContent`); got != "" {
		t.Errorf("after the fix the group still says %q", got)
	}
	eval[bool](b, `(document.querySelector('#cards .approval-send').scrollIntoView({block: 'end'}), true)`)
	b.screenshot("approvals-together-ready")
	b.do("sending both decisions", chromedp.Click(send))
	b.waitFor("the answer", fmt.Sprintf(`document.getElementById('messages').innerText.includes(%q)`, tripAnswer))
	b.waitFor("the idle thread", `!document.body.classList.contains('running') && document.getElementById('thread-status').textContent === 'idle'`)
	if n := eval[int](b, `document.querySelectorAll('#cards .card').length`); n != 0 {
		t.Errorf("%d cards left after both decisions went", n)
	}
	want := []string{toolFind + ` {"city":"Porto"}`, toolBook + ` {"hotel":"Hotel Azul","nights":4,"guests":12}`}
	if got := tools.list(); !slices.Equal(got, want) {
		t.Errorf("the tools ran %q, want %q (the booking with the edit, no invitation)", got, want)
	}
}

// One decision chosen, the other card answered later: sending the one
// decision leaves the other call waiting, alone, to be answered by itself.
func TestBrowserApprovalOneDecisionLeavesTheOther(t *testing.T) {
	b := newBrowser(t)
	tools := &ran{}
	url := serve(t, func(s register) error { return s.Register("trip", tripGraph(tools)) })
	b.do("opening the page", chromedp.Navigate(url))
	b.toTripApprovals()
	b.do("choosing approve for the booking", chromedp.Click(together(toolBook, "approve")))
	b.do("sending the one decision", chromedp.Click(`//*[@id='cards']//section[contains(@class,'approval-send')]//button[normalize-space()='Send the 1 decision']`))
	b.waitFor("the invitation alone", `document.querySelectorAll('#cards .card[data-kind=tool_approval]').length === 1 && !document.querySelector('#cards .approval-group') && document.querySelector('#cards h3').textContent === 'Approve send_invites?'`)
	b.do("approving the invitation", chromedp.Click(approvalCard(toolInvite)+`//button[normalize-space()='Approve']`))
	b.waitFor("the answer", fmt.Sprintf(`document.getElementById('messages').innerText.includes(%q)`, tripAnswer))
	got := tools.list()
	want := []string{toolFind + ` {"city":"Porto"}`, toolBook + ` {"hotel":"Hotel Azul","nights":2,"guests":12}`, toolInvite + ` {"to":{"group":"the team"},"message":"Porto, here we come"}`}
	if !slices.Equal(got, want) {
		t.Errorf("the tools ran %q, want %q", got, want)
	}
}
