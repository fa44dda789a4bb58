package llm_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/llm"
)

func TestTimeoutGenerate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake("openai:gpt-4o-mini", reply{wait: time.Minute, chunks: []llm.Chunk{{Text: "late"}}})
		start := time.Now()
		_, err := llm.WithTimeout(f, 30*time.Second).Generate(t.Context(), &llm.Request{})
		if took := time.Since(start); took != 30*time.Second {
			t.Errorf("returned after %v, want 30s", took)
		}
		want := "openai:gpt-4o-mini: no complete reply within 30s (per-call timeout)"
		if err == nil || err.Error() != want {
			t.Fatalf("error %v, want %q", err, want)
		}
		te, ok := errors.AsType[*llm.TimeoutError](err)
		if !ok || te.Model != "openai:gpt-4o-mini" || te.Timeout != 30*time.Second {
			t.Errorf("error %#v is not a TimeoutError naming the model and timeout", err)
		}
		if !llm.IsRetryable(err) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a per-call timeout must be retryable and a DeadlineExceeded: %v", err)
		}

		// Fast enough: the reply comes through.
		f = newFake("test:quick", reply{wait: time.Second, chunks: []llm.Chunk{{Text: "in time"}}})
		resp, err := llm.WithTimeout(f, 2*time.Second).Generate(t.Context(), &llm.Request{})
		if err != nil || resp.Message.Text() != "in time" {
			t.Errorf("reply within the timeout: %v, %v", resp, err)
		}
	})
}

func TestTimeoutCallerCancelIsNotATimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake("test:slow", reply{wait: time.Minute})
		m := llm.WithTimeout(f, 10*time.Second)

		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		_, err := m.Generate(ctx, &llm.Request{})
		if _, ok := errors.AsType[*llm.TimeoutError](err); ok || !errors.Is(err, context.Canceled) {
			t.Errorf("caller cancelled: error %v, want context.Canceled and no TimeoutError", err)
		}
		if llm.IsRetryable(err) {
			t.Errorf("the caller's cancellation is retryable: %v", err)
		}

		// The caller's own deadline, shorter than the timeout, is the
		// caller's; Retry does not retry it.
		ctx, cancel2 := context.WithTimeout(t.Context(), time.Second)
		defer cancel2()
		_, err = llm.Retry(m, noJitter).Generate(ctx, &llm.Request{})
		if _, ok := errors.AsType[*llm.TimeoutError](err); ok || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("caller's deadline: error %v, want its DeadlineExceeded and no TimeoutError", err)
		}
		if f.count() != 2 {
			t.Errorf("%d calls, want 2 (one per Generate, none retried)", f.count())
		}
	})
}

func TestRetryRetriesTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake("test:slow", reply{wait: time.Minute}, ok("second try"))
		resp, err := llm.Retry(llm.WithTimeout(f, 5*time.Second), noJitter).Generate(t.Context(), &llm.Request{})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Message.Text() != "second try" || resp.Usage.Requests != 2 {
			t.Errorf("got %q with %d requests, want \"second try\" with 2", resp.Message.Text(), resp.Usage.Requests)
		}
		// Timeout at 5s, then the default 500ms backoff.
		if d := cmp.Diff([]time.Duration{0, 5500 * time.Millisecond}, f.callTimes()); d != "" {
			t.Errorf("call times (-want +got):\n%s", d)
		}
	})
}

func TestTimeoutStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The timeout covers the whole iteration, not each chunk.
		chunks := []llm.Chunk{{Text: "a"}, {Text: "b"}, {Text: "c"}, {Text: "d"}}
		f := newFake("test:drip", reply{wait: time.Second, gap: time.Second, chunks: chunks})
		var got string
		var gotErr error
		start := time.Now()
		for c, err := range llm.WithTimeout(f, 2500*time.Millisecond).Stream(t.Context(), &llm.Request{}) {
			if err != nil {
				gotErr = err
				break
			}
			got += c.Text
		}
		if got != "ab" || time.Since(start) != 2500*time.Millisecond {
			t.Errorf("got %q after %v, want \"ab\" after 2.5s", got, time.Since(start))
		}
		if _, ok := errors.AsType[*llm.TimeoutError](gotErr); !ok {
			t.Errorf("stream error %v, want a TimeoutError", gotErr)
		}

		// A model that ends its stream quietly when cancelled must not
		// pass for a complete reply.
		f = newFake("test:quiet", reply{wait: time.Minute, quiet: true, chunks: chunks})
		_, err := llm.Assemble(llm.WithTimeout(f, time.Second).Stream(t.Context(), &llm.Request{}))
		if _, ok := errors.AsType[*llm.TimeoutError](err); !ok {
			t.Errorf("quietly cut stream: error %v, want a TimeoutError", err)
		}

		// Breaking out stops the stream at once.
		f = newFake("test:drip", reply{gap: time.Hour, chunks: chunks})
		start = time.Now()
		for range llm.WithTimeout(f, 2*time.Hour).Stream(t.Context(), &llm.Request{}) {
			break
		}
		if time.Since(start) != 0 {
			t.Errorf("breaking out took %v", time.Since(start))
		}
	})
}

func TestTimeoutZeroMeansNone(t *testing.T) {
	f := newFake("test:m", ok("x"))
	if m := llm.WithTimeout(f, 0); m != llm.Model(f) {
		t.Errorf("WithTimeout(m, 0) = %T, want m itself", m)
	}
}
