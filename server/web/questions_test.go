package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/runs"
)

// questionsGraph asks three questions in a row, each known to the page
// only by its answer's schema: free text, several choices, yes or no.
func questionsGraph() runs.GraphSpec {
	return runs.GraphSpec{Description: "asks free text, several choices and yes/no", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(react.Messages)
		b.AddNode("ask", func(ctx context.Context, s graph.State) (graph.Output, error) {
			name, err := graph.Interrupt[string](ctx, map[string]any{"question": "Who is it for?"}, graph.ExpectAnswer(json.RawMessage(`{"type": "string", "minLength": 1}`)))
			if err != nil {
				return nil, err
			}
			toppings, err := graph.Interrupt[[]string](ctx, map[string]any{"question": "Which toppings?"},
				graph.ExpectAnswer(json.RawMessage(`{"type": "array", "minItems": 1, "items": {"type": "string", "enum": ["basil", "olives", "chili"]}}`)))
			if err != nil {
				return nil, err
			}
			deliver, err := graph.Interrupt[bool](ctx, map[string]any{"question": "Deliver it?"}, graph.ExpectAnswer(json.RawMessage(`{"type": "boolean"}`)))
			if err != nil {
				return nil, err
			}
			msg := llm.Assistant(fmt.Sprintf("Pizza for %s with %v, deliver: %v", name, toppings, deliver))
			msg.ID = fmt.Sprintf("msg_pizza_%d", len(react.Messages.Get(s)))
			return graph.Writes(graph.Append(react.Messages, msg)), nil
		})
		b.SetEntry("ask")
		b.AddEdge("ask", graph.END)
		return b.Compile()
	}}
}

// Free text, several choices and yes/no, each from the schema alone; the
// page insists on an answer where the schema requires one.
func TestBrowserQuestionKinds(t *testing.T) {
	b := newBrowser(t)
	url := serve(t, func(s register) error { return s.Register("questions", questionsGraph()) })
	b.do("opening the page", chromedp.Navigate(url))
	b.pick("questions")
	b.send("order a pizza")

	b.waitFor("the text question", `document.querySelector('#cards textarea')`)
	b.do("sending no text", chromedp.Click(button("Send")))
	b.waitFor("the page asking for text", `document.querySelector('#cards .field-error').textContent !== ''`)
	b.do("answering", chromedp.SendKeys(chromedp.CSS(`#cards textarea`), "Grace"), chromedp.Click(button("Send")))

	b.waitFor("the choices", `document.querySelectorAll('#cards input[type=checkbox]').length === 3`)
	b.do("choosing none", chromedp.Click(button("Send")))
	b.waitFor("the page asking for a choice", `document.querySelector('#cards .field-error').textContent === 'Choose one or more is required.'`)
	b.do("choosing two",
		chromedp.Click(`//*[@id='cards']//label[normalize-space()='basil']`),
		chromedp.Click(`//*[@id='cards']//label[normalize-space()='chili']`),
		chromedp.Click(button("Send")))

	b.waitFor("the yes/no question", `document.querySelector('#cards h3')?.textContent === 'Deliver it?'`)
	b.do("answering yes", chromedp.Click(button("Yes")))
	b.waitFor("the answer", `document.getElementById('messages').innerText.includes('Pizza for Grace with [basil chili], deliver: true')`)
}
