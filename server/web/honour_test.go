package web_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The planner honours what the person said and does not claim what they
// refused (issue 22, points 1 and 2), on the page: Berlin, 8 people and 3
// days are the plan and the booking asked for; the booking rejected with a
// reason ends with nothing booked, the reason repeated, and the booking
// step not done — at phone width, where the person reads it.
func TestBrowserPlannerHonoursTheAnswers(t *testing.T) {
	b := newBrowser(t)
	url := serve(t)
	b.do("opening the page at phone width", chromedp.EmulateViewport(390, 844), chromedp.Navigate(url))
	b.pick("planner")
	b.send("Plan our team offsite")

	b.waitFor("the city question", `document.querySelector('#cards .card[data-kind=planexec_ask] button.choice')`)
	b.do("choosing Berlin", chromedp.Click(button("Berlin")))
	b.waitFor("the form", `document.querySelector('#cards input[name=people]')`)
	b.do("filling the form",
		chromedp.SendKeys(chromedp.CSS(`#cards input[name=people]`), "8"),
		chromedp.SetValue(chromedp.CSS(`#cards select[name=length]`), "3 days"),
		chromedp.Click(button("Send")))

	// Every review (the first plan and the revision after the venues step)
	// is about Berlin and 8 people, never the scenario's defaults.
	for i := 0; i < 2; i++ {
		b.waitFor("a plan review", `document.querySelector('#cards .card[data-kind=planexec_plan_review]:not([data-old])')`)
		review := eval[string](b, `document.querySelector('#cards .card[data-kind=planexec_plan_review]').innerText`)
		if strings.Contains(review, "Lisbon") || strings.Contains(review, "12 people") {
			t.Errorf("review %d contradicts the answers: %q", i+1, review)
		}
		eval[string](b, `document.querySelector('#cards .card').dataset.old = 'yes'`)
		b.do("confirming the plan", chromedp.Click(button("Confirm the plan")))
	}

	b.waitFor("the approval", `document.querySelector('#cards .card[data-kind=tool_approval]')`)
	args := eval[string](b, `document.querySelector('#cards pre.args').textContent`)
	if !strings.Contains(args, "Kiez Studio") || !strings.Contains(args, "8") {
		t.Errorf("the booking's arguments do not follow the answers: %s", args)
	}
	const reason = "too far from the office"
	b.do("typing the reason", chromedp.SendKeys(approvalCard("book_venue")+`//input[@name='reason']`, reason))
	b.do("rejecting the booking", chromedp.Click(button("Reject")))

	b.waitFor("the final answer", `document.getElementById('messages').innerText.includes('Nothing was booked')`)
	b.waitFor("the idle thread", `!document.body.classList.contains('running') && document.getElementById('thread-status').textContent === 'idle'`)
	answer := eval[string](b, `[...document.querySelectorAll('main .msg')].filter((e) => e.innerText.includes('Nothing was booked')).map((e) => e.innerText).join('\n')`)
	for _, want := range []string{"Nothing was booked: you rejected booking Kiez Studio", reason} {
		if !strings.Contains(answer, want) {
			t.Errorf("the answer lacks %q: %q", want, answer)
		}
	}
	if strings.Contains(answer, "is booked") || strings.Contains(answer, "confirmation") {
		t.Errorf("the answer claims the refused booking: %q", answer)
	}
	// The person's refusal is in the chat, with the reason.
	if n := eval[int](b, fmt.Sprintf(`%s(%q).length`, youSaidJS, "Rejected book_venue: "+reason)); n != 1 {
		t.Errorf("the rejection shows %d times in the chat", n)
	}
	notDone := `[...document.querySelectorAll('main details li')].map((li) => li.textContent).filter((s) => /Book the/.test(s) && /Done|Not done/.test(s)).join('|')`
	if got := eval[string](b, notDone); !strings.HasPrefix(got, "Not done: Book the better venue") || !strings.Contains(got, reason) {
		t.Errorf("the booking step reads %q, want it not done", got)
	}
	// A finished call shows its result and nothing else (a stray "null"
	// once followed every result).
	if bad := eval[[]string](b, `[...document.querySelectorAll('main .call-result')].map((e) => e.textContent).filter((s) => s.endsWith('null'))`); len(bad) > 0 {
		t.Errorf("tool results with stray text: %q", bad)
	}
	if w := eval[int](b, `document.scrollingElement.scrollWidth`); w > 390 {
		t.Errorf("the page is %dpx wide at 390px", w)
	}
	b.screenshot("planner-honours-answers-phone")
	b.checkA11y("planner with a refused booking")
	// Desktop width, dark: the same truthful outcome, readable.
	b.do("widening, dark", chromedp.EmulateViewport(1280, 860), scheme(true))
	b.waitFor("the run panel beside the chat", `getComputedStyle(document.getElementById('inspector')).position !== 'fixed'`)
	b.checkA11y("planner with a refused booking, desktop, dark")
}
