package main

import (
	"net"
	"testing"
)

func TestMetricsAddrDefaultsToLoopback(t *testing.T) {
	for in, want := range map[string]string{":9100": "127.0.0.1:9100", "9100": "127.0.0.1:9100",
		"0.0.0.0:9100": "0.0.0.0:9100", "192.0.2.1:9100": "192.0.2.1:9100", "[::1]:9100": "[::1]:9100"} {
		if got := loopbackDefault(in); got != want {
			t.Errorf("loopbackDefault(%q) = %q, want %q", in, got, want)
		}
	}
	if !isLoopback(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}) || isLoopback(&net.TCPAddr{IP: net.IPv4zero}) {
		t.Error("isLoopback wrong")
	}
}
