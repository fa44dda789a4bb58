package webhook

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestCheckRefusesPrivateAddresses(t *testing.T) {
	ctx := context.Background()
	for _, u := range []string{"http://127.0.0.1/x", "http://[::1]/x", "http://10.1.2.3/", "http://192.168.0.1/", "http://169.254.169.254/latest",
		"http://0.0.0.0/", "http://[fe80::1]/", "http://[::ffff:127.0.0.1]/", "http://localhost:8080/"} {
		if err := (Sender{}).Check(ctx, u); !errors.Is(err, ErrPrivate) {
			t.Errorf("Check(%s) = %v, want ErrPrivate", u, err)
		}
		if err := (Sender{AllowPrivate: true}).Check(ctx, u); err != nil {
			t.Errorf("Check(%s) with private allowed = %v", u, err)
		}
	}
	for _, u := range []string{"http://8.8.8.8/hook", "https://[2606:4700::1111]/"} {
		if err := (Sender{}).Check(ctx, u); err != nil {
			t.Errorf("Check(%s) = %v", u, err)
		}
	}
	if err := (Sender{}).Check(ctx, "ftp://x/"); err == nil {
		t.Error("Check(ftp) passed")
	}
}

// The dialer refuses a private address at send time too (a name that
// resolved to a public address when accepted may not later).
func TestSendSignsAndRefusesPrivate(t *testing.T) {
	var got []byte
	var sig string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		sig = r.Header.Get(SignatureHeader)
	}))
	defer srv.Close()
	body := []byte(`{"run_id":"r"}`)
	if err := (Sender{Secret: "s3cret"}).Send(context.Background(), srv.URL, body); !errors.Is(err, ErrPrivate) {
		t.Fatalf("Send to loopback = %v, want ErrPrivate", err)
	}
	if got != nil {
		t.Fatal("the refused POST reached the server")
	}
	if err := (Sender{Secret: "s3cret", AllowPrivate: true}).Send(context.Background(), srv.URL, body); err != nil {
		t.Fatal(err)
	}
	if string(got) != string(body) || sig != Sign("s3cret", body) || sig[:7] != "sha256=" {
		t.Errorf("received %s with signature %q", got, sig)
	}
	// A known HMAC-SHA256 vector (RFC 4231 test case 2).
	if s := Sign("Jefe", []byte("what do ya want for nothing?")); s != "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" {
		t.Errorf("Sign = %s", s)
	}
	fail := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) }))
	defer fail.Close()
	if err := (Sender{AllowPrivate: true}).Send(context.Background(), fail.URL, body); err == nil {
		t.Error("a 500 answer is not an error")
	}
}
