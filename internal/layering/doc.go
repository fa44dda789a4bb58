// Package layering holds only tests: they enforce the repository's
// dependency rules with go list.
package layering
