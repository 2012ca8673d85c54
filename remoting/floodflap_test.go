package remoting

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"
)

// A flood that keeps the server at MaxConns while some of its connections
// close and others take their places is one flood: one line at its start,
// one at its end, none in between. Declaring it over at the first accept
// after a refusal logged "flood over" and a new "refusing" line every time
// a slot freed under the flood (serve logged three starts and two ends for
// one 20,000-connection flood).
func TestConnectionFloodAtTheLimitLoggedOnce(t *testing.T) {
	const maxConns = 10
	logs := &logSink{}
	_, addr, closed := testServer(t, nil, Options{MaxConns: maxConns, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	// accepted dials and waits until the server answered a request on it.
	accepted := func() net.Conn {
		nc := rawDial(t, addr)
		f, err := NewRequest(testCodeEcho, nil).MarshalFrame()
		if err != nil {
			t.Fatal(err)
		}
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := nc.Write(f); err != nil {
			t.Fatal(err)
		}
		if _, err := readPayload(nc, DefaultMaxFrameSize); err != nil {
			t.Fatalf("a connection with room for it: %v", err)
		}
		return nc
	}
	refused := func(n int) {
		for i := range n {
			nc := rawDial(t, addr)
			_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := nc.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
				t.Fatalf("flood connection %d: read %v, want the server to hang up", i, err)
			}
			_ = nc.Close()
		}
	}
	var kept []net.Conn
	for range maxConns {
		kept = append(kept, accepted())
	}
	refused(5)
	for round := range 3 {
		// A slot frees and the flood takes it again.
		_ = kept[round].Close()
		<-closed
		kept[round] = accepted()
		refused(5)
	}
	if n := strings.Count(logs.String(), "refusing new ones"); n != 1 || strings.Contains(logs.String(), "flood over") {
		t.Fatalf("%d start lines for one flood at the limit (want 1, and no end while it lasts):\n%s", n, logs.String())
	}
	for _, nc := range kept {
		_ = nc.Close()
	}
	for range maxConns {
		<-closed
	}
	accepted()
	if !strings.Contains(logs.String(), "connection flood over") || !strings.Contains(logs.String(), "failures=20") {
		t.Fatalf("the flood's end is not logged with its count:\n%s", logs.String())
	}
}
