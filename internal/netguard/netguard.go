// Package netguard is the one guarded dialer of Trellis: every outbound
// connection whose target a request can choose (webhook URLs, model
// servers a request named, URLs a fetch tool is given) dials through it.
// It refuses loopback, private, link-local, unspecified, multicast and the
// other non-public address ranges unless the caller allows them, and it
// checks the address actually dialled (after name resolution), so a DNS
// answer that changes between a check and the connection cannot reach an
// internal service.
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// ErrRefused is wrapped by every refusal (a *RefusedError).
var ErrRefused = errors.New("netguard: the address is not public")

// RefusedError is a connection refused because its address is not
// public.
type RefusedError struct {
	// Addr is the refused address.
	Addr netip.Addr
	// Kind says what it is ("a loopback address", "a private address"...).
	Kind string
	// Host is the host name the address came from ("" when unknown).
	Host string
}

func (e *RefusedError) Error() string {
	if e.Host != "" && e.Host != e.Addr.String() {
		return fmt.Sprintf("netguard: %s is %s (%s); connections to non-public addresses are refused", e.Host, e.Addr, e.Kind)
	}
	return fmt.Sprintf("netguard: %s is %s; connections to non-public addresses are refused", e.Addr, e.Kind)
}

// Unwrap makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Unwrap() error { return ErrRefused }

// Address ranges that are not public, beyond those netip classifies.
var otherRanges = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "a \"this network\" address"},
	{netip.MustParsePrefix("100.64.0.0/10"), "a shared (carrier-grade NAT) address"},
	{netip.MustParsePrefix("192.0.0.0/24"), "a reserved address"},
	{netip.MustParsePrefix("198.18.0.0/15"), "a benchmarking address"},
	{netip.MustParsePrefix("240.0.0.0/4"), "a reserved address"},
}

var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// Kind says what kind of non-public address ip is ("a loopback address",
// "a private address", ...), or "" for a public one. IPv4-mapped and
// NAT64 addresses are judged by the IPv4 address they carry.
func Kind(ip netip.Addr) string {
	ip = ip.Unmap()
	if nat64.Contains(ip) {
		b := ip.As16()
		ip = netip.AddrFrom4([4]byte(b[12:]))
	}
	switch {
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsPrivate():
		return "a private address"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "a link-local address"
	case ip.IsUnspecified():
		return "an unspecified address"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "a multicast address"
	}
	for _, r := range otherRanges {
		if r.prefix.Contains(ip) {
			return r.kind
		}
	}
	return ""
}

// Control is a net.Dialer Control function that refuses non-public
// addresses; it runs after name resolution, for the very address dialled.
func Control(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("netguard: dial %s: %w", address, err)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("netguard: cannot check the address %q: %w", host, ErrRefused)
	}
	if k := Kind(ip); k != "" {
		return &RefusedError{Addr: ip, Kind: k}
	}
	return nil
}

// Guard makes tr dial only public addresses (unless allowPrivate), and
// directly: a proxy from the environment is dropped, since the proxy's
// address is not the target's.
func Guard(tr *http.Transport, allowPrivate bool) {
	if allowPrivate {
		return
	}
	tr.Proxy = nil
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: Control}
	tr.DialContext = d.DialContext
	tr.DialTLSContext = nil
}

// Transport returns a clone of http.DefaultTransport guarded by Guard.
func Transport(allowPrivate bool) *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	Guard(tr, allowPrivate)
	return tr
}

// Client returns an HTTP client over Transport(allowPrivate) that follows
// no redirect (a redirect is the answer: following it would let the
// target point the request elsewhere).
func Client(allowPrivate bool) *http.Client {
	return &http.Client{Transport: Transport(allowPrivate), CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

// CheckURL refuses a URL that is not absolute http(s), or whose host does
// not resolve or resolves to a non-public address (unless allowPrivate).
// It is the early check that gives a clear error when a URL is accepted;
// the dialer checks again on every connection.
func CheckURL(ctx context.Context, raw string, allowPrivate bool) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Errorf("%q is not an absolute http or https URL", raw)
	}
	if allowPrivate {
		return nil
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if k := Kind(ip); k != "" {
			return &RefusedError{Addr: ip, Kind: k}
		}
		return nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("host %q does not resolve: %w", host, err)
	}
	for _, a := range addrs {
		if k := Kind(a); k != "" {
			return &RefusedError{Addr: a, Kind: k, Host: host}
		}
	}
	return nil
}
