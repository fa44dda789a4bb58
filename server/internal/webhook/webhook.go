// Package webhook sends the service's webhooks: a POST of a JSON body,
// signed with HMAC-SHA256 when a secret is set, to a URL whose host must
// not resolve to a loopback, private, link-local or unspecified address
// unless private addresses are allowed. The address is checked when the
// URL is accepted and again, by the shared guarded dialer
// (internal/netguard), for every connection, so a DNS answer that changes
// in between cannot reach an internal service.
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
	"net/http"
	"time"

	"github.com/trellis-agents/trellis/internal/netguard"
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

// Check refuses a URL that is not absolute http(s), or whose host does
// not resolve or reaches a refused address (ErrPrivate), with
// netguard.CheckURL.
func (s Sender) Check(ctx context.Context, raw string) error {
	err := netguard.CheckURL(ctx, raw, s.AllowPrivate)
	if errors.Is(err, netguard.ErrRefused) {
		return fmt.Errorf("%w: %w", ErrPrivate, err)
	}
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	return nil
}

// Sign returns the signature header's value for body.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// client is the guarded client (internal/netguard): it refuses private
// addresses unless allowed, on the address actually dialled, and follows
// no redirect.
func (s Sender) client() *http.Client {
	c := netguard.Client(s.AllowPrivate)
	c.Timeout = s.Timeout
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Second
	}
	return c
}

// Send POSTs body to url; an error for a transport failure or a status
// other than 2xx.
func (s Sender) Send(ctx context.Context, url string, body []byte) error {
	return s.SendWith(ctx, url, body, nil)
}

// SendWith is Send with extra headers; the content type, user agent and
// signature are set after them, so a header of the caller's cannot
// replace them.
func (s Sender) SendWith(ctx context.Context, url string, body []byte, headers map[string]string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "trellis-webhook")
	if s.Secret != "" {
		req.Header.Set(SignatureHeader, Sign(s.Secret, body))
	}
	c := s.client()
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if errors.Is(err, netguard.ErrRefused) {
		return fmt.Errorf("webhook: POST %s: %w: %w", url, ErrPrivate, err)
	}
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
