package mcp

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// silentListener accepts connections and never answers on them.
func silentListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String() + "/mcp"
}

// Against an HTTP server that accepts and never answers, the handshake gave
// up on time, but closing the half-open session then waited up to 5 s for
// its cancellation notice to reach the silent server (now the attempt's
// requests are cancelled when it gives up). The wait happened in some
// attempts only, so the test makes several.
func TestHTTPConnectTimeoutBoundsTheWholeAttempt(t *testing.T) {
	const timeout = 500 * time.Millisecond
	url := silentListener(t)
	for range 6 {
		start := time.Now()
		c, err := Connect(t.Context(), HTTP{URL: url}, WithConnectTimeout(timeout))
		if err == nil {
			c.Close()
			t.Fatal("Connect succeeded against a server that never answers")
		}
		if !strings.Contains(err.Error(), "no handshake within 500ms") {
			t.Errorf("err = %v, want it to name the connect timeout", err)
		}
		if d := time.Since(start); d > 2*timeout {
			t.Fatalf("Connect took %v with a %v connect timeout", d, timeout)
		}
	}
}
