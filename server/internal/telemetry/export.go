package telemetry

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
)

// ExportConfig says where spans are exported.
type ExportConfig struct {
	// Endpoint is the OTLP/HTTP collector's base URL
	// (http://collector:4318); spans go to its /v1/traces. "" uses the
	// standard environment variables (OTEL_EXPORTER_OTLP_ENDPOINT,
	// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, and their _HEADERS etc.).
	Endpoint string
	// ServiceName is the service.name resource attribute ("trellis" when
	// ""; OTEL_SERVICE_NAME wins, as the SDK reads it).
	ServiceName string
	// Version is the service.version resource attribute.
	Version string
}

// Exporting reports whether spans are to be exported: an endpoint is
// configured or set in the environment.
func Exporting(endpoint string) bool {
	return endpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// CheckEndpoint reports whether endpoint is an http(s) URL.
func CheckEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http:// or https:// URL of an OTLP/HTTP collector (e.g. http://127.0.0.1:4318)", endpoint)
	}
	return nil
}

// NewOTLP returns a tracer provider that batches spans to an OTLP/HTTP
// collector. Shut it down to flush what it holds. Sampling follows the
// SDK's environment variables (OTEL_TRACES_SAMPLER; by default every trace
// the caller did not decline).
func NewOTLP(ctx context.Context, cfg ExportConfig) (*sdktrace.TracerProvider, error) {
	var opts []otlptracehttp.Option
	if cfg.Endpoint != "" {
		if err := CheckEndpoint(cfg.Endpoint); err != nil {
			return nil, fmt.Errorf("telemetry: %w", err)
		}
		opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimRight(cfg.Endpoint, "/")+"/v1/traces"))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("telemetry: the OTLP exporter: %w", err)
	}
	name := cfg.ServiceName
	if name == "" {
		name = "trellis"
	}
	res, err := resource.Merge(resource.Default(), resource.NewWithAttributes(semconv.SchemaURL,
		semconv.ServiceName(name), semconv.ServiceVersion(cfg.Version)))
	if err != nil {
		// Only a schema conflict between the SDK's defaults and ours; the
		// defaults still describe the process.
		res = resource.Default()
	}
	if env, err := resource.New(ctx, resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}
