package graph

import (
	"fmt"
	"strings"
)

// Mermaid renders the graph as a Mermaid flowchart: static edges as solid
// arrows, conditional edges labelled with their path-map keys, Goto
// destinations and fan-out targets dashed, join edges drawn from all their
// sources at once and labelled "join", deferred nodes marked, and subgraph
// nodes drawn as nested subgraphs. The output is deterministic.
func (g *Graph) Mermaid() string {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	g.mermaid(&b, "", "  ")
	return b.String()
}

func mermaidID(prefix, name string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for _, r := range name {
		if r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			fmt.Fprintf(&b, "_%x_", r)
		}
	}
	return b.String()
}

func mermaidLabel(s string) string { return strings.ReplaceAll(s, `"`, "#quot;") }

func (g *Graph) mermaid(b *strings.Builder, prefix, indent string) {
	id := func(idx int) string {
		switch idx {
		case endIdx:
			return mermaidID(prefix, END)
		case g.start.idx:
			return mermaidID(prefix, START)
		}
		return mermaidID(prefix, g.nodes[idx].name)
	}
	fmt.Fprintf(b, "%s%s([START])\n", indent, id(g.start.idx))
	for _, n := range g.nodes {
		label := mermaidLabel(n.name)
		switch {
		case n.sub != nil:
			fmt.Fprintf(b, "%ssubgraph %s[\"%s\"]\n", indent, id(n.idx), label)
			n.sub.mermaid(b, id(n.idx)+"__", indent+"  ")
			fmt.Fprintf(b, "%send\n", indent)
			continue
		case n.deferred:
			label += " (deferred)"
		case n.takesPayload:
			label += " (per Send)"
		}
		fmt.Fprintf(b, "%s%s[\"%s\"]\n", indent, id(n.idx), label)
	}
	fmt.Fprintf(b, "%s%s([END])\n", indent, id(endIdx))

	all := append([]*cnode{g.start}, g.nodes...)
	for _, n := range all {
		for _, s := range n.succ {
			fmt.Fprintf(b, "%s%s --> %s\n", indent, id(n.idx), id(s))
		}
		for _, c := range n.conds {
			byTarget := map[int][]string{}
			var order []int // targets in order of their first path key
			for _, k := range c.keys {
				dst := c.paths[k]
				if byTarget[dst] == nil {
					order = append(order, dst)
				}
				byTarget[dst] = append(byTarget[dst], k)
			}
			for _, dst := range order {
				fmt.Fprintf(b, "%s%s -->|\"%s\"| %s\n", indent, id(n.idx), mermaidLabel(strings.Join(byTarget[dst], " / ")), id(dst))
			}
		}
		for _, f := range n.fans {
			for _, name := range sortedKeys(f.dests) {
				fmt.Fprintf(b, "%s%s -.->|fan-out| %s\n", indent, id(n.idx), id(f.dests[name]))
			}
		}
		for _, name := range sortedKeys(n.gotos) {
			fmt.Fprintf(b, "%s%s -.->|goto| %s\n", indent, id(n.idx), id(n.gotos[name]))
		}
	}
	for _, j := range g.joins {
		srcs := make([]string, len(j.from))
		for i, f := range j.from {
			srcs[i] = id(f)
		}
		fmt.Fprintf(b, "%s%s -->|join| %s\n", indent, strings.Join(srcs, " & "), id(j.to))
	}
}
