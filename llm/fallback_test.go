package llm_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/llm"
)

func TestFallbackOrder(t *testing.T) {
	a := newFake("test:a", fail(500))
	b := newFake("test:b", fail(429))
	c := newFake("test:c", ok("from c"))
	d := newFake("test:d", ok("never"))
	m := llm.Fallback(a, b, c, d)
	if m.Name() != "fallback(test:a,test:b,test:c,test:d)" {
		t.Errorf("Name() = %q", m.Name())
	}
	resp, err := m.Generate(t.Context(), &llm.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Text() != "from c" || resp.Usage.Requests != 3 {
		t.Errorf("got %q with %d requests, want \"from c\" with 3", resp.Message.Text(), resp.Usage.Requests)
	}
	calls := []int{a.count(), b.count(), c.count(), d.count()}
	if d := cmp.Diff([]int{1, 1, 1, 0}, calls); d != "" {
		t.Errorf("calls per model (-want +got):\n%s", d)
	}
}

func TestFallbackAllFail(t *testing.T) {
	sentinel := errors.New("plain failure")
	a := newFake("test:a", fail(503))
	b := newFake("test:b", reply{err: sentinel})
	c := newFake("test:c", fail(401))
	_, err := llm.Fallback(a, b, c).Generate(t.Context(), &llm.Request{})
	fe, ok := errors.AsType[*llm.FallbackError](err)
	if !ok {
		t.Fatalf("error %v is not a FallbackError", err)
	}
	if d := cmp.Diff([]string{"test:a", "test:b", "test:c"}, fe.Models); d != "" {
		t.Errorf("models (-want +got):\n%s", d)
	}
	if ae, ok := errors.AsType[*llm.APIError](err); !ok || ae.StatusCode != 503 {
		t.Errorf("errors.As does not find the first APIError in %v", err)
	}
	if !errors.Is(err, sentinel) {
		t.Errorf("errors.Is does not find the second model's error in %v", err)
	}
	msg := err.Error()
	for _, want := range []string{"all 3 models of fallback(test:a,test:b,test:c) failed", "test:a: ", "HTTP 503", "test:b: plain failure", "test:c: ", "HTTP 401"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error message lacks %q:\n%s", want, msg)
		}
	}
	if !llm.IsRetryable(err) {
		t.Errorf("a chain with a retryable failure (503) is not retryable: %v", err)
	}
}

func TestFallbackStopsOnCallerCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newFake("test:a", reply{wait: time.Minute})
		b := newFake("test:b", ok("never"))
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		_, err := llm.Fallback(a, b).Generate(ctx, &llm.Request{})
		if !errors.Is(err, context.Canceled) || b.count() != 0 {
			t.Errorf("caller cancelled: error %v and %d calls to b; want Canceled and none", err, b.count())
		}
		if _, ok := errors.AsType[*llm.FallbackError](err); ok {
			t.Errorf("one model tried, yet the error is wrapped: %v", err)
		}
	})
}

func TestFallbackIf(t *testing.T) {
	a := newFake("test:a", fail(400))
	b := newFake("test:b", ok("never"))
	c := newFake("test:c", ok("never"))
	m := llm.FallbackIf(llm.IsRetryable, a, b, c)
	_, err := m.Generate(t.Context(), &llm.Request{})
	if err != a.replies[0].err || b.count() != 0 {
		t.Errorf("400 under FallbackIf(IsRetryable): error %v, %d calls to b; want the 400 unchanged and none", err, b.count())
	}

	// Stopping after two models says so.
	a = newFake("test:a", fail(503))
	b = newFake("test:b", fail(400))
	_, err = llm.FallbackIf(llm.IsRetryable, a, b, c).Generate(t.Context(), &llm.Request{})
	if err == nil || !strings.Contains(err.Error(), "stopped after 2 of 3 models") || c.count() != 0 {
		t.Errorf("stopped early: error %v, %d calls to c", err, c.count())
	}
}

func TestFallbackStream(t *testing.T) {
	// Before the first chunk: falls back.
	a := newFake("test:a", fail(503))
	b := newFake("test:b", ok("from b"))
	resp, err := llm.Assemble(llm.Fallback(a, b).Stream(t.Context(), &llm.Request{}))
	if err != nil || resp.Message.Text() != "from b" || resp.Usage.Requests != 2 {
		t.Errorf("fallback stream: %v, %v; want \"from b\" with 2 requests", resp, err)
	}

	// After a chunk: the error passes through unchanged.
	midErr := &llm.APIError{Provider: "test", Model: "a", StatusCode: 500}
	a = newFake("test:a", reply{chunks: []llm.Chunk{{Text: "half"}}, err: midErr})
	b = newFake("test:b", ok("never"))
	resp, err = llm.Assemble(llm.Fallback(a, b).Stream(t.Context(), &llm.Request{}))
	if err != midErr || b.count() != 0 || resp.Message.Text() != "half" {
		t.Errorf("error after a chunk: %v, %d calls to b, text %q", err, b.count(), resp.Message.Text())
	}

	// All fail before any chunk.
	a = newFake("test:a", fail(503))
	b = newFake("test:b", fail(502))
	_, err = llm.Assemble(llm.Fallback(a, b).Stream(t.Context(), &llm.Request{}))
	if _, ok := errors.AsType[*llm.FallbackError](err); !ok {
		t.Errorf("all failed: error %v, want a FallbackError", err)
	}
}

func TestFallbackOfNothing(t *testing.T) {
	m := llm.Fallback()
	_, err := m.Generate(t.Context(), &llm.Request{})
	if err == nil || !strings.Contains(err.Error(), "no models") {
		t.Errorf("Generate: %v", err)
	}
	_, err = llm.Assemble(m.Stream(t.Context(), &llm.Request{}))
	if err == nil || !strings.Contains(err.Error(), "no models") {
		t.Errorf("Stream: %v", err)
	}
}

func TestNilModelsFailWithoutPanicking(t *testing.T) {
	for _, m := range []llm.Model{llm.Retry(nil, llm.RetryPolicy{}), llm.WithTimeout(nil, time.Second), llm.Fallback(nil)} {
		if _, err := m.Generate(t.Context(), &llm.Request{}); err == nil || !strings.Contains(err.Error(), "nil Model") {
			t.Errorf("%s: Generate error %v", m.Name(), err)
		}
		if _, err := llm.Assemble(m.Stream(t.Context(), &llm.Request{})); err == nil {
			t.Errorf("%s: Stream gave no error", m.Name())
		}
	}
}

// TestComposition checks Retry(Fallback(WithTimeout(a), b)): the first
// model always times out, the second fails once then answers.
func TestComposition(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newFake("test:a", reply{wait: time.Hour})
		b := newFake("test:b", fail(503), ok("from b"))
		m := llm.Retry(llm.Fallback(llm.WithTimeout(a, 2*time.Second), b), noJitter)
		for _, stream := range []bool{false, true} {
			a.start, b.start = time.Now(), time.Now()
			a.calls, b.calls = nil, nil
			var (
				resp *llm.Response
				err  error
			)
			if stream {
				resp, err = llm.Assemble(m.Stream(t.Context(), &llm.Request{}))
			} else {
				resp, err = m.Generate(t.Context(), &llm.Request{})
			}
			if err != nil {
				t.Fatalf("stream=%v: %v", stream, err)
			}
			if resp.Message.Text() != "from b" || resp.Usage.Requests != 4 {
				t.Errorf("stream=%v: got %q with %d requests, want \"from b\" with 4", stream, resp.Message.Text(), resp.Usage.Requests)
			}
			// a times out at 2s, b fails, 500ms backoff, a again at 2.5s
			// and times out at 4.5s, then b answers.
			if d := cmp.Diff([]time.Duration{0, 2500 * time.Millisecond}, a.callTimes()); d != "" {
				t.Errorf("stream=%v: calls to a (-want +got):\n%s", stream, d)
			}
			if d := cmp.Diff([]time.Duration{2 * time.Second, 4500 * time.Millisecond}, b.callTimes()); d != "" {
				t.Errorf("stream=%v: calls to b (-want +got):\n%s", stream, d)
			}
		}
	})
}
