package evaluators

import "github.com/trellis-agents/trellis/eval"

// Names of the built-in evaluators, as criteria name them.
const (
	Exact              = "exact"
	Contains           = "contains"
	Regex              = "regex"
	JSONSchema         = "json_schema"
	JSONSubset         = "json_subset"
	ToolTrajectory     = "tool_trajectory"
	NodePath           = "node_path"
	ResponseMatch      = "response_match"
	LLMJudge           = "llm_judge"
	Interrupts         = "interrupts"
	RejectionsHonoured = "rejections_honoured"
	Budget             = "budget"
)

func init() {
	eval.Register(Exact, newExact)
	eval.Register(Contains, newContains)
	eval.Register(Regex, newRegex)
	eval.Register(JSONSchema, newJSONSchema)
	eval.Register(JSONSubset, newJSONSubset)
	eval.Register(ToolTrajectory, newToolTrajectory)
	eval.Register(NodePath, newNodePath)
	eval.Register(ResponseMatch, newResponseMatch)
	eval.Register(LLMJudge, newLLMJudge)
	eval.Register(Interrupts, newInterrupts)
	eval.Register(RejectionsHonoured, newRejections)
	eval.Register(Budget, newBudget)
}
