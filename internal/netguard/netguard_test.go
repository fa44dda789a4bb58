package netguard

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// The guarded client refuses a loopback server at dial time (the server
// gets nothing), and lets it through when private addresses are allowed.
func TestClientRefusesNonPublicAtDial(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits++ }))
	defer srv.Close()
	resp, err := Client(false).Get(srv.URL)
	if err == nil {
		resp.Body.Close()
	}
	var re *RefusedError
	if !errors.As(err, &re) || !errors.Is(err, ErrRefused) || re.Kind != "a loopback address" || hits != 0 {
		t.Fatalf("Get loopback = %v (hits %d), want a refusal naming a loopback address", err, hits)
	}
	c := Client(true)
	resp, err = c.Get(srv.URL)
	if err != nil || hits != 1 {
		t.Fatalf("Get loopback with private allowed = %v (hits %d)", err, hits)
	}
	resp.Body.Close()
	c.CloseIdleConnections()
	if err := CheckURL(context.Background(), "http://169.254.169.254/latest", false); !errors.Is(err, ErrRefused) {
		t.Errorf("CheckURL(metadata address) = %v", err)
	}
	if err := CheckURL(context.Background(), "ftp://x/", true); err == nil {
		t.Error("CheckURL(ftp) passed")
	}
}
