package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rocketstore/rocketstore/server"
)

func TestDefaultMaxConns(t *testing.T) {
	for _, c := range []struct {
		limit uint64
		want  int
	}{
		{1024, 512}, // the common soft limit: half for the store
		{4096, 3072},
		{65536, 49152},
		{1 << 20, 786432},
		{600, 88},
		{500, 64}, // never below 64
		{0, 64},
	} {
		if got := defaultMaxConns(c.limit); got != c.want {
			t.Errorf("defaultMaxConns(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
}

// serve raises a low soft open-file limit to the hard limit and bounds
// connections below it unless the config set serverMaxConnections.
func TestApplyOpenFileLimit(t *testing.T) {
	var orig unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &orig); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Setrlimit(unix.RLIMIT_NOFILE, &orig) })
	low := unix.Rlimit{Cur: min(orig.Max, 256), Max: orig.Max}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	var nc server.NodeConfig
	applyOpenFileLimit(&nc, slog.New(slog.NewTextHandler(&buf, nil)))
	var now unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &now); err != nil {
		t.Fatal(err)
	}
	if now.Cur != orig.Max {
		t.Fatalf("soft limit %d after the raise, want the hard limit %d", now.Cur, orig.Max)
	}
	if got, want := nc.Server.Remoting.MaxConns, defaultMaxConns(now.Cur); got != want || uint64(got) >= now.Cur {
		t.Fatalf("serverMaxConnections = %d, want %d (below the limit %d)", got, want, now.Cur)
	}
	if !strings.Contains(buf.String(), "serverMaxConnections=") {
		t.Fatalf("the limits are not logged: %s", buf.String())
	}
	nc.Server.Remoting.MaxConns = 10
	applyOpenFileLimit(&nc, slog.New(slog.NewTextHandler(&buf, nil)))
	if nc.Server.Remoting.MaxConns != 10 {
		t.Fatalf("a configured serverMaxConnections was replaced by %d", nc.Server.Remoting.MaxConns)
	}
}
