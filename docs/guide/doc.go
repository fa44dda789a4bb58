// Package guide holds the runnable examples of the library guide, the
// Markdown pages in this directory (start with README.md). Each page's
// example is an Example function in this package's tests, so `go test`
// compiles and runs every one and checks its printed output; the pages
// quote them. The package itself exports nothing.
package guide
