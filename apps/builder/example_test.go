package builder_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/trellis-agents/trellis/apps/builder"
	"github.com/trellis-agents/trellis/tool"
)

// Embedding the builder app: a model, and optionally the answer node's
// tools and both prompts; then run a customer message.
func Example() {
	ctx := context.Background()
	app, err := builder.New(ctx, builder.Config{
		Model: builder.Script(), // or any llm.Model
		Tools: []tool.Tool{builder.PolicyTool()},
		// AnswerPrompt, ReviewPrompt, MaxIterations: documented defaults.
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer app.Close()
	res, err := app.Graph.Invoke(ctx, app.Input("")) // "" = the sample question
	fmt.Println(res.Status, err)
	out := app.Outcome(ctx, res.State)
	fmt.Println(strings.Contains(out, "No changes needed"))
	// Output:
	// completed <nil>
	// true
}
