package remoting

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// logSink is a log destination safe for the server's goroutines.
type logSink struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *logSink) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *logSink) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// A connection flood beyond MaxConns is refused connection by connection
// but logged once (it once logged a line per connection, 20,000 of them),
// and its end is logged with the count of refusals.
func TestConnectionFloodLoggedOnce(t *testing.T) {
	const (
		maxConns = 5
		flood    = 45
	)
	logs := &logSink{}
	srv, addr, closed := testServer(t, nil, Options{MaxConns: maxConns, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	roundTrip := func(nc net.Conn) error {
		f, err := NewRequest(testCodeEcho, nil).MarshalFrame()
		if err != nil {
			return err
		}
		_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := nc.Write(f); err != nil {
			return err
		}
		_, err = readPayload(nc, DefaultMaxFrameSize)
		return err
	}
	var kept []net.Conn
	for range maxConns {
		nc := rawDial(t, addr)
		if err := roundTrip(nc); err != nil {
			t.Fatalf("a connection within MaxConns: %v", err)
		}
		kept = append(kept, nc)
	}
	for i := range flood {
		nc := rawDial(t, addr)
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := nc.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !isReset(err) {
			t.Fatalf("flood connection %d: read %v, want the server to hang up", i, err)
		}
		_ = nc.Close()
	}
	if n := strings.Count(logs.String(), "refusing new ones"); n != 1 {
		t.Fatalf("%d log lines for %d refused connections, want 1:\n%s", n, flood, logs.String())
	}
	if s := srv.Stats(); s.ConnsRejected != flood {
		t.Fatalf("ConnsRejected = %d, want %d", s.ConnsRejected, flood)
	}
	for _, nc := range kept {
		_ = nc.Close()
	}
	for range maxConns {
		<-closed
	}
	if err := roundTrip(rawDial(t, addr)); err != nil {
		t.Fatalf("a connection after the flood: %v", err)
	}
	if !strings.Contains(logs.String(), "connection flood over") || !strings.Contains(logs.String(), "failures=45") {
		t.Fatalf("the flood's end is not logged with its count:\n%s", logs.String())
	}
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

// A slow-loris peer that keeps dripping bytes of a frame it never finishes
// is closed by FrameTimeout: the drips do not restart the frame's clock.
func TestSlowLorisReapedByFrameTimeout(t *testing.T) {
	clock := clockwork.NewFakeClock()
	started := make(chan struct{}, 1)
	srv, addr, closed := testServer(t, nil, Options{FrameTimeout: 10 * time.Second, Clock: clock, IdleTimeout: time.Hour,
		onFrameStart: func() { started <- struct{}{} }})
	nc := rawDial(t, addr)
	f, err := NewRequest(testCodeEcho, make([]byte, 1000)).MarshalFrame()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(f[:10]); err != nil {
		t.Fatal(err)
	}
	<-started
	ctx := testCtx(t)
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	for i := 10; i < 30; i++ { // one byte every 0.6 s of the server's clock: 12 s in all
		if _, err := nc.Write(f[i : i+1]); err != nil {
			// Once the frame's 10 s are up the server may close the
			// connection before the last drips: a write may then fail.
			if elapsed := time.Duration(i-10) * 600 * time.Millisecond; elapsed < 10*time.Second {
				t.Fatalf("drip %d, %v into the frame: %v", i, elapsed, err)
			}
			break
		}
		clock.Advance(600 * time.Millisecond)
	}
	select {
	case r := <-closed:
		if !errors.Is(r, ErrFrameTimeout) {
			t.Fatalf("slow-loris closed with %v, want ErrFrameTimeout", r)
		}
	case <-ctx.Done():
		t.Fatal("the slow-loris connection was not closed")
	}
	if s := srv.Stats(); s.FrameTimeouts != 1 {
		t.Fatalf("FrameTimeouts = %d, want 1", s.FrameTimeouts)
	}
}
