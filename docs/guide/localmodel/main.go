// Command localmodel is the providers page's example: a ReAct agent on a
// local OpenAI-compatible server (vLLM by default; MODEL=ollama:qwen2.5 or
// MODEL=openai:gpt-4o-mini pick another model).
//
//	go run ./docs/guide/localmodel
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/trellis-agents/trellis/agent/react"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/provider"
)

func main() {
	// A vLLM server started with: vllm serve Qwen/Qwen2.5-7B-Instruct --enable-auto-tool-choice --tool-call-parser hermes
	spec := "openai-compatible:http://localhost:8000/v1#Qwen/Qwen2.5-7B-Instruct"
	if s := os.Getenv("MODEL"); s != "" {
		spec = s // e.g. ollama:qwen2.5 or openai:gpt-4o-mini
	}
	// Local servers usually need no key; provider.WithAPIKey sets one when
	// they do, provider.WithHeader adds headers a gateway needs.
	m, err := provider.Resolve(spec, provider.WithAPIKey(os.Getenv("LOCAL_LLM_KEY")))
	if err != nil {
		log.Fatal(err)
	}
	model := llm.Retry(llm.WithTimeout(m, 2*time.Minute), llm.RetryPolicy{})

	agent, err := react.New(react.Config{Model: model, System: "Answer briefly."})
	if err != nil {
		log.Fatal(err)
	}
	res, err := agent.Invoke(context.Background(), react.Input("What is a superstep?"))
	if err != nil {
		log.Fatal(err)
	}
	answer, _ := react.Answer(res.State)
	fmt.Println(answer)
}
