package remoting

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"
)

// sendMessageV2Request is what rocketmq-client-go sends for SendSync: code
// 310 with the SendMessageRequestHeaderV2 fields a..m and a 256-byte body.
func sendMessageV2Request() *RemotingCommand {
	return &RemotingCommand{
		Code: 310, Language: LanguageGo, Version: 317, Opaque: 123456,
		ExtFields: map[string]string{
			"a": "bench_producer_group",
			"b": "BenchTopic",
			"c": "TBW102",
			"d": "4",
			"e": "3",
			"f": "0",
			"g": "1732873384123",
			"h": "0",
			"i": "UNIQ_KEY\u00017F000001A1B218B4AAC26F1B2D7C0000\u0002WAIT\u0001true\u0002TAGS\u0001TagA\u0002",
			"j": "0",
			"k": "false",
			"l": "16",
			"m": "false",
		},
		Body: bytes.Repeat([]byte("m"), 256),
	}
}

// pullResponse is a PULL_MESSAGE response carrying 16 stored messages.
func pullResponse() *RemotingCommand {
	return &RemotingCommand{
		Code: CodeSuccess, Language: LanguageJava, Version: DefaultVersion, Opaque: 98765, Flag: FlagResponse,
		ExtFields: map[string]string{
			"suggestWhichBrokerId": "0",
			"nextBeginOffset":      "1616",
			"minOffset":            "0",
			"maxOffset":            "1616",
		},
		Body: bytes.Repeat([]byte("p"), 16*(256+160)),
	}
}

var benchCommands = []struct {
	name string
	cmd  func() *RemotingCommand
}{
	{"SendMessageV2", sendMessageV2Request},
	{"PullResponse", pullResponse},
}

func BenchmarkDecodeFrame(b *testing.B) {
	for _, bc := range benchCommands {
		frame, err := bc.cmd().MarshalFrame()
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(frame)))
			for b.Loop() {
				if _, err := DecodeFrame(frame, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeJSONHeader decodes the official Go client's send header
// through a copy of it (DecodeFrame's path: the caller keeps its buffer)
// and in place (a frame read from a connection: the command owns its
// buffer), allocations reported; each pass decodes a fresh copy of the
// header, as each frame read is a fresh buffer.
func BenchmarkDecodeJSONHeader(b *testing.B) {
	frame, err := sendMessageV2Request().MarshalFrame()
	if err != nil {
		b.Fatal(err)
	}
	hl := int(binary.BigEndian.Uint32(frame[frameLenSize:]) & headerLenMask)
	header := frame[frameLenSize+headerWordSize : frameLenSize+headerWordSize+hl]
	for _, bc := range []struct {
		name   string
		decode func([]byte) (*RemotingCommand, error)
	}{{"copy", decodeJSONHeader}, {"in-place", decodeJSONHeaderOwned}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(header)))
			buf := make([]byte, len(header))
			for b.Loop() {
				copy(buf, header)
				if _, err := bc.decode(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSendAnswer builds and encodes a send's answer as the server
// does (NewLeanResponse and its entries, encoded into a reused buffer as
// the connection's pooled frames are), to report the answer's allocations
// and bytes.
func BenchmarkSendAnswer(b *testing.B) {
	req := sendMessageV2Request()
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		resp := req.NewLeanResponse(CodeSuccess, "")
		resp.SetExt("msgId", "7F00000100002A9F0000000000001234")
		resp.SetExt("queueId", "3")
		resp.SetExt("queueOffset", "1616")
		resp.SetExt("MSG_REGION", "DefaultRegion")
		resp.SetExt("TRACE_ON", "true")
		var err error
		if buf, err = resp.appendFrameHead(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadFrame is the server's read path: frame from a buffered
// stream, payload allocation included.
func BenchmarkReadFrame(b *testing.B) {
	for _, bc := range benchCommands {
		frame, err := bc.cmd().MarshalFrame()
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(frame)))
			r := bytes.NewReader(frame)
			for b.Loop() {
				r.Reset(frame)
				if _, err := ReadFrame(r, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncodeFrame(b *testing.B) {
	for _, bc := range benchCommands {
		cmd := bc.cmd()
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := cmd.MarshalFrame(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/Append", func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				var err error
				if buf, err = cmd.AppendFrame(buf[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkWriteResponses measures the write path: responses queued with
// WriteResponse on a server connection, written to a loopback socket that a
// goroutine drains.
func BenchmarkWriteResponses(b *testing.B) {
	for _, bc := range benchCommands {
		b.Run(bc.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				nc, err := ln.Accept()
				if err != nil {
					return
				}
				defer nc.Close()
				_, _ = io.Copy(io.Discard, nc)
			}()
			nc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			var st counters
			opts := Options{Logger: quietLogger(), WriteQueueLen: 1 << 16, WriteQueueBytes: 1 << 30}.withDefaults()
			c := newConn(context.Background(), 1, nc, NewMux(), opts, &st, nil)
			go c.writeLoop()
			resp := bc.cmd()
			resp.Flag |= FlagResponse
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				for {
					err := c.WriteResponse(resp)
					if err == nil {
						break
					}
					b.Fatal(err)
				}
				// Keep the queue short so that the benchmark measures
				// the writer, not the queue limit.
				for c.outBytes.Load() > 1<<20 {
					time.Sleep(10 * time.Microsecond)
				}
			}
			// The timed run includes draining the queue: the writer's
			// throughput is what the benchmark measures.
			for c.outBytes.Load() > 0 {
				time.Sleep(100 * time.Microsecond)
			}
			b.StopTimer()
			c.close(nil)
			<-c.writerDone
			wg.Wait()
		})
	}
}
