package llm

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
)

// Fallback returns a model that asks models in order until one answers:
// when a model fails, the next one gets the same request. Every error makes
// it move on except the caller's context being done (cancelled or past
// its deadline), which stops at once; use FallbackIf to choose.
//
// Stream falls back only before the first chunk reaches the caller; a
// failure after that passes through unchanged, since part of a reply has
// already been used.
//
// When every model fails, the error is a *FallbackError listing each
// model's error; errors.As and errors.Is look through all of them (so
// IsRetryable holds when one of them is retryable, and
// Retry(Fallback(...), p) retries the whole chain). When only one model
// was tried, its error is returned unchanged. Usage.Requests of the answer
// counts one request for each model that failed before it.
//
// Name is "fallback(a,b)" with the models' names. With no models, every
// call fails with an error saying so.
func Fallback(models ...Model) Model { return FallbackIf(nil, models...) }

// FallbackIf is Fallback moving on to the next model only for errors
// moveOn accepts (nil: every error). Whatever moveOn says, a done caller's
// context stops the chain. For example, FallbackIf(llm.IsRetryable, a, b)
// does not fall back on a 400 Bad Request, which the next model would
// likely reject too.
func FallbackIf(moveOn func(error) bool, models ...Model) Model {
	models = append([]Model(nil), models...)
	names := make([]string, len(models))
	for i, m := range models {
		models[i] = orNil(m)
		names[i] = models[i].Name()
	}
	return &fallbackModel{
		models: models,
		names:  names,
		name:   "fallback(" + strings.Join(names, ",") + ")",
		moveOn: moveOn,
	}
}

type fallbackModel struct {
	models []Model
	names  []string
	name   string
	moveOn func(error) bool
}

func (f *fallbackModel) Name() string { return f.name }

// Limits returns the field-wise maximum of the models' limits: any of them
// may answer.
func (f *fallbackModel) Limits() Limits {
	l := DefaultLimits()
	if len(f.models) > 0 {
		l = LimitsOf(f.models[0])
	}
	for _, m := range f.models[1:] {
		l = l.Max(LimitsOf(m))
	}
	return l
}

// next reports whether the model after the one that failed with err
// should be tried.
func (f *fallbackModel) next(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	return f.moveOn == nil || f.moveOn(err)
}

// fail returns the error for a chain that ends after errs.
func (f *fallbackModel) fail(errs []error) error {
	switch len(errs) {
	case 0:
		return fmt.Errorf("llm: %s has no models to ask; pass at least one to llm.Fallback", f.name)
	case 1:
		return errs[0]
	}
	return &FallbackError{Name: f.name, Models: f.names[:len(errs)], Errs: errs, Total: len(f.models)}
}

func (f *fallbackModel) Generate(ctx context.Context, req *Request) (*Response, error) {
	var (
		errs   []error
		failed int64
	)
	for _, m := range f.models {
		resp, err := m.Generate(ctx, req)
		if err == nil && resp == nil {
			err = fmt.Errorf("llm: model %s returned neither a reply nor an error", m.Name())
		}
		if err == nil {
			if failed > 0 {
				resp.Usage.Requests = failed + max(1, resp.Usage.Requests)
			}
			return resp, nil
		}
		errs = append(errs, err)
		failed += requestsIn(err)
		if !f.next(ctx, err) {
			break
		}
	}
	return nil, f.fail(errs)
}

func (f *fallbackModel) Stream(ctx context.Context, req *Request) iter.Seq2[Chunk, error] {
	return func(yield func(Chunk, error) bool) {
		var (
			errs   []error
			before int64 // requests made by the models that failed
		)
		for _, m := range f.models {
			failed, done := relay(m.Stream(ctx, req), before, yield)
			if done {
				return
			}
			errs = append(errs, failed)
			before += requestsIn(failed)
			if !f.next(ctx, failed) {
				break
			}
		}
		yield(Chunk{}, f.fail(errs))
	}
}

// FallbackError is the error of a Fallback chain in which more than one
// model failed: Errs[i] is the error of the model named Models[i], in the
// order they were tried. errors.Is and errors.As look through every one.
type FallbackError struct {
	// Name is the chain's name ("fallback(a,b)").
	Name string
	// Models names the models tried, in order.
	Models []string
	// Errs holds their errors, in the same order.
	Errs []error
	// Total is how many models the chain has; when it exceeds
	// len(Models), the chain stopped early because the last error does
	// not call for a fallback or the caller's context is done.
	Total int
}

func (e *FallbackError) Error() string {
	var b strings.Builder
	if len(e.Models) < e.Total {
		fmt.Fprintf(&b, "llm: %s stopped after %d of %d models (the last error does not call for a fallback):", e.Name, len(e.Models), e.Total)
	} else {
		fmt.Fprintf(&b, "llm: all %d models of %s failed:", len(e.Models), e.Name)
	}
	for i, err := range e.Errs {
		b.WriteString("\n\t")
		if i < len(e.Models) {
			b.WriteString(e.Models[i] + ": ")
		}
		b.WriteString(strings.ReplaceAll(err.Error(), "\n", "\n\t"))
	}
	return b.String()
}

// Unwrap returns every model's error.
func (e *FallbackError) Unwrap() []error { return e.Errs }

// requestsIn returns how many model requests the failure err stands for:
// one, or one per model that failed in a Fallback chain.
func requestsIn(err error) int64 {
	fe, ok := errors.AsType[*FallbackError](err)
	if !ok {
		return 1
	}
	var n int64
	for _, e := range fe.Errs {
		n += requestsIn(e)
	}
	return max(n, 1)
}

// orNil returns m, or a model whose every call fails explaining that a nil
// Model was wrapped, so a nil reaches the caller as an error, not a panic.
func orNil(m Model) Model {
	if m == nil {
		return nilModel{}
	}
	return m
}

type nilModel struct{}

var errNilModel = errors.New("llm: a nil Model was passed to llm.Retry, llm.WithTimeout or llm.Fallback; pass a model")

func (nilModel) Name() string { return "<nil model>" }

func (nilModel) Generate(context.Context, *Request) (*Response, error) { return nil, errNilModel }

func (nilModel) Stream(context.Context, *Request) iter.Seq2[Chunk, error] {
	return func(yield func(Chunk, error) bool) { yield(Chunk{}, errNilModel) }
}
