package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/server/runs"
	"github.com/trellis-agents/trellis/tool/a2a"
	"github.com/trellis-agents/trellis/tool/remotegraph"
)

// colourAsker is the remote's graph: it asks which colour (an ask_human
// interrupt, input-required over A2A) and answers with it.
func colourAsker() runs.GraphSpec {
	return runs.GraphSpec{Description: "asks a colour", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(react.Messages)
		b.AddNode("ask", func(ctx context.Context, _ graph.State) (graph.Output, error) {
			colour, err := graph.Interrupt[string](ctx, map[string]any{"kind": "ask_human", "question": "Which colour?"})
			if err != nil {
				return nil, err
			}
			m := llm.Assistant(colour + " it is.")
			m.ID = "msg_colour"
			return graph.Writes(graph.Append(react.Messages, m)), nil
		})
		b.SetEntry("ask")
		b.AddEdge("ask", graph.END)
		return b.Compile()
	}}
}

// hopper is the local graph: one node that hands the person's message to
// the remote agent over A2A.
func hopper(a *a2a.Agent) runs.GraphSpec {
	return runs.GraphSpec{Description: "asks a remote agent", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(react.Messages)
		b.AddNode("hop", a.Node(react.Messages, true))
		b.SetEntry("hop")
		b.AddEdge("hop", graph.END)
		return b.Compile()
	}}
}

// lgHopper is the local graph that runs the remote's assistant over the
// LangGraph API with the person's message.
func lgHopper(a *remotegraph.Agent) runs.GraphSpec {
	return runs.GraphSpec{Description: "runs a remote assistant", New: func(context.Context, runs.Assistant) (*graph.Graph, error) {
		b := graph.New(react.Messages)
		b.AddNode("hop", func(ctx context.Context, s graph.State) (graph.Output, error) {
			msgs := react.Messages.Get(s)
			res, err := a.Call(ctx, map[string]any{"messages": []map[string]any{{"role": "user", "content": msgs[len(msgs)-1].Text()}}})
			if err != nil {
				return nil, err
			}
			m := llm.Assistant(res.Text)
			m.ID = "msg_lg_reply"
			return graph.Writes(graph.Append(react.Messages, m)), nil
		})
		b.SetEntry("hop")
		b.AddEdge("hop", graph.END)
		return b.Compile()
	}}
}

// hopLines is a JavaScript expression: the text of the timeline's remote
// hop entries, joined by "|", with the run blocks unfolded (as a person
// opens them to read).
const hopLines = `(document.querySelectorAll('details.run-log').forEach((d) => { d.open = true; }), [...document.querySelectorAll('main li.hop')].map((e) => e.innerText.replace(/\s+/g, ' ').trim()).join('|'))`

// Issue 25: two servers; the local page's graph asks the remote's agent
// over A2A. The timeline shows the hop as it happens (which agent, which
// task, its status), the remote's question reaches the person as a card,
// the answer completes the remote task, and after a reload the hop is
// there once, with the question and the remote's answer.
func TestBrowserRemoteHopInTheTimeline(t *testing.T) {
	b := newBrowser(t)
	remote := serve(t, func(s register) error { return s.Register("colours", colourAsker()) })
	agent, err := a2a.New(a2a.Config{Name: "painter", CardURL: remote + "a2a/colours", AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(agent.Close)
	url := serve(t, func(s register) error { return s.Register("hopper", hopper(agent)) })

	b.do("opening the page", chromedp.Navigate(url))
	b.pick("hopper")
	b.send("Paint the fence")
	b.waitFor("the remote's question", `document.querySelector('#cards textarea')`)
	b.waitFor("the hop, live", hopLines+`.includes('Asked remote agent painter (A2A task ')`)
	live := eval[string](b, hopLines)
	if !strings.Contains(live, "input-required") || !strings.Contains(live, "It asked: Which colour?") {
		t.Errorf("the live hop %q does not say the remote waits on its question", live)
	}
	b.do("answering", chromedp.SendKeys(chromedp.CSS(`#cards textarea`), "Blue"), chromedp.Click(button("Send")))
	b.waitFor("the remote's answer", `document.querySelector('main').innerText.includes('Blue it is.')`)
	b.waitFor("the hop completed, live", hopLines+`.includes('completed')`)
	b.screenshot("hop-live")

	b.do("reloading", chromedp.Reload())
	b.waitFor("the hop after reload", hopLines+`.includes('completed')`)
	got := eval[string](b, hopLines)
	hops := strings.Split(got, "|")
	if len(hops) != 2 {
		t.Fatalf("after reload %d hop entries %q; want the asking run's and the answered run's", len(hops), got)
	}
	if !strings.Contains(hops[0], "Asked remote agent painter (A2A task ") || !strings.Contains(hops[0], "It asked: Which colour?") {
		t.Errorf("the first hop after reload %q: want the agent, the task and its question", hops[0])
	}
	if !strings.Contains(hops[1], "completed") || !strings.Contains(hops[1], "Blue it is.") {
		t.Errorf("the second hop after reload %q: want completed with the remote's answer", hops[1])
	}
	if strings.Contains(got, "null") || strings.Contains(got, "undefined") {
		t.Errorf("the hops after reload %q show an empty value", got)
	}
	b.screenshot("hop-reloaded")
	b.checkA11y("a remote hop in the timeline")
}

// The same over the LangGraph API: the hop names the remote thread and
// run, the remote's question is answered on the page, and after a reload
// the asking run's hop shows it was interrupted with that question and the
// answered run's hop that the remote run succeeded.
func TestBrowserRemoteLangGraphHopInTheTimeline(t *testing.T) {
	b := newBrowser(t)
	remote := serve(t, func(s register) error { return s.Register("colours", colourAsker()) })
	agent, err := remotegraph.New(remotegraph.Config{Name: "lgpainter", URL: strings.TrimSuffix(remote, "/"), Assistant: "colours", AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(agent.Close)
	url := serve(t, func(s register) error { return s.Register("lghopper", lgHopper(agent)) })

	b.do("opening the page", chromedp.Navigate(url))
	b.pick("lghopper")
	b.send("Paint the gate")
	b.waitFor("the remote's question", `document.querySelector('#cards textarea')`)
	b.waitFor("the hop, live", hopLines+`.includes('Asked remote agent lgpainter (LangGraph thread ')`)
	b.do("answering", chromedp.SendKeys(chromedp.CSS(`#cards textarea`), "Green"), chromedp.Click(button("Send")))
	b.waitFor("the remote's answer", `document.querySelector('main').innerText.includes('Green it is.')`)

	b.do("reloading", chromedp.Reload())
	b.waitFor("the hops after reload", hopLines+`.includes('success')`)
	hops := strings.Split(eval[string](b, hopLines), "|")
	if len(hops) != 2 {
		t.Fatalf("after reload %d hop entries %q; want the asking run's and the answered run's", len(hops), hops)
	}
	if !strings.Contains(hops[0], ", run ") || !strings.Contains(hops[0], "interrupted") || !strings.Contains(hops[0], "It asked: Which colour?") {
		t.Errorf("the first hop after reload %q: want the remote thread and run, interrupted, and its question", hops[0])
	}
	if !strings.Contains(hops[1], "success") || strings.Count(hops[1], "interrupted") != 0 {
		t.Errorf("the second hop after reload %q: want the new remote run's success only", hops[1])
	}
	b.screenshot("hop-langgraph-reloaded")
}
