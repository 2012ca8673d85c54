package remoting

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"reflect"
	"strconv"
	"sync"
	"testing"
)

// ReadFrame from a bufio.Reader (the connection's read path) reports
// truncation as io.ReadFull does.
func TestReadFrameBufioEOF(t *testing.T) {
	if _, err := ReadFrame(bufio.NewReader(bytes.NewReader(nil)), 0); err != io.EOF {
		t.Fatalf("empty input: %v, want io.EOF", err)
	}
	frame := jsonFrame(`{"code":1}`, []byte("body"))
	for cut := 1; cut < len(frame); cut++ {
		if _, err := ReadFrame(bufio.NewReader(bytes.NewReader(frame[:cut])), 0); err != io.ErrUnexpectedEOF {
			t.Fatalf("cut at %d: %v, want io.ErrUnexpectedEOF", cut, err)
		}
	}
	two := append(bytes.Clone(frame), frame...)
	br := bufio.NewReader(bytes.NewReader(two))
	for range 2 {
		if c, err := ReadFrame(br, 0); err != nil || string(c.Body) != "body" {
			t.Fatalf("ReadFrame = %v, %v", c, err)
		}
	}
}

// Frames written concurrently through one connection's batching writer
// (writev on TCP, a coalescing buffer on other connections) arrive whole,
// each writer's in order.
func TestWriteBatchingIntact(t *testing.T) {
	for _, kind := range []string{"tcp", "pipe"} {
		t.Run(kind, func(t *testing.T) {
			srvSide, peer := socketPair(t, kind)
			defer peer.Close()
			var st counters
			c := newConn(context.Background(), 1, srvSide, NewMux(), Options{Logger: quietLogger(), WriteQueueLen: 4096}.withDefaults(), &st, nil)
			go c.writeLoop()
			const writers, per = 8, 300
			got := make(chan *RemotingCommand, writers*per)
			readDone := make(chan error, 1)
			go func() {
				br := bufio.NewReader(peer)
				for range writers * per {
					cmd, err := ReadFrame(br, 0)
					if err != nil {
						readDone <- err
						return
					}
					got <- cmd
				}
				readDone <- nil
			}()
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := range per {
						resp := NewRequest(int32(w), bytes.Repeat([]byte{byte(i)}, i*(w+1)%5000))
						resp.Opaque, resp.Flag = int32(i), FlagResponse
						resp.ExtFields["w"] = strconv.Itoa(w)
						if err := c.WriteResponse(resp); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if err := <-readDone; err != nil {
				t.Fatal(err)
			}
			close(got)
			next := make([]int32, writers)
			for cmd := range got {
				w := cmd.Code
				if cmd.Opaque != next[w] {
					t.Fatalf("writer %d: frame %d arrived, want %d", w, cmd.Opaque, next[w])
				}
				i := int(cmd.Opaque)
				if want := bytes.Repeat([]byte{byte(i)}, i*(int(w)+1)%5000); !reflect.DeepEqual(cmd.Body, want) && len(want) > 0 {
					t.Fatalf("writer %d frame %d: body corrupted", w, i)
				}
				next[w]++
			}
			// The reader has every frame, so nothing is left queued; once the
			// write loop has stopped, it has accounted for its last write.
			c.close(nil)
			<-c.writerDone
			if n := st.bytesOut.Load(); n == 0 || c.outBytes.Load() != 0 {
				t.Fatalf("bytesOut %d, outBytes %d", n, c.outBytes.Load())
			}
		})
	}
}
