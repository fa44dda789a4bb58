package compare

import "testing"

// The three shapes. Each parent benchmark runs the same graph on every
// framework as a sub-benchmark, so one `go test -bench .` prints them side
// by side: BenchmarkChain10/trellis, BenchmarkChain10/eino, ... ADK's side
// is the module in adk/, under the same names (see README.md).
//
// Every sub-benchmark builds/compiles its graph once outside the timed loop,
// then invokes it once per iteration and checks the result.

func BenchmarkChain10(b *testing.B)  { benchChain(b, 10) }
func BenchmarkChain100(b *testing.B) { benchChain(b, 100) }

func benchChain(b *testing.B, n int) {
	b.Run("trellis", func(b *testing.B) { benchChainTrellis(b, n) })
	b.Run("eino", func(b *testing.B) { benchChainEino(b, n) })
	b.Run("langgraphgo", func(b *testing.B) { benchChainLangGraphGo(b, n) })
}

func BenchmarkFanout100(b *testing.B) {
	const n = fanoutWidth
	b.Run("trellis", func(b *testing.B) { benchFanoutTrellis(b, n) })
	b.Run("eino", func(b *testing.B) { benchFanoutEino(b, n) })
	b.Run("langgraphgo", func(b *testing.B) { benchFanoutLangGraphGo(b, n) })
}
