// Package eval tells a team whether its agent does the right thing: cases
// and datasets, evaluators that score what a run did, and a runner that
// drives an agent through the cases and compares experiments.
//
// An experiment is runs. Each case × repetition is an ordinary run on a
// fresh thread of a [Target] (a compiled graph in-process, or an assistant
// on a Trellis server), so everything that works on a thread — timeline,
// history, replay, telemetry — works on an evaluated one. The runner only
// starts runs, answers their interrupts from the case ([Answer]), sends the
// case's further turns, and scores the finished thread.
//
// Evaluators see the thread, not a transcript string: a [Thread] carries the
// final state, the messages, the tool trajectory with arguments and results,
// the node path, the interrupts with the answers they got, and the usage.
// One [Evaluator] interface; the built-in evaluators are ordinary
// implementations, chosen per dataset or per case by [Criterion].
//
// Results are data: a score, pass/fail and an explanation per case,
// repetition and criterion, reproducible from the stored threads. Reports
// (tables, JUnit, JSON, HTML) are views of them.
//
// The package does not import the server; eval/adk imports and exports
// Google ADK eval sets.
package eval
