package bench

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// This file is the server load generator of `rocketstore bench --server`:
// one driver that loads a messaging server over TCP loopback with C
// producer connections × W messages in flight each, and optionally one
// consumer per producer stream, and measures msgs/s, ack and send→consume
// latency, and the server process's CPU per message. The same driver runs
// against rocketstore (the remoting protocol, RemotingTarget) and NATS
// JetStream (bench/nats implements LoadTarget), so both systems see the
// same shape of load from the same code.

// GroupServer is the workload group of server-load results.
const GroupServer = "server"

// LoadTarget is a server under load: it opens producers and consumers and
// reports the server process's CPU time.
type LoadTarget interface {
	// Producer opens producer connection i (its own stream or queue i).
	Producer(i int) (LoadProducer, error)
	// Consume starts consuming stream i from its beginning, calling fn
	// for each message body, until stop is called. fn may be called from
	// several goroutines at once.
	Consume(i int, fn func(body []byte)) (stop func(), err error)
	// ServerCPU returns the CPU time (user + system) the server process
	// has used so far.
	ServerCPU() (time.Duration, error)
}

// LoadProducer is one producer connection.
type LoadProducer interface {
	// Send sends body (which it may not keep after returning) and calls
	// done once when the server acknowledges it (err nil) or refuses it.
	// done is called from one goroutine per producer.
	Send(body []byte, done func(err error)) error
	// Close closes the connection; pending sends may be dropped.
	Close() error
}

// ServerLoad sizes one server-load run.
type ServerLoad struct {
	Conns     int           // producer connections
	Window    int           // messages in flight per connection
	Body      int           // body bytes (at least 16)
	Duration  time.Duration // how long producers send
	Consumers bool          // one consumer per producer stream
	Flush     string        // "async" or "sync", for the result only
}

// ServerResult is the outcome of a server-load run on one system.
type ServerResult struct {
	System string `json:"system"` // rocketstore or nats
	// Shape says how the target spreads a stream (rocketstore: its
	// queues and pull batch; nats: one subject a stream).
	Shape     string   `json:"shape,omitempty"`
	Body      int      `json:"body"`
	Conns     int      `json:"conns"`
	Window    int      `json:"window"`
	Flush     string   `json:"flush"`
	Consumers bool     `json:"consumers"`
	Acked     int64    `json:"acked"`
	Failed    int64    `json:"failed"`
	Consumed  int64    `json:"consumed"`
	Seconds   float64  `json:"seconds"`
	MsgsPerS  float64  `json:"msgs_per_s"`
	Ack       *Latency `json:"ack_latency"`
	Consume   *Latency `json:"consume_latency,omitempty"`
	// Timeline is send→consume latency by send time, a TimelineSlice a
	// bucket (with consumers).
	Timeline []TimelineBucket `json:"timeline,omitempty"`
	// ConsumeAfterStart is send→consume of the messages sent after the
	// run's first StartSlices timeline slices: the run without its cold
	// start, measured alike for every system. Reported beside Consume,
	// never instead of it.
	ConsumeAfterStart *Latency `json:"consume_latency_after_start,omitempty"`
	// CPUPerMsg is the server process's CPU µs per acknowledged message.
	CPUPerMsg float64 `json:"server_cpu_us_per_msg"`
	// ClientCPUPerMsg is the driver process's CPU µs per acknowledged
	// message: the producers' and consumers' client code (RemotingTarget's
	// raw remoting, nats.go, or the official RocketMQ client in e2e) with
	// the driver's own bookkeeping. Meaningful only when the server runs
	// in another process.
	ClientCPUPerMsg float64 `json:"client_cpu_us_per_msg"`
	Err             string  `json:"error,omitempty"`
}

// RunServerLoad drives t with l and returns what it measured. Every
// message carries its send time (Stamp) and a sequence number; the run
// waits for outstanding acks and, with consumers, for every acknowledged
// message to be consumed (at most 30 s each).
func RunServerLoad(t LoadTarget, system string, l ServerLoad) ServerResult {
	r := ServerResult{System: system, Body: l.Body, Conns: l.Conns, Window: l.Window, Flush: l.Flush, Consumers: l.Consumers}
	if err := runServerLoad(t, l, &r); err != nil {
		r.Err = err.Error()
	}
	return r
}

func runServerLoad(t LoadTarget, l ServerLoad, r *ServerResult) error {
	if l.Body < 16 {
		return fmt.Errorf("bench: server load body %d bytes, need at least 16", l.Body)
	}
	// One histogram per consumer stream: a single one behind a mutex
	// shared by every stream turned into a lock convoy on a loaded
	// machine (each contended Lock a goroutine hand-off), which throttled
	// the consumers and showed as seconds of send→consume latency.
	var consumed atomic.Int64
	// startStamp is the run's start as a Stamp, for the timeline; set
	// before the first send.
	var startStamp atomic.Int64
	chists := make([]*streamHistogram, l.Conns)
	if l.Consumers {
		for i := range l.Conns {
			h := &streamHistogram{h: NewHistogram()}
			chists[i] = h
			stop, err := t.Consume(i, func(body []byte) {
				d := Since(body)
				sent := time.Duration(int64(binary.LittleEndian.Uint64(body)) - startStamp.Load())
				h.mu.Lock()
				h.h.Record(d)
				h.tl.record(sent, d)
				h.mu.Unlock()
				consumed.Add(1)
			})
			if err != nil {
				return fmt.Errorf("consumer %d: %w", i, err)
			}
			defer stop()
		}
	}
	producers := make([]LoadProducer, l.Conns)
	for i := range producers {
		p, err := t.Producer(i)
		if err != nil {
			return fmt.Errorf("producer %d: %w", i, err)
		}
		defer func() { _ = p.Close() }() // after the run; its sends were counted
		producers[i] = p
	}
	var (
		acked, failed atomic.Int64
		lastAck       atomic.Int64 // ns since start
		hmu           sync.Mutex
		ahist         = NewHistogram()
		acktls        []*timeline
		firstErr      atomic.Value
		wg            sync.WaitGroup
	)
	cpu0, err := t.ServerCPU()
	if err != nil {
		return err
	}
	own0, err := ProcessCPU(os.Getpid())
	if err != nil {
		return err
	}
	startStamp.Store(int64(time.Since(epoch)))
	start := time.Now()
	deadline := start.Add(l.Duration)
	for i, p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tokens := make(chan struct{}, l.Window)
			for range l.Window {
				tokens <- struct{}{}
			}
			h := NewHistogram() // recorded from the producer's ack goroutine
			var tl timeline     // likewise
			body := make([]byte, l.Body)
			for j := range body[16:] {
				body[16+j] = byte('a' + j%26)
			}
			seq := uint64(i) << 40
			for time.Now().Before(deadline) {
				<-tokens
				seq++
				binary.BigEndian.PutUint64(body[8:], seq)
				Stamp(body)
				sent := time.Since(epoch)
				err := p.Send(body, func(err error) {
					if err != nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, err)
					} else {
						d := time.Since(epoch) - sent
						h.Record(d)
						tl.record(sent-time.Duration(startStamp.Load()), d)
						acked.Add(1)
						lastAck.Store(int64(time.Since(start)))
					}
					tokens <- struct{}{}
				})
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					failed.Add(1)
					break
				}
			}
			// Wait for the outstanding acks.
			wait := time.After(30 * time.Second)
			for range l.Window {
				select {
				case <-tokens:
				case <-wait:
					firstErr.CompareAndSwap(nil, fmt.Errorf("producer %d: acks missing 30 s after the run", i))
				}
			}
			hmu.Lock()
			ahist.h.Merge(h.h)
			acktls = append(acktls, &tl)
			hmu.Unlock()
		}()
	}
	wg.Wait()
	cpu1, err := t.ServerCPU()
	if err != nil {
		return err
	}
	own1, err := ProcessCPU(os.Getpid())
	if err != nil {
		return err
	}
	r.Acked, r.Failed = acked.Load(), failed.Load()
	r.Seconds = time.Duration(lastAck.Load()).Seconds()
	if r.Seconds > 0 {
		r.MsgsPerS = float64(r.Acked) / r.Seconds
	}
	if r.Acked > 0 {
		r.CPUPerMsg = float64((cpu1 - cpu0).Microseconds()) / float64(r.Acked)
		r.ClientCPUPerMsg = float64((own1 - own0).Microseconds()) / float64(r.Acked)
	}
	r.Ack = ahist.Latency()
	if l.Consumers {
		until := time.Now().Add(30 * time.Second)
		for consumed.Load() < r.Acked && time.Now().Before(until) {
			time.Sleep(10 * time.Millisecond)
		}
		r.Consumed = consumed.Load()
		all := NewHistogram()
		tls := make([]*timeline, 0, len(chists))
		for _, h := range chists {
			h.mu.Lock() // held until the timelines are merged
			all.h.Merge(h.h.h)
			tls = append(tls, &h.tl)
		}
		r.Consume = all.Latency()
		consume := mergeTimelines(tls)
		r.Timeline = makeTimeline(consume, mergeTimelines(acktls))
		r.ConsumeAfterStart = latencyFrom(consume, StartSlices)
		for _, h := range chists {
			h.mu.Unlock()
		}
		if r.Consumed < r.Acked {
			return fmt.Errorf("%d of %d acknowledged messages consumed within 30 s", r.Consumed, r.Acked)
		}
	}
	if e, ok := firstErr.Load().(error); ok {
		return e
	}
	return nil
}

// streamHistogram is one consumer stream's send→consume histogram.
type streamHistogram struct {
	mu sync.Mutex
	h  *Histogram
	tl timeline
}

// ProcessCPU returns the CPU time (user + system) process pid has used,
// from /proc/pid/stat.
func ProcessCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// Fields after the command name (which may hold spaces) start after
	// the last ')'; utime and stime are fields 14 and 15 (1-based).
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("bench: /proc/%d/stat: no command field", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("bench: /proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bench: /proc/%d/stat: bad utime/stime", pid)
	}
	const clkTck = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / clkTck, nil
}
