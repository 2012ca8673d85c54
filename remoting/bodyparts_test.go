package remoting

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
)

// connPair returns a Conn over kind ("tcp": the raw writev path, "pipe":
// the copying path) with its writer running, and the peer's end.
func connPair(t *testing.T, kind string) (*Conn, net.Conn) {
	t.Helper()
	srvSide, peer := socketPair(t, kind)
	var st counters
	c := newConn(context.Background(), 1, srvSide, NewMux(), Options{Logger: quietLogger(), WriteQueueLen: 4096}.withDefaults(), &st, nil)
	go c.writeLoop()
	t.Cleanup(func() {
		c.close(nil)
		<-c.writerDone
		peer.Close()
	})
	return c, peer
}

// socketPair returns both ends of a loopback TCP connection (kind "tcp")
// or of a net.Pipe (any other kind).
func socketPair(t *testing.T, kind string) (srvSide, peer net.Conn) {
	t.Helper()
	if kind != "tcp" {
		srvSide, peer = net.Pipe()
		return srvSide, peer
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan net.Conn)
	go func() {
		nc, _ := ln.Accept()
		done <- nc
	}()
	if srvSide, err = net.Dial("tcp", ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	return srvSide, <-done
}

// partsResponse is a response whose body is head plus parts; its Release
// counts its calls and then overwrites the parts, as a store reusing or
// unmapping the pages would.
func partsResponse(opaque int32, head []byte, parts [][]byte, released *atomic.Int32) *RemotingCommand {
	resp := NewRequest(0, head)
	resp.Opaque, resp.Flag = opaque, FlagResponse
	resp.ExtFields["n"] = "1"
	resp.BodyParts = parts
	resp.Release = func() {
		released.Add(1)
		for _, p := range parts {
			for i := range p {
				p[i] = 0xEE
			}
		}
	}
	return resp
}

// checkBodyParts writes frames whose BodyParts are scribbled over by
// their Release and reports whether every frame reached the peer intact.
// Each Release must run exactly once.
func checkBodyParts(t *testing.T, kind string) (intact bool) {
	c, peer := connPair(t, kind)
	const frames = 200
	var released atomic.Int32
	want := make([][]byte, frames)
	for i := range frames {
		var parts [][]byte
		var all []byte
		for j := range i%5 + 1 {
			p := bytes.Repeat([]byte{byte(i + j)}, 100+(i*37+j*911)%9000)
			parts = append(parts, p)
			all = append(all, p...)
		}
		if i%7 == 0 {
			parts = append(parts, nil) // empty parts are allowed
		}
		head := []byte("head")
		want[i] = append(bytes.Clone(head), all...)
		if err := c.WriteResponse(partsResponse(int32(i), head, parts, &released)); err != nil {
			t.Fatal(err)
		}
	}
	br := bufio.NewReader(peer)
	intact = true
	for i := range frames {
		cmd, err := ReadFrame(br, 0)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if cmd.Opaque != int32(i) || cmd.ExtFields["n"] != "1" {
			t.Fatalf("frame %d: %v", i, cmd)
		}
		if !bytes.Equal(cmd.Body, want[i]) {
			intact = false
		}
	}
	c.close(nil)
	<-c.writerDone
	if n := released.Load(); n != frames {
		t.Fatalf("Release ran %d times for %d frames", n, frames)
	}
	return intact
}

// A response's BodyParts are written from the caller's slices after its
// frame head, on the writev path and on the copying path, and its Release
// runs once, after the bytes are on the socket: a pull answer's records
// are the CommitLog's mapping, which the store may unmap once released.
func TestBodyPartsReleasedAfterWrite(t *testing.T) {
	for _, kind := range []string{"tcp", "pipe"} {
		t.Run(kind, func(t *testing.T) {
			if !checkBodyParts(t, kind) {
				t.Fatal("a frame arrived with its parts overwritten: Release ran before the write")
			}
		})
	}
}

// The broken variant releases the parts when the frame is encoded; the
// peer then reads the overwritten bytes, and the check above sees it.
func TestBodyPartsBrokenReleaseOnEncode(t *testing.T) {
	releaseOnEncode = true
	defer func() { releaseOnEncode = false }()
	if checkBodyParts(t, "tcp") {
		t.Fatal("the broken variant (Release on encode) was not caught")
	}
}

// A frame that is never written still has its Release called: the
// command is refused, the connection is closed, the frame is still queued
// when the connection closes, or its request was one-way.
func TestBodyPartsReleasedWhenDropped(t *testing.T) {
	var released atomic.Int32
	c, peer := connPair(t, "pipe") // nobody reads the pipe: frames stay queued
	_ = peer
	parts := [][]byte{[]byte("x")}

	bad := partsResponse(1, nil, parts, &released)
	bad.Flag = 0 // not a response
	if err := c.WriteResponse(bad); err == nil {
		t.Fatal("WriteResponse of a request succeeded")
	}
	if released.Load() != 1 {
		t.Fatalf("refused command: Release ran %d times", released.Load())
	}
	for i := range 5 { // the first blocks the writer in the pipe, the rest queue
		if err := c.WriteResponse(partsResponse(int32(i), nil, parts, &released)); err != nil {
			t.Fatal(err)
		}
	}
	c.close(nil)
	<-c.writerDone
	if n := released.Load(); n != 6 {
		t.Fatalf("after close: Release ran %d times, want 6", n)
	}
	if err := c.WriteResponse(partsResponse(9, nil, parts, &released)); !errors.Is(err, ErrConnClosed) {
		t.Fatalf("write after close: %v", err)
	}
	if n := released.Load(); n != 7 {
		t.Fatalf("closed connection: Release ran %d times, want 7", n)
	}

	// A one-way request's answer is dropped by the connection.
	mux := NewMux()
	mux.RegisterFunc(77, func(context.Context, *Conn, *RemotingCommand) (*RemotingCommand, error) {
		return partsResponse(0, nil, parts, &released), nil
	})
	c2, _ := connPair(t, "pipe")
	c2.handler = mux
	req := NewRequest(77, nil)
	req.Flag = FlagOneway
	c2.handlers.Add(1)
	c2.inflight.Add(1)
	c2.serveRequest(job{req: req})
	if n := released.Load(); n != 8 {
		t.Fatalf("one-way request: Release ran %d times, want 8", n)
	}
}

// AppendFrame copies BodyParts after Body, so a command with parts
// encodes to the same frame as one with the whole body in Body.
func TestAppendFrameBodyParts(t *testing.T) {
	a := NewRequest(5, []byte("ab"))
	a.BodyParts = [][]byte{[]byte("cd"), nil, []byte("efg")}
	b := NewRequest(5, []byte("abcdefg"))
	b.Opaque = a.Opaque
	fa, err := a.MarshalFrame()
	if err != nil {
		t.Fatal(err)
	}
	fb, err := b.MarshalFrame()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fa, fb) {
		t.Fatalf("frames differ:\n%q\n%q", fa, fb)
	}
}
