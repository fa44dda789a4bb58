package adk

import "testing"

// The same three shapes as ../bench_test.go, ADK's two sub-benchmarks
// under the same names (BenchmarkChain10/adk, BenchmarkChain10/adk-agents,
// ...), so the two modules' outputs read as one table.

func BenchmarkChain10(b *testing.B)  { benchChain(b, 10) }
func BenchmarkChain100(b *testing.B) { benchChain(b, 100) }

func benchChain(b *testing.B, n int) {
	b.Run("adk", func(b *testing.B) { benchChainADK(b, n) })
	b.Run("adk-agents", func(b *testing.B) { benchChainADKAgents(b, n) })
}

func BenchmarkFanout100(b *testing.B) {
	const n = fanoutWidth
	b.Run("adk", func(b *testing.B) { benchFanoutADK(b, n) })
	b.Run("adk-agents", func(b *testing.B) { benchFanoutADKAgents(b, n) })
}
