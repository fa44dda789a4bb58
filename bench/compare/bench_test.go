package compare

import "testing"

// The three shapes. Each parent benchmark runs the same graph on every
// framework as a sub-benchmark, so one `go test -bench .` prints them side
// by side: BenchmarkChain10/trellis, BenchmarkChain10/eino, ...
//
// Every sub-benchmark builds/compiles its graph once outside the timed loop,
// then invokes it once per iteration and checks the result.

func BenchmarkChain10(b *testing.B)  { benchChain(b, 10) }
func BenchmarkChain100(b *testing.B) { benchChain(b, 100) }

func benchChain(b *testing.B, n int) {
	b.Run("trellis", func(b *testing.B) { benchChainTrellis(b, n) })
	b.Run("eino", func(b *testing.B) { benchChainEino(b, n) })
	b.Run("adk", func(b *testing.B) { benchChainADK(b, n) })
	b.Run("adk-agents", func(b *testing.B) { benchChainADKAgents(b, n) })
	b.Run("langgraphgo", func(b *testing.B) { benchChainLangGraphGo(b, n) })
}

func BenchmarkFanout100(b *testing.B) {
	const n = fanoutWidth
	b.Run("trellis", func(b *testing.B) { benchFanoutTrellis(b, n) })
	b.Run("eino", func(b *testing.B) { benchFanoutEino(b, n) })
	b.Run("adk", func(b *testing.B) { benchFanoutADK(b, n) })
	b.Run("adk-agents", func(b *testing.B) { benchFanoutADKAgents(b, n) })
	b.Run("langgraphgo", func(b *testing.B) { benchFanoutLangGraphGo(b, n) })
}
