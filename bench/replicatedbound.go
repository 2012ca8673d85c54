package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path/filepath"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/record"
)

// ReplicatedBound names, among ReplicatedOptions.LogStores, the bound of a
// replicated group on this host rather than a Raft log store: three
// SYNC_FLUSH brokers where the first takes each send and, at the same
// time, ships it over loopback TCP to the other two, which store it as a
// send of their own; the send is answered once the first has stored it
// and one of the others has. That is one write per replica with the
// leader's write overlapping replication, and nothing of consensus
// (terms, indexes, commit points, the state machine): what any
// replication of synced writes to a majority of three costs here at
// least, on the same disk and cores as the group. A group faster than
// it would show the bound wrong.
const ReplicatedBound = "bound"

// mirrorFrame is a send shipped to a mirror: its length (of what
// follows), the producer, the producer's sequence number, its queue.
const mirrorFrame = 4 + 4 + 8 + 4

// mirror is one follower of the bound: a broker fed by a loopback
// connection.
type mirror struct {
	b    *broker.Broker
	conn net.Conn // the follower's side
	ln   net.Listener
	wg   sync.WaitGroup
	err  error // the serve loop's, once wg is done
}

// mirrorLink is the first broker's side of one mirror: a writer that
// coalesces the frames queued while it writes, as a Raft transport
// batches AppendEntries, and a reader of the acknowledgements.
type mirrorLink struct {
	conn    net.Conn
	sends   chan []byte
	writing sync.WaitGroup
	reading sync.WaitGroup
}

// boundGroup is the bound's three brokers and their links.
type boundGroup struct {
	first   *broker.Broker
	mirrors []*mirror
	links   []*mirrorLink
	// acks[p] receives the sequence numbers the mirrors acknowledged for
	// producer p (one producer has one send in flight).
	acks []chan uint64
	// failed is closed with failErr set when a mirror's link fails.
	failed   chan struct{}
	failOnce sync.Once
	failErr  error
}

func (g *boundGroup) fail(err error) {
	g.failOnce.Do(func() { g.failErr = err; close(g.failed) })
}

// openBound opens the bound's brokers under parent, each on its own
// directory, as a group's replicas are.
func openBound(parent string, bc broker.Config, producers int) (*boundGroup, error) {
	g := &boundGroup{acks: make([]chan uint64, producers), failed: make(chan struct{})}
	for i := range g.acks {
		g.acks[i] = make(chan uint64, 4)
	}
	open := func(name string) (*broker.Broker, error) {
		fsys, err := mmap.New(filepath.Join(parent, name))
		if err != nil {
			return nil, err
		}
		return broker.Open(fsys, bc)
	}
	var err error
	if g.first, err = open("n1"); err != nil {
		return nil, err
	}
	for i := range 2 {
		m := &mirror{}
		if m.b, err = open(fmt.Sprintf("n%d", i+2)); err != nil {
			_ = g.close()
			return nil, err
		}
		g.mirrors = append(g.mirrors, m)
		if err = g.connect(m); err != nil {
			_ = g.close()
			return nil, err
		}
	}
	return g, nil
}

// connect starts m's serve loop on a loopback listener and the first
// broker's link to it.
func (g *boundGroup) connect(m *mirror) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	m.ln = ln
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.err = m.serve()
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return err
	}
	l := &mirrorLink{conn: conn, sends: make(chan []byte, len(g.acks))}
	g.links = append(g.links, l)
	l.writing.Add(1)
	l.reading.Add(1)
	go func() { defer l.writing.Done(); l.write(g) }()
	go func() { defer l.reading.Done(); l.readAcks(g) }()
	return nil
}

// write sends the queued frames, flushing once the queue is empty.
func (l *mirrorLink) write(g *boundGroup) {
	w := bufio.NewWriterSize(l.conn, 256<<10)
	for f := range l.sends {
		if _, err := w.Write(f); err != nil {
			g.fail(fmt.Errorf("bound: ship to a mirror: %w", err))
			return
		}
		if len(l.sends) == 0 {
			if err := w.Flush(); err != nil {
				g.fail(fmt.Errorf("bound: ship to a mirror: %w", err))
				return
			}
		}
	}
}

// readAcks hands each acknowledgement (producer, sequence) to its
// producer. The connection's end, even a clean one, fails the group: a
// mirror lost stops the sends that would otherwise go on with one.
func (l *mirrorLink) readAcks(g *boundGroup) {
	r := bufio.NewReader(l.conn)
	var ack [12]byte
	for {
		if _, err := io.ReadFull(r, ack[:]); err != nil {
			g.fail(fmt.Errorf("bound: a mirror's acknowledgement: %w", err))
			return
		}
		p := binary.BigEndian.Uint32(ack[:4])
		if int(p) >= len(g.acks) {
			g.fail(fmt.Errorf("bound: acknowledgement for producer %d of %d", p, len(g.acks)))
			return
		}
		select {
		case g.acks[p] <- binary.BigEndian.Uint64(ack[4:]):
		case <-g.failed:
			return
		}
	}
}

// serve accepts the first broker's connection and stores each send it
// ships, concurrently (so that SYNC_FLUSH groups them into shared syncs
// as it does the first broker's), answering (producer, sequence) once
// stored.
func (m *mirror) serve() error {
	conn, err := m.ln.Accept()
	if err != nil {
		return err
	}
	m.conn = conn
	r := bufio.NewReaderSize(conn, 256<<10)
	var wmu sync.Mutex
	var sends sync.WaitGroup
	defer sends.Wait()
	var hdr [mirrorFrame]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		n := binary.BigEndian.Uint32(hdr[:4])
		if n < mirrorFrame-4 || n > 64<<20 {
			return fmt.Errorf("bound: frame of %d bytes", n)
		}
		body := make([]byte, n-(mirrorFrame-4))
		if _, err := io.ReadFull(r, body); err != nil {
			return err
		}
		ack := make([]byte, 12)
		copy(ack, hdr[4:16])
		queue := int32(binary.BigEndian.Uint32(hdr[16:20]))
		sends.Add(1)
		go func() {
			defer sends.Done()
			res := m.b.SendMessage(context.Background(), boundRequest(queue, body))
			if res.Code != broker.Success {
				_ = conn.Close() // the first broker's reader reports it
				return
			}
			wmu.Lock()
			_, _ = conn.Write(ack) // a failed write closes the reader, which reports it
			wmu.Unlock()
		}()
	}
}

func boundRequest(queue int32, body []byte) *broker.SendRequest {
	return &broker.SendRequest{ProducerGroup: "bench", Topic: "BenchReplicated", DefaultTopic: record.DefaultTopic,
		DefaultTopicQueueNums: 8, QueueID: queue, Body: body, BornHost: netip.MustParseAddrPort("127.0.0.1:1")}
}

// send stores req on the first broker while shipping it to the mirrors,
// and returns once the first broker stored it and a mirror acknowledged
// it.
func (g *boundGroup) send(p int, seq uint64, req *broker.SendRequest) broker.SendResult {
	f := make([]byte, mirrorFrame+len(req.Body))
	binary.BigEndian.PutUint32(f[:4], uint32(len(f)-4))
	binary.BigEndian.PutUint32(f[4:8], uint32(p))
	binary.BigEndian.PutUint64(f[8:16], seq)
	binary.BigEndian.PutUint32(f[16:20], uint32(req.QueueID))
	copy(f[mirrorFrame:], req.Body)
	for _, l := range g.links {
		select {
		case l.sends <- f:
		case <-g.failed:
			return broker.SendResult{Code: broker.SystemError, Remark: g.failErr.Error()}
		}
	}
	res := g.first.SendMessage(context.Background(), req)
	if res.Code != broker.Success {
		return res
	}
	for {
		select {
		case got := <-g.acks[p]:
			if got == seq {
				return res
			}
			// The other mirror's acknowledgement of an earlier send.
		case <-g.failed:
			return broker.SendResult{Code: broker.SystemError, Remark: g.failErr.Error()}
		}
	}
}

// close stops the links and the mirrors and closes the brokers; no send
// may be under way.
func (g *boundGroup) close() error {
	var errs []error
	g.fail(errors.New("bound: closed"))
	for _, l := range g.links {
		close(l.sends)
		l.writing.Wait() // the writer flushed what was queued
		_ = l.conn.Close()
		l.reading.Wait()
	}
	for _, m := range g.mirrors {
		_ = m.ln.Close()
		if m.conn != nil {
			_ = m.conn.Close()
		}
		m.wg.Wait()
		if m.err != nil && !errors.Is(m.err, net.ErrClosed) {
			errs = append(errs, m.err)
		}
		errs = append(errs, m.b.Close())
	}
	if g.first != nil {
		errs = append(errs, g.first.Close())
	}
	return errors.Join(errs...)
}

// sendFor runs sendWith for d.
func (o ReplicatedOptions) sendFor(ctx context.Context, fn func(p int, req *broker.SendRequest) (broker.SendResult, bool), body int, d time.Duration) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return o.sendWith(ctx, fn, body)
}

// runBound warms up, then sends for o.Time through the bound.
func (o ReplicatedOptions) runBound(ctx context.Context, parent string, bc broker.Config, body int) (replRun, error) {
	g, err := openBound(parent, bc, o.Producers)
	if err != nil {
		return replRun{}, err
	}
	defer func() { _ = g.close() }() // scratch brokers, after the run
	seqs := make([]uint64, o.Producers)
	send := func(p int, req *broker.SendRequest) (broker.SendResult, bool) {
		seqs[p]++
		return g.send(p, seqs[p], req), true
	}
	if _, err := o.sendFor(ctx, send, body, o.Warmup); err != nil {
		return replRun{}, fmt.Errorf("warm-up: %w", err)
	}
	cl := func() []int64 {
		out := []int64{g.first.Store().CommitLog().MaxOffset()}
		for _, m := range g.mirrors {
			out = append(out, m.b.Store().CommitLog().MaxOffset())
		}
		return out
	}
	before := cl()
	r, err := o.sendFor(ctx, send, body, o.Time)
	r.Backend = "mmap×3 " + ReplicatedBound
	after := cl()
	nodes := make([]nodeWrites, len(after))
	for i := range after {
		nodes[i] = nodeWrites{commitLog: after[i] - before[i], clSyncs: -1}
	}
	return replRun{Result: r, nodes: nodes}, err
}
