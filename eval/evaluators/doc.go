// Package evaluators holds Trellis's built-in evaluators. Importing it
// registers them with eval.Register under stable snake_case names:
//
//	import _ "github.com/trellis-agents/trellis/eval/evaluators"
//
// Final output: exact, contains, regex, json_schema, json_subset.
// Trajectory: tool_trajectory, node_path. Reference text: response_match
// (ROUGE-1 as Google ADK's response_match_score computes it). Judges:
// llm_judge, and Pairwise for experiment comparisons. Behaviour:
// interrupts, rejections_honoured, budget.
//
// Each evaluator's params are a JSON object; unknown fields are an error,
// so a misspelt option fails when the dataset is loaded, not silently when
// it is scored. docs/eval.md ("Evaluators") gives each one's exact
// semantics.
//
// Judges are models the operator declared: the caller resolves a judge's
// model name to an llm.Model with a JudgeResolver carried by the context
// (WithJudges), so this package never imports the server.
package evaluators
