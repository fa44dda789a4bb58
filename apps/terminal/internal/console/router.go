package console

import (
	"fmt"

	"github.com/trellis-agents/trellis/agent/router"
	"github.com/trellis-agents/trellis/graph"
)

// RouterAsk answers agent/router's ask_human questions: it shows the
// question and reads the answer as one line.
func RouterAsk(p *Prompter, in graph.InterruptInfo) (any, bool, error) {
	q, ok := router.QuestionFrom(in)
	if !ok {
		return nil, false, nil
	}
	fmt.Fprintf(p.Out, "\nThe router asks: %s\n", q.Question)
	line, err := p.Line("Your answer > ")
	if err != nil {
		return nil, true, err
	}
	return line, true, nil
}
