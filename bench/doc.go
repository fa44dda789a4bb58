// Package bench holds Trellis's engine benchmarks. It has no API; see
// README.md for the shapes measured and the latest figures.
package bench
