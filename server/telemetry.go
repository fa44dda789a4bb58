package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/trellis-agents/trellis/server/api/wire"
	"github.com/trellis-agents/trellis/server/internal/limit"
	"github.com/trellis-agents/trellis/server/internal/telemetry"
)

// ContextLogHandler wraps h so that records logged with a context carry
// the tenant, thread_id, run_id and trace_id of the request or run the
// context belongs to. New wraps Config.Logger's handler with it; wrap the
// default logger's too (slog.SetDefault) so that graphs' own log lines
// carry them.
func ContextLogHandler(h slog.Handler) slog.Handler { return telemetry.LogHandler(h) }

// openTelemetry builds the server's tracer (the configured provider, an
// OTLP exporter when one is configured, else none) and metrics.
func (s *Server) openTelemetry(ctx context.Context) error {
	tp := s.cfg.TracerProvider
	if tp == nil && telemetry.Exporting(s.cfg.OTLPEndpoint) {
		sdk, err := telemetry.NewOTLP(ctx, telemetry.ExportConfig{Endpoint: s.cfg.OTLPEndpoint, Version: s.cfg.Version})
		if err != nil {
			return err
		}
		tp = sdk
		s.OnClose(func() error {
			// Flush what the batcher holds; a collector that is down must
			// not hold up the shutdown for long.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return sdk.Shutdown(ctx)
		})
		s.log.Info("exporting traces over OTLP/HTTP", "endpoint", s.cfg.OTLPEndpoint)
	}
	var limits []string
	for _, l := range limit.Limits {
		limits = append(limits, string(l))
	}
	s.tel = telemetry.New(telemetry.Config{TracerProvider: tp, QueueDepth: s.st.queueDepth, Limits: limits})
	return nil
}

// queueDepth counts the runs waiting to start across every tenant and
// worker: pending, with their start time reached.
func (st *storage) queueDepth(ctx context.Context) (int, error) {
	var n int
	switch {
	case st.pool != nil:
		err := st.pool.QueryRow(ctx, `SELECT count(*) FROM trellis_runs WHERE status = 'pending' AND (not_before IS NULL OR not_before <= now())`).Scan(&n)
		return n, err
	case st.read != nil:
		err := st.read.QueryRowContext(ctx, `SELECT count(*) FROM trellis_runs WHERE status = 'pending' AND (not_before IS NULL OR not_before <= ?)`, time.Now().UnixMicro()).Scan(&n)
		return n, err
	}
	return 0, errors.New("no database to count the queue in")
}

// refused counts a request refused over a limit in the metrics.
func (s *Server) refused(l limit.Limit) { s.tel.Refused(string(l)) }

// metricsRoute serves /metrics; other methods than GET and HEAD get 405.
func (s *Server) metricsRoute() http.Handler {
	return s.tel.MetricsHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", "GET, HEAD")
		wire.NewProblem(http.StatusMethodNotAllowed, r.Method+" is not allowed on /metrics; use GET").Write(w, r)
	}))
}
