package deep

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// globMatcher matches absolute paths against a glob whose elements are
// path.Match patterns, or "**" for any number of elements.
type globMatcher struct {
	pattern string
	elems   []string
}

const maxGlobElems = 64

// compileGlob checks pattern; a relative one is taken from dir.
func compileGlob(pattern, dir string) (*globMatcher, error) {
	switch {
	case pattern == "":
		return nil, errors.New("the pattern is empty; give a glob such as /**/*.md")
	case len(pattern) > maxPatternBytes:
		return nil, fmt.Errorf("the pattern is longer than %d bytes", maxPatternBytes)
	}
	if !strings.HasPrefix(pattern, "/") {
		pattern = dir + "/" + pattern
	}
	elems := strings.Split(pattern[1:], "/")
	if len(elems) > maxGlobElems {
		return nil, fmt.Errorf("the pattern has more than %d elements", maxGlobElems)
	}
	for _, e := range elems {
		if e == "" || e == "." || e == ".." {
			return nil, fmt.Errorf("the pattern %q has an empty, . or .. element", pattern)
		}
		if e == "**" {
			continue
		}
		if _, err := path.Match(e, ""); err != nil {
			return nil, fmt.Errorf("the pattern %q is malformed: %v", pattern, err)
		}
	}
	return &globMatcher{pattern: pattern, elems: elems}, nil
}

// root is the longest directory the pattern is fixed to, for walk.
func (g *globMatcher) root() string {
	var fixed []string
	for _, e := range g.elems[:len(g.elems)-1] {
		if e == "**" || strings.ContainsAny(e, `*?[\`) {
			break
		}
		fixed = append(fixed, e)
	}
	if len(fixed) == 0 {
		return ""
	}
	return "/" + strings.Join(fixed, "/")
}

// match reports whether the absolute path p matches, in time
// proportional to the pattern's and the path's element counts.
func (g *globMatcher) match(p string) bool {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	// ok[j]: the pattern's elements so far match parts[:j].
	ok := make([]bool, len(parts)+1)
	ok[0] = true
	for _, e := range g.elems {
		next := make([]bool, len(parts)+1)
		if e == "**" {
			reach := false
			for j := range ok {
				reach = reach || ok[j]
				next[j] = reach
			}
		} else {
			for j := 1; j <= len(parts); j++ {
				if ok[j-1] {
					m, _ := path.Match(e, parts[j-1])
					next[j] = m
				}
			}
		}
		ok = next
	}
	return ok[len(parts)]
}
