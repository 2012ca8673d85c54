//go:build linux

package remoting

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (a, b *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		nc, _ := ln.Accept()
		acc <- nc
	}()
	ca, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	cb := <-acc
	if cb == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { ca.Close(); cb.Close() })
	return ca.(*net.TCPConn), cb.(*net.TCPConn)
}

// Only non-blocking TCP and Unix sockets get raw I/O.
func TestRawSocketQualifies(t *testing.T) {
	a, _ := tcpPair(t)
	if newRawReader(a) == nil || newRawWriter(a) == nil {
		t.Fatal("a TCP connection gets no raw reader or writer")
	}
	p1, p2 := net.Pipe()
	defer p1.Close()
	defer p2.Close()
	if newRawReader(p1) != nil || newRawWriter(p1) != nil {
		t.Fatal("net.Pipe got a raw reader or writer")
	}
	// A blocking descriptor is refused: a raw read on it would block
	// its thread with the P held.
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		t.Fatal(err)
	}
	r := os.NewFile(uintptr(fds[0]), "r") // blocking: os leaves it so
	defer r.Close()
	defer syscall.Close(fds[1])
	rc, err := r.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if nonblocking(rc) {
		t.Fatal("a blocking pipe reported non-blocking")
	}
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		t.Fatal(err)
	}
	if !nonblocking(rc) {
		t.Fatal("a non-blocking pipe reported blocking")
	}
}

// The raw reader waits for data, returns it, reports the peer's close as
// io.EOF, and honours read deadlines and Close as the net package does.
func TestRawReader(t *testing.T) {
	a, b := tcpPair(t)
	r, parked := parkingRawReader(t, a)
	go func() {
		<-parked // the reader parks first
		_, _ = b.Write([]byte("hello"))
		_ = b.Close()
	}()
	got, err := io.ReadAll(r)
	if err != nil || string(got) != "hello" {
		t.Fatalf("ReadAll = %q, %v", got, err)
	}

	a, _ = tcpPair(t)
	r, _ = parkingRawReader(t, a)
	_ = a.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err = r.Read(make([]byte, 10))
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read past the deadline: %v", err)
	}

	a, _ = tcpPair(t)
	parkedReader, parkedRead := parkingRawReader(t, a)
	done := make(chan error, 1)
	go func() {
		_, err := parkedReader.Read(make([]byte, 10))
		done <- err
	}()
	<-parkedRead
	_ = a.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("read during Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a parked raw read")
	}
}

// parkingRawReader returns a raw reader of a and a channel closed once a
// read found the socket empty (EAGAIN), so that the reader parks in the
// poller.
func parkingRawReader(t *testing.T, a net.Conn) (*rawReader, <-chan struct{}) {
	t.Helper()
	r, ok := newRawReader(a).(*rawReader)
	if !ok {
		t.Fatal("no raw reader for a TCP connection")
	}
	parked := make(chan struct{})
	var once sync.Once
	read := r.fn
	r.fn = func(fd uintptr) bool {
		done := read(fd)
		if !done {
			once.Do(func() { close(parked) })
		}
		return done
	}
	return r, parked
}

// sendSlowly writes frames through w to a peer that reads in small
// pieces, so that writev(2) fills the socket, writes part of a batch and
// returns EAGAIN, and returns what the peer received.
func sendSlowly(t *testing.T, w *rawWriter, a, b *net.TCPConn, frames [][]byte) []byte {
	t.Helper()
	got := make(chan []byte, 1)
	go func() {
		var buf bytes.Buffer
		p := make([]byte, 1500)
		for i := 0; ; i++ {
			n, err := b.Read(p)
			buf.Write(p[:n])
			if err != nil {
				got <- buf.Bytes()
				return
			}
			if i%16 == 0 {
				time.Sleep(time.Millisecond) // let the writer's socket fill
			}
		}
	}()
	_ = a.SetWriteDeadline(time.Now().Add(20 * time.Second))
	for i := 0; i < len(frames); i += maxBatchFrames {
		batch := append([][]byte(nil), frames[i:min(i+maxBatchFrames, len(frames))]...)
		if err := w.write(batch); err != nil {
			t.Fatal(err)
		}
	}
	_ = a.CloseWrite()
	return <-got
}

// testFrames returns frames of uneven sizes (some empty) and their
// concatenation.
func testFrames() (frames [][]byte, all []byte) {
	for i := range 300 {
		f := make([]byte, (i*7919)%1500)
		for j := range f {
			f[j] = byte(i + j/251)
		}
		frames = append(frames, f)
		all = append(all, f...)
	}
	return frames, all
}

// Batches larger than the socket buffers arrive whole and in order: the
// writer resumes a partly written batch where writev(2) stopped.
func TestRawWriterPartialWrites(t *testing.T) {
	a, b := tcpPair(t)
	_ = a.SetWriteBuffer(8 << 10)
	_ = b.SetReadBuffer(8 << 10)
	frames, all := testFrames()
	if got := sendSlowly(t, newRawWriter(a), a, b, frames); !bytes.Equal(got, all) {
		t.Fatalf("received %d bytes, want %d, or different bytes", len(got), len(all))
	}
}

// The broken variant: a writer that takes a partly written buffer for a
// written one loses bytes, and the test above sees it.
func TestRawWriterPartialWritesBrokenVariant(t *testing.T) {
	a, b := tcpPair(t)
	_ = a.SetWriteBuffer(8 << 10)
	_ = b.SetReadBuffer(8 << 10)
	w := newRawWriter(a)
	w.consume = func(bufs [][]byte, n int) [][]byte {
		for n > 0 && len(bufs) > 0 {
			n -= len(bufs[0])
			bufs = bufs[1:] // drops the rest of a partly written buffer
		}
		return bufs
	}
	frames, all := testFrames()
	if got := sendSlowly(t, w, a, b, frames); bytes.Equal(got, all) {
		t.Fatal("the broken writer's output matched: the partial-write test does not catch it")
	}
}

// A peer that does not read makes a raw write fail at the write deadline.
func TestRawWriterDeadline(t *testing.T) {
	a, _ := tcpPair(t)
	_ = a.SetWriteBuffer(8 << 10)
	w := newRawWriter(a)
	_ = a.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	err := w.write([][]byte{make([]byte, 8<<20)})
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("write to a peer that does not read: %v", err)
	}
}
