package graph_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/graph"
)

var (
	sharedLog = graph.NewKey("log", graph.Concat[string]())
	topic     = graph.NewKey[string]("topic")
	private   = graph.NewKey[int]("scratch")
	answer    = graph.NewKey[string]("answer")
)

// inner is a two-step subgraph over the shared log and topic keys and a key
// of its own.
func inner(t *testing.T, fail bool) *graph.Graph {
	b := graph.New(sharedLog, topic, private)
	b.SetName("inner")
	b.AddNode("think", func(ctx context.Context, s graph.State) (graph.Output, error) {
		graph.Emit(ctx, "thinking about "+topic.Get(s))
		return graph.Writes(graph.Append(sharedLog, "think"), private.Set(42), topic.Set(topic.Get(s)+"!")), nil
	})
	b.AddNode("write", func(ctx context.Context, s graph.State) (graph.Output, error) {
		if fail {
			return nil, errors.New("inner failure")
		}
		return graph.Writes(graph.Append(sharedLog, "write"), topic.Set(topic.Get(s)+"?")), nil
	})
	b.SetEntry("think")
	b.AddEdge("think", "write")
	b.AddEdge("write", graph.END)
	return mustCompile(t, b)
}

func TestSubgraphAsNodeSharesKeys(t *testing.T) {
	b := graph.New(sharedLog, topic)
	b.AddNode("before", logNode(sharedLog, "before"))
	b.AddSubgraph("research", inner(t, false))
	b.AddNode("after", logNode(sharedLog, "after"))
	b.SetEntry("before")
	b.AddEdge("before", "research")
	b.AddEdge("research", "after")
	b.AddEdge("after", graph.END)
	g := mustCompile(t, b)

	var events []string
	var resTaskID string
	var nsSeen []string
	for ev, err := range g.Stream(context.Background(), graph.Writes(topic.Set("go")),
		graph.WithEvents(graph.EventCustom|graph.EventUpdates|graph.EventTaskStart)) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Kind == graph.EventTaskStart {
			if ev.Node == "research" {
				resTaskID = ev.TaskID
			}
			continue
		}
		if ev.Namespace != "" {
			nsSeen = append(nsSeen, ev.Namespace)
		}
		events = append(events, describe(ev))
	}
	want := []string{
		"updates 1 before [set log [before]]",
		"custom 1 think thinking about go @research",
		"updates 1 think [set log [think] set scratch 42 set topic go!] @research",
		"updates 2 write [set log [write] set topic go!?] @research",
		"updates 2 research [set log [think] set log [write] set topic go!?]",
		"updates 3 after [set log [after]]",
	}
	if d := cmp.Diff(want, events); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	for _, ns := range nsSeen {
		if ns != "research:"+resTaskID {
			t.Errorf("namespace %q, want research:%s", ns, resTaskID)
		}
	}
	res, err := g.Invoke(context.Background(), graph.Writes(topic.Set("go")))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"before", "think", "write", "after"}, sharedLog.Get(res.State)); d != "" {
		t.Errorf("shared log (-want +got):\n%s", d)
	}
	if topic.Get(res.State) != "go!?" {
		t.Errorf("topic = %q; the subgraph's last write should win once", topic.Get(res.State))
	}
}

func TestSubgraphErrorCarriesNamespace(t *testing.T) {
	b := graph.New(sharedLog, topic)
	b.AddSubgraph("research", inner(t, true))
	b.SetEntry("research")
	b.AddEdge("research", graph.END)
	_, err := mustCompile(t, b).Invoke(context.Background(), nil)
	var ne *graph.NodeError
	if !errors.As(err, &ne) || ne.Node != "research" {
		t.Fatalf("outer error = %v", err)
	}
	var innerErr *graph.NodeError
	if !errors.As(ne.Err, &innerErr) || innerErr.Node != "write" || !strings.HasPrefix(innerErr.Namespace, "research:") {
		t.Fatalf("inner error = %#v", ne.Err)
	}
	if !strings.Contains(err.Error(), `node "write" in subgraph "research:`) {
		t.Errorf("message %q does not say where", err)
	}
}

// A graph invoked from inside a node: state is mapped in and out by the node,
// and the nested run's events reach the outer stream with its namespace.
func TestGraphInvokedFromNode(t *testing.T) {
	sub := inner(t, false)
	b := graph.New(answer)
	b.AddNode("delegate", func(ctx context.Context, s graph.State) (graph.Output, error) {
		res, err := sub.Invoke(ctx, graph.Writes(topic.Set("maps")))
		if err != nil {
			return nil, err
		}
		return graph.Writes(answer.Set(strings.Join(sharedLog.Get(res.State), ",") + " " + topic.Get(res.State))), nil
	})
	b.SetEntry("delegate")
	b.AddEdge("delegate", graph.END)
	g := mustCompile(t, b)
	got := collect(t, g, nil, graph.WithEvents(graph.EventCustom|graph.EventValues))
	want := []string{
		"values 0 {}",
		"values 0 {topic: maps} @delegate",
		"custom 1 think thinking about maps @delegate",
		"values 1 {log: [think], topic: maps!, scratch: 42} @delegate",
		"values 2 {log: [think write], topic: maps!?, scratch: 42} @delegate",
		"values 1 {answer: think,write maps!?}",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}
