package telemetry

import (
	"context"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/trellis-agents/trellis/graph"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/server/runs"
)

// Attribute keys of Trellis' own span attributes.
const (
	AttrTenant    = attribute.Key("trellis.tenant")
	AttrThreadID  = attribute.Key("trellis.thread.id")
	AttrRunID     = attribute.Key("trellis.run.id")
	AttrAssistant = attribute.Key("trellis.assistant.id")
	AttrGraph     = attribute.Key("trellis.graph.id")
	AttrStatus    = attribute.Key("trellis.run.status")
	AttrTakeover  = attribute.Key("trellis.run.takeover")
	AttrStep      = attribute.Key("trellis.step")
	AttrNamespace = attribute.Key("trellis.namespace")
	AttrTasks     = attribute.Key("trellis.step.tasks")
	AttrNode      = attribute.Key("trellis.node")
	AttrTaskID    = attribute.Key("trellis.task.id")
	AttrAttempts  = attribute.Key("trellis.task.attempts")
	AttrCached    = attribute.Key("trellis.task.cached")
)

// Hooks returns the run service's hooks: trace context kept with each new
// run, a span and metrics for each run executed, and the graph observer.
func (t *Telemetry) Hooks() runs.Hooks {
	h := runs.Hooks{Start: t.runStart, Graph: t.graphOptions}
	if t.tracer != nil {
		h.TraceContext = t.TraceParent
	}
	return h
}

// TraceParent is the W3C traceparent of ctx's span ("" when it has none).
func (t *Telemetry) TraceParent(ctx context.Context) string {
	c := propagation.MapCarrier{}
	t.prop.Inject(ctx, c)
	return c["traceparent"]
}

type takeoverKey struct{}

// MarkTakeover marks ctx as the context of a run taken over after its
// worker's lease expired: the run's span says so and the takeover is
// counted.
func (t *Telemetry) MarkTakeover(ctx context.Context) context.Context {
	t.m.takeovers.Inc()
	return context.WithValue(ctx, takeoverKey{}, true)
}

// runState is what the observer of a run's graph needs from its start.
type runState struct {
	graph string
	span  trace.Span // nil without tracing
}

type runStateKey struct{}

// runStart opens the run's span, parented to the request that created it
// (its stored traceparent), and returns the end that records the run's
// status, duration and span.
func (t *Telemetry) runStart(ctx context.Context, r runs.RunInfo) (context.Context, func(db.RunStatus, error)) {
	start := time.Now()
	takeover, _ := ctx.Value(takeoverKey{}).(bool)
	if !takeover {
		from := r.CreatedAt
		if r.NotBefore.After(from) {
			from = r.NotBefore
		}
		if !from.IsZero() && start.After(from) {
			t.m.waitSecs.Observe(start.Sub(from).Seconds())
		}
	}
	st := &runState{}
	ctx = withLogFields(ctx, &logFields{tenant: r.Tenant, thread: r.ThreadID, run: r.RunID})
	if t.tracer != nil {
		if r.TraceContext != "" {
			ctx = t.prop.Extract(ctx, propagation.MapCarrier{"traceparent": r.TraceContext})
		}
		ctx, st.span = t.tracer.Start(ctx, "invoke_agent", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
			semconv.GenAIOperationNameInvokeAgent,
			AttrTenant.String(r.Tenant), AttrThreadID.String(r.ThreadID), AttrRunID.String(r.RunID),
			AttrAssistant.String(r.AssistantID), AttrTakeover.Bool(takeover),
		))
	}
	ctx = context.WithValue(ctx, runStateKey{}, st)
	return ctx, func(status db.RunStatus, err error) {
		if status != "" {
			t.m.runs.WithLabelValues(st.graph, string(status)).Inc()
			t.m.runSeconds.WithLabelValues(st.graph, string(status)).Observe(time.Since(start).Seconds())
		}
		if st.span == nil {
			return
		}
		if status == "" {
			status = "left"
		}
		st.span.SetAttributes(AttrStatus.String(string(status)))
		if err != nil {
			st.span.SetStatus(codes.Error, err.Error())
		}
		st.span.End()
	}
}

// graphOptions names the run's graph (on its span and metrics) and
// returns the observer of its steps and calls.
func (t *Telemetry) graphOptions(ctx context.Context, graphID string) []graph.RunOption {
	st, _ := ctx.Value(runStateKey{}).(*runState)
	if st == nil {
		st = &runState{}
	}
	st.graph = graphID
	if st.span != nil {
		st.span.SetName("invoke_agent " + graphID)
		st.span.SetAttributes(AttrGraph.String(graphID), semconv.GenAIAgentName(graphID))
	}
	return []graph.RunOption{graph.WithObserver(&observer{t: t, graph: graphID})}
}

// observer turns a run's steps, tasks and calls into spans and metrics.
type observer struct {
	t     *Telemetry
	graph string
}

func (o *observer) Start(ctx context.Context, op graph.Op) (context.Context, func(graph.OpEnd)) {
	tr := o.t.tracer
	switch op.Kind {
	case graph.OpTask:
		start := time.Now()
		var span trace.Span
		if tr != nil {
			ctx, span = tr.Start(ctx, "node "+op.Node, trace.WithAttributes(
				AttrNode.String(op.Node), AttrTaskID.String(op.TaskID), AttrStep.Int(op.Step), AttrNamespace.String(op.Namespace)))
		}
		return ctx, func(e graph.OpEnd) {
			if op.Namespace == "" {
				o.t.m.nodeSecs.WithLabelValues(o.graph, op.Node).Observe(time.Since(start).Seconds())
			}
			if span != nil {
				span.SetAttributes(AttrAttempts.Int(e.Task.Attempt), AttrCached.Bool(e.Task.Cached))
				endSpan(span, e.Err)
			}
		}
	case graph.OpModelCall:
		var span trace.Span
		if tr != nil {
			ctx, span = tr.Start(ctx, "chat "+op.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
				semconv.GenAIOperationNameChat, semconv.GenAIRequestModel(op.Model), AttrNode.String(op.Node)))
		}
		return ctx, func(e graph.OpEnd) {
			if e.Usage.InputTokens > 0 {
				o.t.m.tokens.WithLabelValues(op.Model, "input").Add(float64(e.Usage.InputTokens))
			}
			if e.Usage.OutputTokens > 0 {
				o.t.m.tokens.WithLabelValues(op.Model, "output").Add(float64(e.Usage.OutputTokens))
			}
			if span == nil {
				return
			}
			if e.Err == nil {
				span.SetAttributes(
					semconv.GenAIUsageInputTokens(int(e.Usage.InputTokens)),
					semconv.GenAIUsageOutputTokens(int(e.Usage.OutputTokens)),
				)
				if e.FinishReason != "" {
					span.SetAttributes(semconv.GenAIResponseFinishReasons(e.FinishReason))
				}
				if e.ResponseModel != "" {
					span.SetAttributes(semconv.GenAIResponseModel(e.ResponseModel))
				}
			}
			endSpan(span, e.Err)
		}
	}
	if tr == nil {
		return ctx, noEnd
	}
	var span trace.Span
	switch op.Kind {
	case graph.OpStep:
		ctx, span = tr.Start(ctx, "step "+strconv.Itoa(op.Step), trace.WithAttributes(
			AttrStep.Int(op.Step), AttrNamespace.String(op.Namespace), AttrTasks.Int(op.Tasks)))
	case graph.OpToolCall:
		ctx, span = tr.Start(ctx, "execute_tool "+op.Tool, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
			semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(op.Tool), semconv.GenAIToolCallID(op.CallID), AttrNode.String(op.Node)))
	default:
		return ctx, noEnd
	}
	return ctx, func(e graph.OpEnd) { endSpan(span, e.Err) }
}

func noEnd(graph.OpEnd) {}

func endSpan(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
