package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// The scheduler flow: its form (number, select, yes/no), its plan, then
// three write calls waiting at once, answered one by one — approve, reject
// with a reason, approve — before the summary.
func TestBrowserSchedulerFlow(t *testing.T) {
	b := newBrowser(t)
	url := serve(t)
	b.do("opening the page", chromedp.Navigate(url))
	b.pick("scheduler")
	b.send("Plan my study week")

	b.waitFor("the form", `document.querySelector('#cards input[name=max_slots]')`)
	b.do("filling the form",
		chromedp.SendKeys(chromedp.CSS(`#cards input[name=max_slots]`), "3"),
		chromedp.SetValue(chromedp.CSS(`#cards select[name=first]`), "math"),
		chromedp.SetValue(chromedp.CSS(`#cards select[name=friday_free]`), "true"),
		chromedp.Click(button("Send")))

	b.waitFor("the plan review", `document.querySelector('#cards .card[data-kind=planexec_plan_review]')`)
	b.do("confirming the plan", chromedp.Click(button("Confirm the plan")))

	b.waitFor("three approvals", `document.querySelectorAll('#cards .card[data-kind=tool_approval]').length === 3`)
	b.screenshot("scheduler-approvals")
	b.checkA11y("three approvals")
	sendOne := `//*[@id='cards']//section[contains(@class,'approval-send')]//button[normalize-space()='Send the 1 decision']`
	b.do("approving the first", chromedp.Click(`(//*[@id='cards']//fieldset[contains(@class,'decision')]//input[@value='approve'])[1]`), chromedp.Click(sendOne))
	b.waitFor("two approvals left", `document.querySelectorAll('#cards .card[data-kind=tool_approval]').length === 2`)
	b.do("rejecting the next with a reason",
		chromedp.Click(`(//*[@id='cards']//fieldset[contains(@class,'decision')]//input[@value='reject'])[1]`),
		chromedp.SendKeys(`(//*[@id='cards']//input[@name='reason'])[1]`, "not on Thursday"),
		chromedp.Click(sendOne))
	b.waitFor("one approval left", `document.querySelectorAll('#cards .card[data-kind=tool_approval]').length === 1`)
	if got := eval[string](b, `document.querySelector('#cards .card h3').textContent`); got != "Approve place?" {
		t.Errorf("the last card reads %q", got)
	}
	b.do("approving the last", chromedp.Click(button("Approve")))

	b.waitFor("the summary", `!document.body.classList.contains('running') && document.querySelectorAll('#cards .card').length === 0 && document.querySelectorAll('#messages .msg.ai').length > 0`)
	// The page shows the thread's status once it has read it again after
	// the stream; until then it says running.
	b.waitFor("the thread idle", `document.getElementById('thread-status').textContent === 'idle'`)
}
