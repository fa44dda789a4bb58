package guide_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/llm/llmtest"
)

// Example_resilientModel wraps models the way a real provider's model
// should be wrapped: a timeout per call, retries of transient failures,
// and a fallback to a second model. Scripted models stand in for
// provider.Resolve's here, so the example needs no network (page
// 08-providers.md).
func Example_resilientModel() {
	primary := llmtest.New(llmtest.WithName("vllm:qwen2.5"))
	primary.Reply(
		llmtest.StatusError(503, "overloaded"),
		llmtest.StatusError(503, "overloaded"),
	)
	backup := llmtest.New(llmtest.WithName("ollama:llama3.2"))
	backup.Reply(llmtest.Text("Hello from the backup."))

	retried := llm.Retry(llm.WithTimeout(primary, time.Minute), llm.RetryPolicy{
		MaxAttempts:    2,
		InitialBackoff: time.Millisecond, // short for the example; keep the default in production
		OnRetry: func(attempt int, err error, wait time.Duration) {
			fmt.Println("retry after attempt", attempt, "failed:", llm.IsRetryable(err))
		},
	})
	model := llm.Fallback(retried, backup)

	resp, err := llm.Call(context.Background(), model, &llm.Request{Messages: []llm.Message{llm.User("hi")}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Message.Text())
	fmt.Println("requests:", resp.Usage.Requests) // one for the model that failed, one for the answer
	// Output:
	// retry after attempt 1 failed: true
	// Hello from the backup.
	// requests: 2
}
