package llm_test

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/trellis-agents/trellis/llm"
)

// reply is what a scriptedFake does on one call.
type reply struct {
	wait   time.Duration // before the first chunk; cut short by ctx
	gap    time.Duration // before each later chunk; cut short by ctx
	chunks []llm.Chunk
	err    error // after the chunks
	quiet  bool  // when ctx ends a wait, end the stream with no error
	// cancelErr, when set, is the error when ctx ends a wait (instead of
	// ctx.Err()), like a transport that reports a reset connection.
	cancelErr error
}

// scriptedFake is a model for the resilience tests: call i follows
// replies[i] (the last one repeats) and records when it started.
type scriptedFake struct {
	name    string
	replies []reply

	mu    sync.Mutex
	start time.Time
	calls []time.Duration // offsets of each call from start
}

func newFake(name string, replies ...reply) *scriptedFake {
	return &scriptedFake{name: name, replies: replies, start: time.Now()}
}

func (f *scriptedFake) Name() string { return f.name }

func (f *scriptedFake) next() reply {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := min(len(f.calls), len(f.replies)-1)
	f.calls = append(f.calls, time.Since(f.start))
	return f.replies[i]
}

func (f *scriptedFake) callTimes() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.calls...)
}

func (f *scriptedFake) count() int { return len(f.callTimes()) }

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *scriptedFake) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	return llm.Assemble(f.Stream(ctx, req))
}

func (f *scriptedFake) Stream(ctx context.Context, _ *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		r := f.next()
		for i, c := range r.chunks {
			d := r.gap
			if i == 0 {
				d = r.wait
			}
			if err := sleep(ctx, d); err != nil {
				r.interrupted(err, yield)
				return
			}
			if !yield(c, nil) {
				return
			}
		}
		if len(r.chunks) == 0 {
			if err := sleep(ctx, r.wait); err != nil {
				r.interrupted(err, yield)
				return
			}
		}
		if r.err != nil {
			yield(llm.Chunk{}, r.err)
		}
	}
}

// interrupted ends a stream whose wait ctx cut short.
func (r reply) interrupted(err error, yield func(llm.Chunk, error) bool) {
	switch {
	case r.quiet:
	case r.cancelErr != nil:
		yield(llm.Chunk{}, r.cancelErr)
	default:
		yield(llm.Chunk{}, err)
	}
}

func ok(text string) reply {
	return reply{chunks: []llm.Chunk{{Text: text}, {Usage: &llm.Usage{InputTokens: 7, OutputTokens: 3}}}}
}

func fail(status int) reply {
	return reply{err: &llm.APIError{Provider: "test", Model: "m", StatusCode: status, Message: "scripted failure"}}
}

var noJitter = llm.RetryPolicy{Jitter: -1}

func TestRetryBackoffSequence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake("test:flaky", fail(503), fail(500), fail(429), ok("done"))
		type retried struct {
			attempt int
			status  int
			wait    time.Duration
		}
		var seen []retried
		p := llm.RetryPolicy{
			MaxAttempts: 4, InitialBackoff: time.Second, Multiplier: 3, MaxBackoff: 5 * time.Second, Jitter: -1,
			OnRetry: func(n int, err error, wait time.Duration) {
				ae, _ := errors.AsType[*llm.APIError](err)
				seen = append(seen, retried{n, ae.StatusCode, wait})
			},
		}
		resp, err := llm.Retry(f, p).Generate(t.Context(), &llm.Request{})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Message.Text() != "done" || resp.Usage.Requests != 4 || resp.Usage.InputTokens != 7 {
			t.Errorf("reply %q with usage %+v, want \"done\" with 4 requests and 7 input tokens", resp.Message.Text(), resp.Usage)
		}
		want := []time.Duration{0, time.Second, 4 * time.Second, 9 * time.Second}
		if d := cmp.Diff(want, f.callTimes()); d != "" {
			t.Errorf("call times (-want +got):\n%s", d)
		}
		wantSeen := []retried{{1, 503, time.Second}, {2, 500, 3 * time.Second}, {3, 429, 5 * time.Second}}
		if d := cmp.Diff(wantSeen, seen, cmp.AllowUnexported(retried{})); d != "" {
			t.Errorf("OnRetry calls (-want +got):\n%s", d)
		}
	})
}

func TestRetryDefaultsAndBackoff(t *testing.T) {
	var p llm.RetryPolicy
	got := []time.Duration{p.Backoff(1), p.Backoff(2), p.Backoff(3), p.Backoff(8), p.Backoff(20)}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 30 * time.Second, 30 * time.Second}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("default backoff (-want +got):\n%s", d)
	}
	long := llm.RetryPolicy{InitialBackoff: time.Minute}
	if got := long.Backoff(3); got != time.Minute {
		t.Errorf("a default MaxBackoff shortened an explicit InitialBackoff: Backoff(3) = %v, want 1m", got)
	}
	synctest.Test(t, func(t *testing.T) {
		f := newFake("test:down", fail(502))
		_, err := llm.Retry(f, llm.RetryPolicy{}).Generate(t.Context(), &llm.Request{})
		if f.count() != 3 {
			t.Errorf("default policy made %d attempts, want 3", f.count())
		}
		if err == nil || !strings.Contains(err.Error(), "gave up after 3 attempts") {
			t.Errorf("error %v does not say how many attempts were made", err)
		}
		if ae, ok := errors.AsType[*llm.APIError](err); !ok || ae.StatusCode != 502 {
			t.Errorf("final error %v does not wrap the last APIError", err)
		}
	})
}

func TestRetryJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rnd := []float64{0, 0.5, 0.9999999}
		f := newFake("test:flaky", fail(503), fail(503), fail(503), ok("done"))
		p := llm.RetryPolicy{
			MaxAttempts: 4, InitialBackoff: time.Second, MaxBackoff: 4 * time.Second, Jitter: 0.25,
			Rand: func() float64 { r := rnd[0]; rnd = rnd[1:]; return r },
		}
		if _, err := llm.Retry(f, p).Generate(t.Context(), &llm.Request{}); err != nil {
			t.Fatal(err)
		}
		// Waits: 1s×0.75, 2s×1, 4s×1.25 capped at MaxBackoff 4s.
		want := []time.Duration{0, 750 * time.Millisecond, 2750 * time.Millisecond, 6750 * time.Millisecond}
		if d := cmp.Diff(want, f.callTimes()); d != "" {
			t.Errorf("call times (-want +got):\n%s", d)
		}
	})
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		limited := reply{err: &llm.APIError{Provider: "test", Model: "m", StatusCode: 429, RetryAfter: 7 * time.Second}}
		f := newFake("test:limited", limited, ok("done"))
		if _, err := llm.Retry(f, noJitter).Generate(t.Context(), &llm.Request{}); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]time.Duration{0, 7 * time.Second}, f.callTimes()); d != "" {
			t.Errorf("Retry-After of 7s over a 500ms backoff: call times (-want +got):\n%s", d)
		}

		// A Retry-After beyond MaxRetryAfter is cut to it.
		huge := reply{err: &llm.APIError{Provider: "test", Model: "m", StatusCode: 503, RetryAfter: time.Hour}}
		f = newFake("test:limited", huge, ok("done"))
		p := llm.RetryPolicy{Jitter: -1, MaxRetryAfter: 20 * time.Second}
		if _, err := llm.Retry(f, p).Generate(t.Context(), &llm.Request{}); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]time.Duration{0, 20 * time.Second}, f.callTimes()); d != "" {
			t.Errorf("Retry-After of 1h capped at 20s: call times (-want +got):\n%s", d)
		}

		// A short Retry-After does not shorten a longer backoff.
		short := reply{err: &llm.APIError{Provider: "test", Model: "m", StatusCode: 429, RetryAfter: time.Millisecond}}
		f = newFake("test:limited", short, ok("done"))
		if _, err := llm.Retry(f, llm.RetryPolicy{Jitter: -1, InitialBackoff: 3 * time.Second}).Generate(t.Context(), &llm.Request{}); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]time.Duration{0, 3 * time.Second}, f.callTimes()); d != "" {
			t.Errorf("Retry-After of 1ms under a 3s backoff: call times (-want +got):\n%s", d)
		}
	})
}

func TestRetryDoesNotRetryClientErrors(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404} {
		f := newFake("test:bad", fail(status), ok("never"))
		_, err := llm.Retry(f, noJitter).Generate(t.Context(), &llm.Request{})
		if f.count() != 1 {
			t.Errorf("HTTP %d: %d attempts, want 1", status, f.count())
		}
		if err != f.replies[0].err {
			t.Errorf("HTTP %d: error %v, want the model's error unchanged", status, err)
		}
	}

	// A non-retryable error after a retry says which attempt it was.
	synctest.Test(t, func(t *testing.T) {
		f := newFake("test:bad", fail(503), fail(400), ok("never"))
		_, err := llm.Retry(f, noJitter).Generate(t.Context(), &llm.Request{})
		if f.count() != 2 {
			t.Errorf("%d attempts, want 2", f.count())
		}
		if ae, ok := errors.AsType[*llm.APIError](err); !ok || ae.StatusCode != 400 || !strings.Contains(err.Error(), "attempt 2 of 3") {
			t.Errorf("error %v: want the 400 wrapped, naming attempt 2 of 3", err)
		}
	})

	// A custom Retryable decides.
	f := newFake("test:bad", fail(503), ok("never"))
	_, err := llm.Retry(f, llm.RetryPolicy{Retryable: func(error) bool { return false }}).Generate(t.Context(), &llm.Request{})
	if f.count() != 1 || err == nil {
		t.Errorf("Retryable returning false: %d attempts and error %v, want 1 attempt and the error", f.count(), err)
	}
}

func TestRetryCancelDuringBackoffReturnsPromptly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake("test:down", fail(503))
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		start := time.Now()
		_, err := llm.Retry(f, llm.RetryPolicy{InitialBackoff: time.Minute, Jitter: -1}).Generate(ctx, &llm.Request{})
		if took := time.Since(start); took != time.Second {
			t.Errorf("returned after %v, want 1s (when the context was cancelled)", took)
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v does not wrap context.Canceled", err)
		}
		if _, ok := errors.AsType[*llm.APIError](err); !ok {
			t.Errorf("error %v does not keep the last model error", err)
		}
		if llm.IsRetryable(err) {
			t.Errorf("a cancelled retry is retryable: %v", err)
		}
		if f.count() != 1 {
			t.Errorf("%d attempts, want 1", f.count())
		}
	})
}

func TestRetryStopsWhenCallerCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A network-style failure after the caller's deadline passed must
		// not be retried even though it looks retryable.
		netErr := &llm.APIError{Provider: "test", Model: "m", Err: errors.New("connection reset")}
		if !llm.IsRetryable(netErr) {
			t.Fatalf("the test's network error %v is not retryable", netErr)
		}
		f := newFake("test:slow", reply{wait: time.Minute, cancelErr: netErr})
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_, err := llm.Retry(f, noJitter).Generate(ctx, &llm.Request{})
		if err != netErr || f.count() != 1 {
			t.Errorf("after the caller's deadline: %d attempts, error %v; want 1 attempt and the model's error", f.count(), err)
		}
	})
}

func TestRetryStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Fails before the first chunk: retried, and usage counts both.
		f := newFake("test:flaky", fail(503), ok("hello"))
		resp, err := llm.Assemble(llm.Retry(f, noJitter).Stream(t.Context(), &llm.Request{}))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Message.Text() != "hello" || resp.Usage.Requests != 2 || resp.Usage.OutputTokens != 3 {
			t.Errorf("got %q with usage %+v; want \"hello\", 2 requests, 3 output tokens", resp.Message.Text(), resp.Usage)
		}
		if f.count() != 2 {
			t.Errorf("%d attempts, want 2", f.count())
		}

		// A stream with no usage still reports the requests.
		f = newFake("test:flaky", fail(503), fail(503), reply{chunks: []llm.Chunk{{Text: "x"}}})
		resp, err = llm.Assemble(llm.Retry(f, noJitter).Stream(t.Context(), &llm.Request{}))
		if err != nil || resp.Usage.Requests != 3 {
			t.Errorf("no usage from the model: err %v, Requests %d; want 3", err, resp.Usage.Requests)
		}

		// Fails after a chunk: not retried, error unchanged.
		midErr := &llm.APIError{Provider: "test", Model: "m", StatusCode: 503}
		f = newFake("test:flaky", reply{chunks: []llm.Chunk{{Text: "par"}}, err: midErr}, ok("never"))
		var got []string
		var gotErr error
		for c, err := range llm.Retry(f, noJitter).Stream(t.Context(), &llm.Request{}) {
			if err != nil {
				gotErr = err
				break
			}
			got = append(got, c.Text)
		}
		if gotErr != midErr {
			t.Errorf("error after a chunk: got %v, want the model's error unchanged", gotErr)
		}
		if f.count() != 1 || !cmp.Equal(got, []string{"par"}) {
			t.Errorf("after a chunk: %d attempts, chunks %q; want 1 attempt and [par]", f.count(), got)
		}

		// Exhausted before any chunk: the error says so.
		f = newFake("test:down", fail(500))
		_, err = llm.Assemble(llm.Retry(f, llm.RetryPolicy{MaxAttempts: 2, Jitter: -1}).Stream(t.Context(), &llm.Request{}))
		if err == nil || !strings.Contains(err.Error(), "gave up after 2 attempts") || f.count() != 2 {
			t.Errorf("exhausted stream: %d attempts, error %v", f.count(), err)
		}
	})
}

func TestRetryStreamBreakStopsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake("test:ok", reply{chunks: []llm.Chunk{{Text: "a"}, {Text: "b"}, {Text: "c"}}})
		n := 0
		for range llm.Retry(f, noJitter).Stream(t.Context(), &llm.Request{}) {
			n++
			break
		}
		if n != 1 || f.count() != 1 {
			t.Errorf("break after one chunk: %d chunks, %d attempts", n, f.count())
		}
	})
}
