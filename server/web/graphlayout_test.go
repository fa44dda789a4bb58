package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// graphLayoutJS measures the graph panel's drawing: how many pairs of
// edges between adjacent layers cross, how many edges are straight lines
// that skip a layer (and so run through the boxes between), how many
// boxes overlap, and how many side lanes two edges share.
const graphLayoutJS = `(() => {
	const box = new Map([...document.querySelectorAll('#graph .graph-node')].map((g) => {
		const m = /translate\(([-\d.]+),([-\d.]+)\)/.exec(g.getAttribute('transform'));
		const r = g.querySelector('rect');
		return [g.dataset.node, { x: +m[1], y: +m[2], w: +r.getAttribute('width'), h: +r.getAttribute('height') }];
	}));
	const edges = [...document.querySelectorAll('#graph path.graph-edge')].map((p) => ({ from: p.dataset.from, to: p.dataset.to, route: p.dataset.route, d: p.getAttribute('d') }));
	const ys = [...new Set([...box.values()].map((b) => b.y))].sort((a, b) => a - b);
	const layer = (id) => ys.indexOf(box.get(id).y);
	const down = edges.filter((e) => e.route === 'down');
	let crossings = 0;
	for (let i = 0; i < down.length; i++) for (let j = i + 1; j < down.length; j++) {
		const a = down[i], b = down[j];
		if (layer(a.from) !== layer(b.from) || a.from === b.from || a.to === b.to) continue;
		const s = box.get(a.from).x - box.get(b.from).x, t = box.get(a.to).x - box.get(b.to).x;
		if (s * t < 0) crossings++;
	}
	const skipping = edges.filter((e) => e.route === 'down' && Math.abs(layer(e.to) - layer(e.from)) !== 1).length;
	const bs = [...box.values()];
	let overlaps = 0;
	for (let i = 0; i < bs.length; i++) for (let j = i + 1; j < bs.length; j++) {
		const a = bs[i], b = bs[j];
		if (a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h) overlaps++;
	}
	const lanes = edges.filter((e) => e.route === 'left' || e.route === 'right').map((e) => e.route + ':' + / L([-\d.]+),/.exec(e.d.split(' Q')[0].slice(1))?.[1]);
	return { nodes: box.size, edges: edges.length, crossings, skipping, overlaps, sharedLanes: lanes.length - new Set(lanes).size };
})()`

type graphLayout struct {
	Nodes, Edges, Crossings, Skipping, Overlaps, SharedLanes int
}

// Point 8 of issue 22: the graph panel of the planner and the scheduler is
// readable: layers ordered so that no two edges between adjacent layers
// cross, no box overlaps another, every edge that goes up or skips layers
// runs in a side lane of its own (never straight through the boxes
// between). Each edge of the graph is drawn.
func TestBrowserGraphLayoutIsReadable(t *testing.T) {
	b := newBrowser(t)
	url := serve(t)
	b.do("opening the page", chromedp.Navigate(url))
	for _, id := range []string{"planner", "scheduler", "builder"} {
		b.pick(id)
		b.waitFor("the graph of "+id, `document.querySelector('#graph .graph-svg title')?.textContent.includes('`+id+`')`)
		got := eval[graphLayout](b, graphLayoutJS)
		t.Logf("%s: %+v", id, got)
		if got.Nodes < 3 || got.Edges < got.Nodes-1 {
			t.Errorf("%s: the drawing has %d boxes and %d edges", id, got.Nodes, got.Edges)
		}
		if got.Crossings != 0 || got.Skipping != 0 || got.Overlaps != 0 || got.SharedLanes != 0 {
			t.Errorf("%s: %d crossings, %d edges straight through layers, %d overlapping boxes, %d shared lanes; want none", id, got.Crossings, got.Skipping, got.Overlaps, got.SharedLanes)
		}
		b.screenshot("graph-" + id)
	}
	b.checkA11y("graph panel")
}
