package main

import (
	"bufio"
	"context"
	be "encoding/binary"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/remoting"
)

// serveRSSBoundKnownPeers is the peak RSS docs/server.md promises for
// `serve` under rounds of half-frame attacks from peers that first sent a
// valid request (so that their large frames draw on the known clients'
// share of the receive budget, three quarters of it), in bytes.
const serveRSSBoundKnownPeers = 320 << 20 // 0.31 GiB

// TestServeRSSUnderKnownHalfFrames: four rounds of 20 peers that each send
// one valid request, then half of a 15 MiB frame, and are closed once the
// server holds the receive budget's share of large frames. The budget caps
// what the frames hold at once (96 MiB); the garbage collector must keep
// the heap near it. With GOGC at 400 and no memory limit, a collection
// made while the attackers' frames were held set the next at five times
// that, and each round's freed frames grew serve's RSS past 0.5 GiB.
func TestServeRSSUnderKnownHalfFrames(t *testing.T) {
	const (
		attackers = 20
		rounds    = 4
		announced = 15 << 20
	)
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	metrics := "127.0.0.1:" + strconv.Itoa(freePort(t))
	cmd := startServe(t, "--dir", t.TempDir(), "--listen", addr, "--metrics", metrics, "--grpc-listen", "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	held := func() int64 { return receiveBufferBytes(ctx, t, metrics) }
	// serve is an external process: poll until its metrics answer.
	for held() < 0 {
		if ctx.Err() != nil {
			t.Fatal("serve did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	hdr := be.BigEndian.AppendUint32(nil, announced)
	hdr = be.BigEndian.AppendUint32(hdr, 0)
	half := append(hdr, make([]byte, announced/2)...)
	hello, err := remoting.NewRequest(remoting.CodeGetRouteInfoByTopic, nil).MarshalFrame()
	if err != nil {
		t.Fatal(err)
	}
	for r := range rounds {
		conns := make([]net.Conn, attackers)
		for i := range conns {
			var d net.Dialer
			nc, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			conns[i] = nc
			// One valid request makes the connection known.
			_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
			if _, err := nc.Write(hello); err != nil {
				t.Fatal(err)
			}
			var n [4]byte
			if _, err := nc.Read(n[:]); err != nil {
				t.Fatalf("attacker %d: no answer to its valid request: %v", i, err)
			}
			_ = nc.SetDeadline(time.Time{})
			go func() { _, _ = nc.Write(half) }()
		}
		// The known share is 96 MiB, less what small frames hold.
		for held() < 90<<20 {
			if ctx.Err() != nil {
				t.Fatalf("round %d: the attackers' frames hold %d bytes, want the known share", r, held())
			}
			time.Sleep(20 * time.Millisecond)
		}
		for _, nc := range conns {
			_ = nc.Close()
		}
		for held() != 0 {
			if ctx.Err() != nil {
				t.Fatalf("round %d: %d bytes still held after the attackers closed", r, held())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	peak, err := peakRSS(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("peak RSS after %d rounds of %d known half-frame peers: %.3f GiB", rounds, attackers, float64(peak)/(1<<30))
	if peak > serveRSSBoundKnownPeers {
		t.Fatalf("peak RSS %.3f GiB, docs/server.md promises at most %.3f", float64(peak)/(1<<30), float64(serveRSSBoundKnownPeers)/(1<<30))
	}
}

// receiveBufferBytes reads rocketstore_receive_buffer_bytes from serve's
// metrics at addr; -1 when they do not answer.
func receiveBufferBytes(ctx context.Context, t *testing.T, addr string) int64 {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "rocketstore_receive_buffer_bytes "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("rocketstore_receive_buffer_bytes %q: %v", v, err)
			}
			return int64(f)
		}
	}
	t.Fatal(fmt.Errorf("no rocketstore_receive_buffer_bytes in serve's metrics: %v", sc.Err()))
	return -1
}
