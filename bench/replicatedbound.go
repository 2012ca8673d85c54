package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/broker"
)

// ReplicatedBound names, among ReplicatedOptions.LogStores, the bound of a
// replicated group on this host rather than a Raft log store. The first
// of three nodes is a SYNC_FLUSH broker that takes each send and, at the
// same time, ships it over loopback TCP to the other two; each of those
// appends what arrived since its last write to one preallocated file
// with one pwrite and one sync (the primitives of the CommitLog under
// SYNC_FLUSH) and acknowledges it. A send is answered once the broker
// stored it and one of the others synced it. That is one write per
// replica, the leader's write overlapping replication, and the followers
// doing the least any replica must (no record encoding, no ConsumeQueue,
// no consensus: terms, indexes, commit points): what replicating synced
// writes to a majority of three costs here at least, on the same disk and
// cores as the group. A group faster than it would show the bound wrong.
const ReplicatedBound = "bound"

// mirrorFrame is a send shipped to a mirror: its length (of what
// follows), the producer, the producer's sequence number, its queue.
const mirrorFrame = 4 + 4 + 8 + 4

// mirror is one follower of the bound: a log file fed by a loopback
// connection.
type mirror struct {
	log     backend.Segment
	written atomic.Int64 // bytes written to the log
	syncs   atomic.Int64
	conn    net.Conn // the follower's side
	ln      net.Listener
	wg      sync.WaitGroup
	err     error // the serve loop's, once wg is done
}

// mirrorLogSize is each mirror's log file, written round and round: the
// bound keeps nothing, and a CommitLog file is as large.
const mirrorLogSize = 1 << 30

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
		fsys, err := mmap.New(filepath.Join(parent, fmt.Sprintf("n%d", i+2)))
		if err != nil {
			_ = g.close()
			return nil, err
		}
		if m.log, err = fsys.Create("mirror.log", mirrorLogSize); err != nil {
			_ = g.close()
			return nil, err
		}
		if _, ok := m.log.(backend.Pwriter); !ok {
			_ = g.close()
			return nil, errors.New("bound: the mmap backend's segments no longer pwrite")
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

// serve accepts the first broker's connection and, until it closes,
// appends the frames that arrived while it wrote the last ones to the log
// with one pwrite and one sync, then acknowledges them in one write: the
// group commit of a follower that writes nothing but the sends' bytes.
func (m *mirror) serve() error {
	conn, err := m.ln.Accept()
	if err != nil {
		return err
	}
	m.conn = conn
	r := bufio.NewReaderSize(conn, 1<<20)
	var batch, acks []byte
	var at int64 // where the next batch goes in the log
	for {
		batch, acks = batch[:0], acks[:0]
		// One frame, waiting for it, then every whole frame already read.
		for len(batch) == 0 || r.Buffered() >= 4 {
			hdr, err := r.Peek(4)
			if err != nil {
				if len(batch) > 0 {
					break // write what came; the next read reports it
				}
				if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
					return nil
				}
				return err
			}
			n := int(binary.BigEndian.Uint32(hdr))
			if n < mirrorFrame-4 || n > 64<<20 {
				return fmt.Errorf("bound: frame of %d bytes", n)
			}
			if len(batch) > 0 && r.Buffered() < 4+n {
				break
			}
			start := len(batch)
			batch = append(batch, make([]byte, 4+n)...)
			if _, err := io.ReadFull(r, batch[start:]); err != nil {
				return err
			}
			acks = append(acks, batch[start+4:start+16]...)
		}
		if at+int64(len(batch)) > mirrorLogSize {
			at = 0
		}
		if _, err := m.log.(backend.Pwriter).Pwrite([][]byte{batch}, at); err != nil {
			return err
		}
		if err := m.log.Sync(at, int64(len(batch))); err != nil {
			return err
		}
		at += int64(len(batch))
		m.syncs.Add(1)
		m.written.Add(int64(len(batch)))
		if _, err := conn.Write(acks); err != nil {
			return err
		}
	}
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
		if m.log != nil {
			errs = append(errs, m.log.Close())
		}
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
	// Each node's log end and syncs: the first broker's CommitLog (syncs
	// not counted), the mirrors' logs.
	writes := func() []nodeWrites {
		out := []nodeWrites{{commitLog: g.first.Store().CommitLog().MaxOffset(), clSyncs: -1}}
		for _, m := range g.mirrors {
			out = append(out, nodeWrites{raftBytes: uint64(m.written.Load()), raftSyncs: uint64(m.syncs.Load()),
				clSyncs: -1, logName: "mirror log"})
		}
		return out
	}
	before := writes()
	r, err := o.sendFor(ctx, send, body, o.Time)
	r.Backend = "mmap×3 " + ReplicatedBound
	nodes := writes()
	for i, b := range before {
		nodes[i].commitLog -= b.commitLog
		nodes[i].raftBytes -= b.raftBytes
		nodes[i].raftSyncs -= b.raftSyncs
	}
	return replRun{Result: r, nodes: nodes}, err
}
