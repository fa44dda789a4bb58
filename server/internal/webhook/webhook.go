// Package webhook sends the service's webhooks: a POST of a JSON body,
// signed with HMAC-SHA256 when a secret is set, to a URL whose host must
// not resolve to a loopback, private, link-local or unspecified address
// unless private addresses are allowed. The address is checked when the
// URL is accepted and again, by the dialer, for every connection, so a
// DNS answer that changes in between cannot reach an internal service.
package webhook

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// SignatureHeader carries "sha256=<hex HMAC-SHA256 of the body>".
const SignatureHeader = "X-Trellis-Signature"

// ErrPrivate is wrapped by the errors for URLs that reach a refused
// address.
var ErrPrivate = errors.New("webhook: the URL reaches a loopback, private or link-local address")

// Sender sends webhooks. The zero value refuses private addresses and
// does not sign.
type Sender struct {
	// Secret signs bodies ("" : no signature header).
	Secret string
	// AllowPrivate allows loopback, private and link-local addresses.
	AllowPrivate bool
	// Timeout bounds one POST (10 s when 0).
	Timeout time.Duration
}

// refused reports whether ip may not be reached.
func refused(ip netip.Addr) bool {
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsUnspecified() || ip.IsMulticast() || ip.IsInterfaceLocalMulticast()
}

// Check resolves the URL's host and refuses it when any of its addresses
// is refused (ErrPrivate) or it does not resolve.
func (s Sender) Check(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Errorf("webhook: %q is not an absolute http or https URL", raw)
	}
	if s.AllowPrivate {
		return nil
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if refused(ip) {
			return fmt.Errorf("%w: %s", ErrPrivate, host)
		}
		return nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return fmt.Errorf("webhook: host %q does not resolve: %w", host, err)
	}
	for _, a := range addrs {
		if refused(a) {
			return fmt.Errorf("%w: %s is %s", ErrPrivate, host, a)
		}
	}
	return nil
}

// Sign returns the signature header's value for body.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// client is an HTTP client whose dialer refuses private addresses unless
// allowed (checked on the address actually dialled).
func (s Sender) client() *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second}
	if !s.AllowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("webhook: dial %s: %w", address, err)
			}
			if refused(ap.Addr()) {
				return fmt.Errorf("%w: %s", ErrPrivate, ap.Addr())
			}
			return nil
		}
	}
	tr := &http.Transport{DialContext: d.DialContext, Proxy: nil, TLSHandshakeTimeout: 10 * time.Second}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return &http.Client{Transport: tr, Timeout: timeout, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse // a redirect is not followed: it is the answer
	}}
}

// Send POSTs body to url; an error for a transport failure or a status
// other than 2xx.
func (s Sender) Send(ctx context.Context, url string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "trellis-webhook")
	if s.Secret != "" {
		req.Header.Set(SignatureHeader, Sign(s.Secret, body))
	}
	c := s.client()
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("webhook: POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("webhook: POST %s answered %s", url, resp.Status)
	}
	return nil
}
