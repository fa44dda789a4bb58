package wire

// OkQuery is the query of GET /ok.
type OkQuery struct {
	// CheckDB also checks the database ("1"); a failure is a 503.
	CheckDB bool `json:"check_db,omitempty"`
}

// Ok is the answer of GET /ok.
type Ok struct {
	Ok bool `json:"ok"`
}

// Info is the answer of GET /info: what this server is and supports.
type Info struct {
	// Version is Trellis's version.
	Version string `json:"version"`
	// Flags say which optional features the server has, by LangGraph's
	// names (assistants, crons, langsmith, ...) and Trellis's own.
	Flags InfoFlags `json:"flags"`
	// ScriptedModels is set when no model is configured and the assistants
	// answer from the scripted demo models (a Trellis extension).
	ScriptedModels bool `json:"scripted_models"`
}

// InfoFlags are the feature flags of Info.
type InfoFlags struct {
	Assistants bool `json:"assistants"`
	Crons      bool `json:"crons"`
	Langsmith  bool `json:"langsmith"`
	// StreamNamespaces: the stream routes honour the namespace parameter.
	StreamNamespaces bool `json:"stream_namespaces"`
	// StrictResume: a resume with nothing to answer is refused.
	StrictResume bool `json:"strict_resume"`
}
