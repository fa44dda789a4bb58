package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/trellis-agents/trellis/apps"
	"github.com/trellis-agents/trellis/apps/catalog"
	"github.com/trellis-agents/trellis/apps/terminal"
	"github.com/trellis-agents/trellis/checkpoint"
	"github.com/trellis-agents/trellis/internal/netguard"
	"github.com/trellis-agents/trellis/llm"
	"github.com/trellis-agents/trellis/provider"
	"github.com/trellis-agents/trellis/server"
	"github.com/trellis-agents/trellis/server/config"
	"github.com/trellis-agents/trellis/server/db"
	"github.com/trellis-agents/trellis/store"
)

// DefaultConfigFile is read by serve when present and --config is not
// given.
const DefaultConfigFile = "trellis.yaml"

// serveFlags are serve's options; a flag given on the command line wins
// over the config file.
type serveFlags struct {
	addr, database, redis, config, model string
	logFormat, otlpEndpoint              string
	verbose, insecureNoAuth              bool
}

func serveCommand() *cobra.Command {
	var f serveFlags
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve the apps over HTTP with LangGraph's threads/runs API",
		Long: `Serve the apps, and a configurable tool-calling agent, as assistants over
HTTP, with the API of LangGraph's agent server (threads, runs, streamed
events), so @langchain/langgraph-sdk and chat front-ends built for LangGraph
work against it; the web page at / chats with them. trellis list describes
each assistant.

Assistants: ` + assistantNames() + `.

Data lives in ./.trellis/trellis.db (--database or --db; a postgres:// URL works too).
Models: --model, else models.default in the config file, else OPENAI_API_KEY
(openai:gpt-4o-mini) or ANTHROPIC_API_KEY (anthropic:claude-sonnet-4-5); with
none the apps answer from their scripted demo scenarios, and the server says so.
The config file (trellis.yaml in the current directory, or --config) declares
the address, database, named models and assistants; see docs/serve.md.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return terminal.Verbose(f.verbose, serve(c, f))
		},
	}
	fs := c.Flags()
	fs.StringVar(&f.addr, "addr", "", "host:port to listen on (default "+server.DefaultAddr+")")
	fs.StringVar(&f.database, "database", "", "SQLite file, sqlite://PATH or postgres:// URL (default "+server.DefaultDatabase+")")
	fs.StringVar(&f.database, "db", "", "alias of --database")
	fs.StringVar(&f.redis, "redis", "", "redis:// URL relaying live events and cancels between replicas on one PostgreSQL")
	fs.StringVar(&f.config, "config", "", "config file (default ./"+DefaultConfigFile+" when it exists)")
	fs.StringVar(&f.model, "model", "", `default model spec, e.g. "openai:gpt-4o-mini" (default: the config file's, else from OPENAI_API_KEY / ANTHROPIC_API_KEY, else scripted)`)
	fs.BoolVar(&f.verbose, "verbose", false, "log every request and show errors in full")
	fs.StringVar(&f.logFormat, "log-format", "", `log format: "text" or "json" (default: the config file's telemetry.log_format, else text)`)
	fs.StringVar(&f.otlpEndpoint, "otlp-endpoint", "", "export traces to this OTLP/HTTP collector, e.g. http://127.0.0.1:4318 (default: telemetry.otlp_endpoint, else OTEL_EXPORTER_OTLP_ENDPOINT, else none)")
	fs.BoolVar(&f.insecureNoAuth, "insecure-no-auth", false, "allow listening on a non-loopback address while no API key exists (anyone reaching it gets full access)")
	return c
}

// loadConfig reads --config, or trellis.yaml when it exists.
func loadConfig(path string) (*config.File, error) {
	if path != "" {
		return config.Load(path)
	}
	f, err := config.Load(DefaultConfigFile)
	if errors.Is(err, fs.ErrNotExist) {
		return &config.File{}, nil
	}
	return f, err
}

// defaultModel is the spec of assistants that name no model.
func defaultModel(flag string, file *config.File) string {
	switch {
	case flag != "":
		return flag
	case file.ModelSpec("") != "":
		return file.ModelSpec("")
	case os.Getenv("OPENAI_API_KEY") != "":
		return "openai:gpt-4o-mini"
	case os.Getenv("ANTHROPIC_API_KEY") != "":
		return "anthropic:claude-sonnet-4-5"
	}
	return ""
}

// serverConfig turns the flags and the file into the server's Config and
// the apps' Models.
func serverConfig(f serveFlags, file *config.File, log *slog.Logger) (server.Config, server.Models, error) {
	cfg := server.Config{Addr: file.Address, Database: file.Database, Redis: file.Redis, Logger: log, Version: version,
		ThreadSweepInterval: file.Threads.SweepInterval, ThreadSweepBatch: file.Threads.SweepBatch,
		OTLPEndpoint: file.Telemetry.OTLPEndpoint,
		Auth:         file.Auth, CORS: file.CORS, Limits: file.Limits, InsecureNoAuth: f.insecureNoAuth, WarnAuthOff: true,
		CronInterval: file.Crons.Interval, MCPStateless: file.MCP.Stateless, A2APublicCard: file.A2A.PublicCard,
		LeaseTTL: file.Leases.TTL, SweepInterval: file.Leases.SweepInterval, ShutdownGrace: file.ShutdownGrace,
		Webhooks: server.Webhooks{Secret: file.Webhooks.Secret, AllowPrivate: file.Webhooks.AllowPrivate,
			Attempts: file.Webhooks.Attempts, RetryBase: file.Webhooks.RetryBase}}
	if f.redis != "" {
		cfg.Redis = f.redis
	}
	if file.Threads.TTL > 0 {
		strategy := file.Threads.Strategy
		if strategy == "" {
			strategy = db.TTLDelete
		}
		cfg.ThreadTTL = &db.TTL{Duration: file.Threads.TTL, Strategy: strategy}
	}
	if f.addr != "" {
		cfg.Addr = f.addr
	}
	if f.otlpEndpoint != "" {
		cfg.OTLPEndpoint = f.otlpEndpoint
	}
	if m := file.Telemetry.Metrics; m != nil && !*m {
		cfg.NoMetrics = true
	}
	if f.database != "" {
		cfg.Database = f.database
	}
	allowPrivate := file.RequestModels.AllowPrivate
	models := server.Models{
		Default:      defaultModel(f.model, file),
		Named:        file.Specs(),
		Operator:     file.OperatorSpecs(),
		AllowRequest: file.RequestModels.Allow,
		Resolve: func(spec string) (llm.Model, error) {
			spec, opts := entryOptions(file, spec)
			return provider.Resolve(spec, opts...)
		},
		// A spec a request chose dials through the guarded dialer and
		// gets no key of a models entry (the providers send their
		// environment's key only to their own servers).
		ResolveRequest: func(spec string) (llm.Model, error) {
			return provider.Resolve(spec, provider.WithHTTPClient(netguard.Client(allowPrivate)))
		},
	}
	cfg.Scripted = models.Scripted()
	cfg.Titler = models.Titler()
	if ix := file.Store.Index; ix != nil {
		// The embedder is built here, like the models: only mains link
		// the providers' SDKs.
		spec, opts := entryOptions(file, file.ModelSpec(ix.Embed))
		e, err := provider.ResolveEmbedder(spec, ix.Dims, opts...)
		if err != nil {
			return cfg, models, fmt.Errorf("store.index.embed: %w", err)
		}
		cfg.StoreIndex = &store.IndexConfig{Embedder: e, Fields: ix.Fields}
	}
	for i, a := range file.Assistants {
		conf := a.Config
		if a.Model != "" {
			conf = withConfigurable(conf, "model", a.Model)
		}
		if a.System != "" {
			conf = withConfigurable(conf, "system_prompt", a.System)
		}
		if len(a.Tools) > 0 {
			conf = withConfigurable(conf, "tools", a.Tools)
		}
		if a.History != nil {
			conf = withConfigurable(conf, "history", a.History)
		}
		if len(a.Middleware) > 0 {
			conf = withConfigurable(conf, "middleware", a.Middleware)
		}
		var errs []error
		enc := func(field string, v map[string]any) json.RawMessage {
			if v == nil {
				return nil
			}
			b, err := json.Marshal(v)
			if err != nil {
				errs = append(errs, fmt.Errorf("assistants[%d].%s: %w", i, field, err))
			}
			return b
		}
		da := db.Assistant{ID: a.AssistantID(), GraphID: a.Graph, Name: a.Name, Description: a.Description,
			Config: enc("config", conf), Context: enc("context", a.Context)}
		if a.Metadata != nil {
			da.Metadata = db.Metadata(a.Metadata)
		}
		if len(errs) > 0 {
			return cfg, models, errors.Join(errs...)
		}
		cfg.Assistants = append(cfg.Assistants, da)
		for j, o := range a.OnlineEvaluators {
			c, err := o.EvalCriterion() // checked at load: an error here is a bug
			if err != nil {
				return cfg, models, fmt.Errorf("assistants[%d].online_evaluators[%d].criterion: %w", i, j, err)
			}
			if cfg.OnlineEvaluators == nil {
				cfg.OnlineEvaluators = map[string][]server.OnlineEvaluator{}
			}
			cfg.OnlineEvaluators[da.ID] = append(cfg.OnlineEvaluators[da.ID], server.OnlineEvaluator{Key: o.FeedbackKey(), Criterion: c, Sample: o.Sample})
		}
		if r := a.Retention; r != nil {
			if cfg.AssistantRetention == nil {
				cfg.AssistantRetention = map[string]checkpoint.Retention{}
			}
			cfg.AssistantRetention[da.ID] = retention(r)
		}
	}
	if r := file.Threads.Retention; r != nil {
		cfg.Retention = retention(r)
	}
	return cfg, models, nil
}

// retention converts trellis.yaml's retention policy to the checkpoint
// package's.
func retention(r *config.Retention) checkpoint.Retention {
	return checkpoint.Retention{KeepLast: r.KeepLast, ForksOlderThan: r.ForksOlderThan}
}

// entryOptions returns the spec to resolve for spec and the options of
// the models entry in the long form it comes from (its base URL, and the
// key of its api_key_env, which goes to that base URL only); a spec of no
// long entry is returned as it is.
func entryOptions(file *config.File, spec string) (string, []provider.Option) {
	for _, name := range slices.Sorted(maps.Keys(file.Models)) {
		e := file.Models[name]
		if !e.Long() || e.SpecString() != spec {
			continue
		}
		var opts []provider.Option
		if e.APIKeyEnv != "" {
			opts = append(opts, provider.WithAPIKey(os.Getenv(e.APIKeyEnv)))
		}
		if e.Provider == "openai-compatible" {
			return spec, opts
		}
		if e.BaseURL != "" {
			opts = append(opts, provider.WithBaseURL(e.BaseURL))
		}
		return e.Provider + ":" + e.Model, opts
	}
	return spec, nil
}

// withConfigurable returns conf with configurable.KEY set, copying what
// it changes.
func withConfigurable(conf map[string]any, key string, value any) map[string]any {
	out := map[string]any{}
	for k, v := range conf {
		out[k] = v
	}
	c := map[string]any{}
	if old, ok := out["configurable"].(map[string]any); ok {
		for k, v := range old {
			c[k] = v
		}
	}
	c[key] = value
	out["configurable"] = c
	return out
}

func serve(c *cobra.Command, f serveFlags) error {
	file, err := loadConfig(f.config)
	if err != nil {
		return err
	}
	level := slog.LevelInfo
	if f.verbose {
		level = slog.LevelDebug
	}
	out := &lockedWriter{w: c.ErrOrStderr()}
	h, err := logHandler(f.logFormat, file.Telemetry.LogFormat, out, level)
	if err != nil {
		return err
	}
	// Graphs and tools log through the default logger: their lines get
	// the run's IDs too.
	log := slog.New(server.ContextLogHandler(h))
	prev := slog.Default()
	slog.SetDefault(log)
	defer slog.SetDefault(prev)
	cfg, models, err := serverConfig(f, file, log)
	if err != nil {
		return err
	}
	srv, err := server.New(c.Context(), cfg)
	if err != nil {
		return err
	}
	models.AppSettings, err = appSettings(file.Apps)
	if err != nil {
		return errors.Join(err, srv.Close())
	}
	if err := srv.RegisterApps(catalog.All(), models); err != nil {
		return errors.Join(err, srv.Close())
	}
	if err := srv.RegisterAgentWithRemotes(c.Context(), models, file.MCPServers, file.RemoteAgents); err != nil {
		return errors.Join(err, srv.Close())
	}
	// Once listening, after every other start-up line: the scripted
	// banner, then the URL to open, last, where a newcomer looks.
	stopBanner := make(chan struct{})
	defer close(stopBanner)
	go func() {
		select {
		case <-srv.Ready():
			if models.Scripted() {
				banner(out)
			}
			openLine(out, log, h, srv.Addr())
		case <-stopBanner:
		}
	}()
	return srv.Run(c.Context())
}

// openLine says which URL to open in a browser: set apart by blank lines
// in the text log, a record of its own in a JSON log (whose every line
// stays JSON). An unspecified host (0.0.0.0, ::) becomes loopback's, which
// a browser on this machine can open.
func openLine(out io.Writer, log *slog.Logger, h slog.Handler, addr string) {
	if host, port, err := net.SplitHostPort(addr); err == nil {
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			host = "127.0.0.1"
			if ip != nil && ip.To4() == nil {
				host = "::1"
			}
			addr = net.JoinHostPort(host, port)
		}
	}
	url := "http://" + addr + "/"
	if _, isJSON := h.(*slog.JSONHandler); isJSON {
		log.Info("open the web page in a browser", "url", url)
		return
	}
	fmt.Fprintf(out, "\n    Open %s in a browser.\n\n", url)
}

// logHandler is the log's handler in the format the flag, else the
// file, names (text by default).
func logHandler(flag, file string, out io.Writer, level slog.Level) (slog.Handler, error) {
	format := flag
	if format == "" {
		format = file
	}
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case "", "text":
		return slog.NewTextHandler(out, opts), nil
	case "json":
		return slog.NewJSONHandler(out, opts), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", format)
}

// banner says loudly that no real model answers.
func banner(w io.Writer) {
	line := strings.Repeat("!", 72)
	fmt.Fprintf(w, "%s\n!! MODELS ARE SCRIPTED: the assistants play canned demo scenarios.\n!! For real answers pass --model, set OPENAI_API_KEY or ANTHROPIC_API_KEY,\n!! or name models.default in trellis.yaml. GET /info says scripted_models.\n%s\n", line, line)
}

// lockedWriter serializes the log's and the banner's writes.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// appSettings encodes trellis.yaml's apps section for the apps, refusing
// a section that names no bundled app.
func appSettings(sections map[string]map[string]any) (map[string]json.RawMessage, error) {
	if len(sections) == 0 {
		return nil, nil
	}
	known := map[string]apps.Entry{}
	var names []string
	for _, e := range catalog.All() {
		known[e.Name] = e
		names = append(names, e.Name)
	}
	out := map[string]json.RawMessage{}
	for name, v := range sections {
		e, ok := known[name]
		if !ok {
			return nil, fmt.Errorf("config: apps.%s: there is no app %q; the apps are %s", name, name, strings.Join(names, ", "))
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("config: apps.%s: %w", name, err)
		}
		if e.Check != nil {
			if err := e.Check(b); err != nil {
				return nil, fmt.Errorf("config: apps.%s: %w", name, err)
			}
		}
		out[name] = b
	}
	return out, nil
}
