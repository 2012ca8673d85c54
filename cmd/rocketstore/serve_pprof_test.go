package main

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestPprofServesProfilesOnLoopback: --pprof serves the profiler's index
// and named profiles on loopback, and stops serving when stopped.
func TestPprofServesProfilesOnLoopback(t *testing.T) {
	var logs bytes.Buffer
	stop, err := startPprof("127.0.0.1:0", slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`url=(http://127\.0\.0\.1:[0-9]+/debug/pprof/)`).FindStringSubmatch(logs.String())
	if m == nil {
		stop()
		t.Fatalf("no pprof url logged: %s", logs.String())
	}
	for path, want := range map[string]string{"": "goroutine", "cmdline": "rocketstore.test", "goroutine?debug=1": "goroutine profile"} {
		resp, err := http.Get(m[1] + path)
		if err != nil {
			stop()
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %d, %q, want 200 containing %q", path, resp.StatusCode, body, want)
		}
	}
	stop()
	if _, err := http.Get(m[1]); err == nil {
		t.Error("the profiler still answers after stop")
	}
}

// TestPprofRefusesNonLoopback: an address beyond loopback is an error
// that names the flag, and a bare port binds loopback.
func TestPprofRefusesNonLoopback(t *testing.T) {
	_, err := startPprof("0.0.0.0:0", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err == nil || !strings.Contains(err.Error(), "--pprof") || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("startPprof(0.0.0.0:0) = %v, want a --pprof loopback error", err)
	}
	ln, err := pprofListen(":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if !isLoopback(ln.Addr()) {
		t.Errorf("a bare port listens on %s", ln.Addr())
	}
}
