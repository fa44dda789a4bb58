package telemetry

import (
	"context"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

// logFields are the IDs a request or run adds to its log lines. A
// request's are filled in by Route once the mux has matched it, before the
// handler runs.
type logFields struct {
	tenant, thread, run string
	route               string // the matched route pattern (requests only)
}

type logFieldsKey struct{}

func withLogFields(ctx context.Context, f *logFields) context.Context {
	return context.WithValue(ctx, logFieldsKey{}, f)
}

func fieldsFrom(ctx context.Context) *logFields {
	f, _ := ctx.Value(logFieldsKey{}).(*logFields)
	return f
}

// LogHandler wraps h so that each record logged with a context (the
// *Context logging methods) carries the context's tenant, thread_id and
// run_id, when a request or run set them, and its trace_id and span_id,
// when it has a span.
func LogHandler(h slog.Handler) slog.Handler {
	if c, ok := h.(ctxHandler); ok {
		return c
	}
	return ctxHandler{h}
}

type ctxHandler struct{ slog.Handler }

func (h ctxHandler) Handle(ctx context.Context, r slog.Record) error {
	if ctx == nil {
		return h.Handler.Handle(ctx, r)
	}
	f := fieldsFrom(ctx)
	sc := trace.SpanContextFromContext(ctx)
	if f == nil && !sc.IsValid() {
		return h.Handler.Handle(ctx, r)
	}
	r = r.Clone()
	if f != nil {
		if f.tenant != "" {
			r.AddAttrs(slog.String("tenant", f.tenant))
		}
		if f.thread != "" {
			r.AddAttrs(slog.String("thread_id", f.thread))
		}
		if f.run != "" {
			r.AddAttrs(slog.String("run_id", f.run))
		}
	}
	if sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h ctxHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return ctxHandler{h.Handler.WithAttrs(as)}
}

func (h ctxHandler) WithGroup(name string) slog.Handler {
	return ctxHandler{h.Handler.WithGroup(name)}
}
