package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/runs"
)

// bookingSchema has a field of every kind the page renders, and a pattern
// the page does not check, so the server's verdict can be seen.
const bookingSchema = `{"type": "object", "required": ["name", "day", "count"], "additionalProperties": false,
 "properties": {
  "name": {"type": "string", "title": "Name on the booking", "description": "Capitalised, as on the guest's ID", "pattern": "^[A-Z]", "maxLength": 40},
  "day": {"type": "string", "format": "date", "title": "Day"},
  "count": {"type": "integer", "title": "Guests", "minimum": 1, "maximum": 5, "default": 2},
  "diet": {"type": "array", "title": "Diets", "items": {"type": "string", "enum": ["vegetarian", "vegan", "gluten-free"]}},
  "room": {"type": "string", "title": "Room", "enum": ["garden", "river"], "default": "garden"},
  "parking": {"type": "boolean", "title": "Parking", "description": "A space for a car"}}}`

// formGraph asks for a booking with bookingSchema and replies with what
// it got.
func formGraph() runs.GraphSpec {
	return runs.GraphSpec{Description: "asks a form with every kind of field", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(react.Messages)
		b.AddNode("ask", func(ctx context.Context, s graph.State) (graph.Output, error) {
			v, err := graph.Interrupt[map[string]any](ctx, map[string]any{"question": "Booking details"}, graph.ExpectAnswer(json.RawMessage(bookingSchema)))
			if err != nil {
				return nil, err
			}
			got, _ := json.Marshal(v)
			msg := llm.Assistant("Booked: `" + string(got) + "`")
			msg.ID = fmt.Sprintf("msg_booked_%d", len(react.Messages.Get(s)))
			return graph.Writes(graph.Append(react.Messages, msg)), nil
		})
		b.SetEntry("ask")
		b.AddEdge("ask", graph.END)
		return b.Compile()
	}}
}

// A form of every field kind: defaults and required marks show, empty
// required fields are caught in the page, a value the page lets through
// but the server refuses shows the server's problem on the card, and the
// corrected answer arrives typed as the schema says.
func TestBrowserFormFields(t *testing.T) {
	b := newBrowser(t)
	url := serve(t, func(s register) error { return s.Register("form", formGraph()) })
	b.do("opening the page", chromedp.Navigate(url))
	b.pick("form")
	b.send("book a room")
	b.waitFor("the form", `document.querySelector('#cards input[name=name]')`)
	if got := eval[[]string](b, `[...document.querySelectorAll('#cards .field label, #cards legend')].filter((l) => l.querySelector('.req') || l.textContent.endsWith(' *')).map((l) => l.textContent.replace(/\s*\*$/, ''))`); !slices.Equal(sorted(got), []string{"Day", "Guests", "Name on the booking"}) {
		t.Errorf("required marks on %q", got)
	}
	if got := eval[string](b, `document.querySelector('#cards input[name=count]').value + '|' + document.querySelector('#cards select[name=room]').value`); got != "2|garden" {
		t.Errorf("defaults: %s", got)
	}
	if got := eval[string](b, `document.querySelector('#cards input[name=day]').type + '|' + document.querySelectorAll('#cards input[type=checkbox][name=diet]').length + '|' + document.querySelector('#cards select[name=parking]').options.length`); got != "date|3|3" {
		t.Errorf("field kinds (date input | diet boxes | yes/no options): %s", got)
	}
	if !eval[bool](b, `document.getElementById('cards').innerText.includes("Capitalised, as on the guest's ID")`) {
		t.Error("the name's description is not shown")
	}

	b.do("sending it empty", chromedp.Click(button("Send")))
	b.waitFor("the page's verdicts", `document.querySelectorAll('#cards [aria-invalid=true]').length === 2`)
	if got := eval[string](b, `document.activeElement.name`); got != "name" {
		t.Errorf("the focus is on %q, not the first bad field", got)
	}

	b.do("filling it with a name the server refuses",
		chromedp.SendKeys(chromedp.CSS(`#cards input[name=name]`), "ada"),
		chromedp.SetValue(chromedp.CSS(`#cards input[name=day]`), "2026-06-09"),
		chromedp.Click(`//*[@id='cards']//label[normalize-space()='vegan']`),
		chromedp.SetValue(chromedp.CSS(`#cards select[name=parking]`), "true"),
		chromedp.Click(button("Send")))
	b.waitFor("the server's problem", `document.querySelector('#cards .card-problem').textContent.includes('refused')`)
	if got := eval[string](b, `document.querySelector('#cards input[name=name]').getAttribute('aria-invalid') + '|' + document.querySelector('#cards .field-error').textContent`); !strings.HasPrefix(got, `true|pattern: "ada" does not match`) {
		t.Errorf("the server's verdict on the name field: %q", got)
	}
	b.screenshot("form-refused")
	b.checkA11y("refused form")

	eval[bool](b, `(document.querySelector('#cards input[name=name]').value = '') === ''`)
	b.do("correcting the name",
		chromedp.SendKeys(chromedp.CSS(`#cards input[name=name]`), "Ada"),
		chromedp.Click(button("Send")))
	b.waitFor("the booking", `document.getElementById('messages').innerText.includes('Booked:')`)
	want := `{"count":2,"day":"2026-06-09","diet":["vegan"],"name":"Ada","parking":true,"room":"garden"}`
	if got := eval[string](b, `document.querySelector('#messages .msg.ai code').textContent`); got != want {
		t.Errorf("the answer arrived as %s, want %s", got, want)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
