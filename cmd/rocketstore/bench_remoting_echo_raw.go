package main

import (
	"bufio"
	"bytes"
	"context"
	be "encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"

	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
)

// serveRawEchoOn serves the raw remoting echo on ln until ctx ends: the
// answers of serveRemotingEchoOn without the remoting package, as little
// as a Go server can do for them. One goroutine a connection reads a
// frame, finds the code, opaque and fields it needs by scanning the JSON
// header (no decoding), appends a prebuilt answer to a buffered writer,
// and flushes when no further request is buffered. What it spends a
// message under a client's pattern is that pattern's cost in Go and the
// kernel; what serveRemotingEchoOn spends beyond it is the remoting
// package's.
func serveRawEchoOn(ctx context.Context, ln net.Listener) error {
	e, err := newRemotingEcho(ln)
	if err != nil {
		return err
	}
	var (
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
		wg    sync.WaitGroup
	)
	served := make(chan struct{})
	defer close(served)
	go func() {
		select {
		case <-ctx.Done():
		case <-served:
		}
		_ = ln.Close()
		mu.Lock()
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			wg.Wait()
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("raw remoting echo: %w", err)
		}
		mu.Lock()
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.rawConn(c)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
			_ = c.Close()
		}()
	}
}

// errRawFrame ends a raw echo connection on a frame it does not take.
var errRawFrame = errors.New("raw remoting echo: not a JSON-header frame of at most 16 MiB")

// rawConn answers c's requests until it closes or sends a frame
// rawAnswer does not take.
func (e *remotingEcho) rawConn(c net.Conn) {
	r := bufio.NewReaderSize(c, 64<<10)
	w := bufio.NewWriterSize(c, 64<<10)
	var frame, out []byte
	for {
		var n [4]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return
		}
		size := int(be.BigEndian.Uint32(n[:]))
		if size < 4 || size > 16<<20 {
			return
		}
		frame = slices.Grow(frame[:0], size)[:size]
		if _, err := io.ReadFull(r, frame); err != nil {
			return
		}
		var err error
		if out, err = e.rawAnswer(out[:0], frame); err != nil {
			return
		}
		if _, err := w.Write(out); err != nil {
			return
		}
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return
			}
		}
	}
}

// rawAnswer appends to dst the answer to frame (without its length
// prefix): the answers of remotingEcho's handlers, with the request's
// opaque.
func (e *remotingEcho) rawAnswer(dst, frame []byte) ([]byte, error) {
	headerLen := int(be.BigEndian.Uint32(frame) & 0xffffff)
	if frame[0] != 0 || 4+headerLen > len(frame) {
		return nil, errRawFrame
	}
	h := frame[4 : 4+headerLen]
	code, opaque := jsonInt(h, `"code":`), jsonInt(h, `"opaque":`)
	var body []byte
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0) // length, header word
	switch code {
	case int64(remoting.CodeSendMessage), int64(remoting.CodeSendMessageV2):
		topic, queue := jsonString(h, `"topic":"`), jsonString(h, `"queueId":"`)
		if code == int64(remoting.CodeSendMessageV2) {
			topic, queue = jsonString(h, `"b":"`), jsonString(h, `"e":"`)
		}
		if topic == nil || queue == nil {
			dst = appendRawHeader(dst, remoting.CodeSystemError, opaque, "send without a topic or a queue id")
			break
		}
		off := e.offset.Add(1) - 1
		dst = appendRawHeader(dst, remoting.CodeSuccess, opaque, "")
		dst = dst[:len(dst)-1] // reopen the object for extFields
		dst = append(dst, `,"extFields":{"MSG_REGION":"DefaultRegion","TRACE_ON":"true","msgId":"`...)
		dst = record.AppendOffsetMsgID(dst, e.host, off)
		dst = append(dst, `","queueId":"`...)
		dst = append(dst, queue...)
		dst = append(dst, `","queueOffset":"`...)
		dst = strconv.AppendInt(dst, off, 10)
		dst = append(dst, `"}}`...)
	case int64(remoting.CodeGetRouteInfoByTopic):
		if len(jsonString(h, `"topic":"`)) == 0 {
			dst = appendRawHeader(dst, remoting.CodeSystemError, opaque, "GET_ROUTEINFO_BY_TOPIC without a topic")
			break
		}
		dst, body = appendRawHeader(dst, remoting.CodeSuccess, opaque, ""), e.routeBody
	case int64(remoting.CodeHeartBeat):
		dst = appendRawHeader(dst, remoting.CodeSuccess, opaque, "")
	default:
		dst = appendRawHeader(dst, remoting.CodeRequestCodeNotSupported, opaque, "request code not supported by the echo")
	}
	headerLen = len(dst) - start - 8
	be.BigEndian.PutUint32(dst[start:], uint32(4+headerLen+len(body)))
	be.BigEndian.PutUint32(dst[start+4:], uint32(headerLen)) // serialize type 0: JSON
	return append(dst, body...), nil
}

// appendRawHeader appends a response's JSON header with code, opaque and
// remark (a constant: no escaping).
func appendRawHeader(dst []byte, code int32, opaque int64, remark string) []byte {
	dst = append(dst, `{"code":`...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, `,"flag":1,"language":"GO","opaque":`...)
	dst = strconv.AppendInt(dst, opaque, 10)
	dst = append(dst, `,"remark":"`...)
	dst = append(dst, remark...)
	return append(dst, `","serializeTypeCurrentRPC":"JSON","version":317}`...)
}

// jsonInt returns the integer that follows key in h (-1 if none).
func jsonInt(h []byte, key string) int64 {
	i := bytes.Index(h, []byte(key))
	if i < 0 {
		return -1
	}
	v := h[i+len(key):]
	end := 0
	for end < len(v) && (v[end] == '-' || v[end] >= '0' && v[end] <= '9') {
		end++
	}
	n, err := strconv.ParseInt(string(v[:end]), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// jsonString returns the string value that follows key (which ends with
// its opening quote) in h, unescaped characters only; nil if none.
func jsonString(h []byte, key string) []byte {
	i := bytes.Index(h, []byte(key))
	if i < 0 {
		return nil
	}
	v := h[i+len(key):]
	end := bytes.IndexByte(v, '"')
	if end < 0 {
		return nil
	}
	return v[:end]
}
