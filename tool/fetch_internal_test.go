package tool

import (
	"net/netip"
	"testing"
)

func TestNonPublicAddresses(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1":          "a loopback address",
		"::1":                "a loopback address",
		"::ffff:127.0.0.1":   "a loopback address",
		"64:ff9b::7f00:1":    "a loopback address",
		"10.1.2.3":           "a private address",
		"192.168.0.1":        "a private address",
		"fd00::1":            "a private address",
		"169.254.169.254":    "a link-local address",
		"fe80::1":            "a link-local address",
		"0.0.0.0":            "an unspecified address",
		"100.100.100.200":    "a shared (carrier-grade NAT) address",
		"239.1.2.3":          "a multicast address",
		"8.8.8.8":            "",
		"2606:4700::1111":    "",
		"::ffff:93.184.0.10": "",
	} {
		if got := nonPublic(netip.MustParseAddr(addr)); got != want {
			t.Errorf("nonPublic(%s) = %q, want %q", addr, got, want)
		}
	}
}
