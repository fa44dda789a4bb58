// Package baseurl compares the base URLs the providers attach keys to.
package baseurl

import (
	"net/url"
	"strings"
)

// Same reports whether two base URLs name one server and path: scheme and
// host compared case-insensitively, a trailing slash ignored, and neither
// may carry user information or lack a host.
func Same(a, b string) bool {
	ua, err1 := url.Parse(strings.TrimSpace(a))
	ub, err2 := url.Parse(strings.TrimSpace(b))
	if err1 != nil || err2 != nil || ua.Host == "" || ub.Host == "" {
		return false
	}
	return strings.EqualFold(ua.Scheme, ub.Scheme) && strings.EqualFold(ua.Host, ub.Host) &&
		strings.TrimSuffix(ua.EscapedPath(), "/") == strings.TrimSuffix(ub.EscapedPath(), "/") &&
		ua.User == nil && ub.User == nil
}
