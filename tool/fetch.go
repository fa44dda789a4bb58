package tool

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// refusedError is a fetch the file tool would not make: an address that is
// not public, a redirect too many or to another scheme.
type refusedError struct{ msg string }

func (e *refusedError) Error() string { return e.msg }

// fetchClient returns the client the file tool fetches with: cfg.Client
// (or a default) with a transport whose dials are checked unless
// AllowPrivateNetworks, and the tool's redirect policy.
func fetchClient(cfg FileReaderConfig) (*http.Client, error) {
	var c http.Client
	if cfg.Client != nil {
		c = *cfg.Client
	}
	switch rt := c.Transport.(type) {
	case nil:
		tr := http.DefaultTransport.(*http.Transport).Clone()
		guardTransport(tr, cfg.AllowPrivateNetworks)
		c.Transport = tr
	case *http.Transport:
		tr := rt.Clone()
		guardTransport(tr, cfg.AllowPrivateNetworks)
		c.Transport = tr
	default:
		if !cfg.AllowPrivateNetworks {
			return nil, fmt.Errorf("file reader: the Client's Transport is a %T, whose connections the tool cannot check; "+
				"use an *http.Transport, or set AllowPrivateNetworks to use it as it is", rt)
		}
	}
	maxRedirects := cfg.MaxRedirects
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > maxRedirects {
			return &refusedError{fmt.Sprintf("refused: it redirects more than %d times (FileReaderConfig.MaxRedirects)", maxRedirects)}
		}
		if s := req.URL.Scheme; s != "http" && s != "https" {
			return &refusedError{fmt.Sprintf("refused: it redirects to a %s URL; only http and https are fetched", s)}
		}
		return nil
	}
	return &c, nil
}

// guardTransport makes tr dial only public addresses (unless allow),
// directly, and keep no idle connections (a tool fetches rarely, and idle
// connections would outlive it).
func guardTransport(tr *http.Transport, allow bool) {
	tr.DisableKeepAlives = true
	if allow {
		return
	}
	tr.Proxy = nil
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: checkDial}
	tr.DialContext = d.DialContext
	tr.DialTLSContext = nil
}

// checkDial refuses a connection to an address that is not public. It runs
// after name resolution, for the very address dialled.
func checkDial(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return &refusedError{fmt.Sprintf("refused: cannot check the address %q", host)}
	}
	if kind := nonPublic(ip); kind != "" {
		return &refusedError{fmt.Sprintf("refused: the host's address %s is %s; this tool fetches only from public addresses "+
			"(FileReaderConfig.AllowPrivateNetworks allows others)", ip, kind)}
	}
	return nil
}

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

// nonPublic says what kind of non-public address ip is, or "".
func nonPublic(ip netip.Addr) string {
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
