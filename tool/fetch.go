package tool

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"

	"github.com/trellis-agents/trellis/internal/netguard"
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
// directly, through the shared guarded dialer (internal/netguard), and
// keep no idle connections (a tool fetches rarely, and idle connections
// would outlive it).
func guardTransport(tr *http.Transport, allow bool) {
	tr.DisableKeepAlives = true
	netguard.Guard(tr, allow)
}

// refusal turns the dialer's refusal into the tool's own wording.
func refusal(err error) (*refusedError, bool) {
	r, ok := errors.AsType[*netguard.RefusedError](err)
	if !ok {
		return nil, false
	}
	return &refusedError{fmt.Sprintf("refused: the host's address %s is %s; this tool fetches only from public addresses "+
		"(FileReaderConfig.AllowPrivateNetworks allows others)", r.Addr, r.Kind)}, true
}

// nonPublic says what kind of non-public address ip is, or "".
func nonPublic(ip netip.Addr) string { return netguard.Kind(ip) }
