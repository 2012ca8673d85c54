//go:build linux

package remoting

import (
	"bytes"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// rcvLowat returns c's SO_RCVLOWAT, as the kernel holds it.
func rcvLowat(t *testing.T, c *net.TCPConn) int {
	t.Helper()
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		v, gerr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVLOWAT)
	}); err != nil {
		t.Fatal(err)
	}
	if gerr != nil {
		t.Fatal(gerr)
	}
	return v
}

// notingParks wraps r's read function so that every read that finds the
// socket empty (EAGAIN, after which the reader parks in the poller) is
// sent on the returned channel.
func notingParks(r *rawReader) <-chan struct{} {
	parks := make(chan struct{}, 64)
	read := r.fn
	r.fn = func(fd uintptr) bool {
		done := read(fd)
		if !done {
			parks <- struct{}{}
		}
		return done
	}
	return parks
}

// drain empties ch of what was sent before.
func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// readAsync reads once into a buffer of n bytes on another goroutine.
func readAsync(r *rawReader, n int) <-chan []byte {
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, n)
		m, _ := r.Read(b)
		got <- b[:m]
	}()
	return got
}

// The raw reader parks with the socket's low-water mark at what expect
// asked for less the bytes read since, so that the poller wakes it once
// the rest is there, and sets the mark back to 1 once that is read. A
// mark left at what expect asked for would wait for bytes the peer never
// sends: the reader would hang here until the deadline.
func TestRawReaderLowWaterMark(t *testing.T) {
	a, b := tcpPair(t)
	r := newRawReader(a)
	if r == nil {
		t.Fatal("no raw reader for a TCP connection")
	}
	parks := notingParks(r)
	_ = a.SetReadDeadline(time.Now().Add(10 * time.Second))

	// Six bytes arrive in one segment; a read of two leaves four.
	if _, err := b.Write([]byte("abcdef")); err != nil {
		t.Fatal(err)
	}
	two := make([]byte, 2)
	if n, err := r.Read(two); n != 2 || err != nil {
		t.Fatalf("Read = %d, %v", n, err)
	}
	// The frame needs ten more bytes from here: four are in the socket.
	r.expect(10)
	if got := <-readAsync(r, 64); string(got) != "cdef" {
		t.Fatalf("read %q, want the four bytes in the socket", got)
	}
	drain(parks)
	got := readAsync(r, 64)
	<-parks
	if n := rcvLowat(t, a); n != 6 {
		t.Fatalf("parked with SO_RCVLOWAT %d, want 6 (10 expected, 4 read)", n)
	}
	// The six bytes come in two writes; the reader wakes once, for both.
	if _, err := b.Write([]byte("ghi")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Write([]byte("jkl")); err != nil {
		t.Fatal(err)
	}
	if p := <-got; string(p) != "ghijkl" {
		t.Fatalf("read %q, want the six bytes at once", p)
	}

	// Expectation met: the next park lowers the mark to 1.
	drain(parks)
	got = readAsync(r, 64)
	<-parks
	if n := rcvLowat(t, a); n != 1 {
		t.Fatalf("parked with SO_RCVLOWAT %d after the expected bytes, want 1", n)
	}
	if _, err := b.Write([]byte("m")); err != nil {
		t.Fatal(err)
	}
	if p := <-got; string(p) != "m" {
		t.Fatalf("read %q, want m", p)
	}
}

// The read loop expects a frame's length and header word between frames
// and, once the length is read, the rest of the frame, so that the poller
// wakes it for whole frames rather than for each of a client's writes; a
// request written in pieces is answered.
func TestReadLoopExpectsFrameRemainder(t *testing.T) {
	var srv atomic.Pointer[Server]
	wants := make(chan int, 1)
	release := make(chan struct{})
	s, addr, _ := testServer(t, nil, Options{onFrameStart: func() {
		// On the read goroutine of the one connection, after the
		// length was read and before the rest of the frame is.
		wants <- srv.Load().Conns()[0].raw.want
		<-release
	}})
	srv.Store(s)
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // registered after the server's: runs first, so that its Close does not wait on the hook
	nc := rawDial(t, addr)

	req := NewRequest(testCodeEcho, []byte("pieces"))
	req.Opaque = 7
	frame, err := req.MarshalFrame()
	if err != nil {
		t.Fatal(err)
	}
	n := int(binary.BigEndian.Uint32(frame))
	// Length and header word (what the official clients write first).
	head := frameLenSize + headerWordSize
	if _, err := nc.Write(frame[:head]); err != nil {
		t.Fatal(err)
	}
	if want := <-wants; want != n-headerWordSize {
		t.Fatalf("read loop expects %d bytes once the length is read, want %d (the frame's %d less the header word)",
			want, n-headerWordSize, n)
	}
	// Half the rest while the read loop waits in the hook, then the rest.
	half := head + (len(frame)-head)/2
	if _, err := nc.Write(frame[head:half]); err != nil {
		t.Fatal(err)
	}
	free()
	if _, err := nc.Write(frame[half:]); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := ReadFrame(nc, 0)
	if err != nil {
		t.Fatalf("no answer to a request written in pieces: %v", err)
	}
	if resp.Opaque != 7 || !bytes.Equal(resp.Body, []byte("pieces")) {
		t.Fatalf("answer %v", resp)
	}
}
