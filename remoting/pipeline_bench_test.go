package remoting

import (
	"bufio"
	"context"
	"net"
	"sync"
	"testing"
)

// BenchmarkServerPipelined is the server's whole request path over
// loopback: conns connections each keep window SEND_MESSAGE_V2-shaped
// requests in flight against a handler that answers at once. It reports
// the frames each socket write carried (frames/write).
func BenchmarkServerPipelined(b *testing.B) {
	const conns, window = 4, 256
	mux := NewMux()
	mux.RegisterFunc(310, func(_ context.Context, _ *Conn, req *RemotingCommand) (*RemotingCommand, error) {
		resp := req.NewResponse(CodeSuccess, "")
		resp.SetExt("msgId", "7F00000100002A9F0000000000000000")
		resp.SetExt("queueId", "0")
		resp.SetExt("queueOffset", "1")
		return resp, nil
	})
	srv, err := NewServer(mux, Options{Logger: quietLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	addr, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	frame, err := sendMessageV2Request().MarshalFrame()
	if err != nil {
		b.Fatal(err)
	}
	per := b.N/conns + 1
	b.SetBytes(int64(len(frame)))
	b.ResetTimer()
	var wg sync.WaitGroup
	for range conns {
		nc, err := net.Dial("tcp", addr.String())
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		tokens := make(chan struct{}, window)
		for range window {
			tokens <- struct{}{}
		}
		wg.Add(2)
		go func() { // writer: one frame per token, batched by bufio
			defer wg.Done()
			bw := bufio.NewWriterSize(nc, 64<<10)
			for i := 0; i < per; i++ {
				select {
				case <-tokens:
				default:
					if bw.Flush() != nil {
						return
					}
					<-tokens
				}
				if _, err := bw.Write(frame); err != nil {
					return
				}
			}
			_ = bw.Flush()
		}()
		go func() {
			defer wg.Done()
			br := bufio.NewReaderSize(nc, 64<<10)
			for i := 0; i < per; i++ {
				if _, err := ReadFrame(br, 0); err != nil {
					b.Error(err)
					return
				}
				tokens <- struct{}{}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	st := srv.Stats()
	if st.Writes > 0 {
		b.ReportMetric(float64(st.FramesOut)/float64(st.Writes), "frames/write")
	}
}
