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
	"github.com/rocketstore/rocketstore/engine"
)

// ReplicatedBound names, among ReplicatedOptions.LogStores, the bound of a
// replicated group on this host rather than a Raft log store: three
// nodes with no consensus (no terms, indexes or commit points). Each send
// is shipped over loopback TCP to three logs, one a node, while the first
// node's broker stores it without a sync (as a replica applies an entry:
// the log is what is synced); each log appends whatever arrived since its
// last write to one preallocated file with one pwrite and one sync (the
// CommitLog's primitives under SYNC_FLUSH) and acknowledges it, and the
// send is answered once two of the three logs synced it. That is one
// synced write per replica, the first node's overlapping the others' (as
// go.etcd.io/raft's asynchronous storage writes allow), logs that write
// nothing but the sends' bytes, and the sends answered as soon as a
// majority holds them: what replicating synced sends to a majority of
// three costs here at least, on the same disk and cores as the group. A
// group faster than it would show the bound wrong.
const ReplicatedBound = "bound"

// mirrorFrame is a send shipped to a mirror: its length (of what
// follows), the producer, the producer's sequence number, its queue.
const mirrorFrame = 4 + 4 + 8 + 4

// mirror is one node's log in the bound: a file fed by a loopback
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

// mirrorLink is the sending side of one mirror: a writer that
// coalesces the frames queued while it writes, as a Raft transport
// batches AppendEntries, and a reader of the acknowledgements.
type mirrorLink struct {
	conn    net.Conn
	sends   chan []byte
	writing sync.WaitGroup
	reading sync.WaitGroup
}

// boundGroup is the bound's broker, its three logs and their links.
type boundGroup struct {
	first   *broker.Broker // the first node's store, not synced a send
	mirrors []*mirror
	links   []*mirrorLink
	// acks[p] receives the sequence numbers the logs acknowledged for
	// producer p (one producer has one send in flight).
	acks []chan uint64
	// failed is closed with failErr set when a mirror's link fails.
	failed   chan struct{}
	failOnce sync.Once
	failErr  error
	closing  atomic.Bool
}

func (g *boundGroup) fail(err error) {
	g.failOnce.Do(func() { g.failErr = err; close(g.failed) })
}

// openBound opens the bound's broker and logs under parent, each on its
// own directory, as a group's replicas are.
func openBound(parent string, bc broker.Config, producers int) (*boundGroup, error) {
	g := &boundGroup{acks: make([]chan uint64, producers), failed: make(chan struct{})}
	for i := range g.acks {
		g.acks[i] = make(chan uint64, 8)
	}
	fsys, err := mmap.New(filepath.Join(parent, "n1"))
	if err != nil {
		return nil, err
	}
	bc.Store.FlushDiskType = engine.AsyncFlush // as a replica applies: its log is what is synced
	if g.first, err = broker.Open(fsys, bc); err != nil {
		return nil, err
	}
	for i := range 3 {
		m := &mirror{}
		fsys, err := mmap.New(filepath.Join(parent, fmt.Sprintf("n%d-log", i+1)))
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
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return err
	}
	if m.conn, err = ln.Accept(); err != nil {
		_ = conn.Close()
		return err
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		// A log that stops fails the group (its connection's end reaches
		// the sending side's reader); once the group closes, the log's
		// ending is not an error of the run.
		if err := m.serve(); err != nil && !g.closing.Load() {
			m.err = err
		}
		_ = m.conn.Close()
	}()
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

// serve reads the sending side's connection and, until it closes,
// appends the frames that arrived while it wrote the last ones to the log
// with one pwrite and one sync, then acknowledges them in one write: the
// group commit of a follower that writes nothing but the sends' bytes.
func (m *mirror) serve() error {
	conn := m.conn
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
			if errors.Is(err, net.ErrClosed) {
				return nil // closed under it, as a read finds it: the sending side reports it
			}
			return err
		}
	}
}

// send ships req to the logs and stores it on the first node's broker,
// and returns once the broker stored it and two logs acknowledged it.
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
	for synced := 0; ; {
		select {
		case got := <-g.acks[p]:
			if got != seq {
				continue // a log's acknowledgement of an earlier send
			}
			if synced++; synced == 2 {
				return res
			}
		case <-g.failed:
			return broker.SendResult{Code: broker.SystemError, Remark: g.failErr.Error()}
		}
	}
}

// close stops the links and the logs and closes the broker; no send
// may be under way.
func (g *boundGroup) close() error {
	var errs []error
	g.closing.Store(true)
	g.fail(errors.New("bound: closed"))
	for _, l := range g.links {
		close(l.sends)
		l.writing.Wait() // the writer flushed what was queued
		_ = l.conn.Close()
		l.reading.Wait()
	}
	for _, m := range g.mirrors {
		if m.ln == nil {
			continue // openBound failed before its serve loop started
		}
		_ = m.ln.Close()
		if m.conn != nil {
			_ = m.conn.Close()
		}
		m.wg.Wait()
		if m.err != nil {
			errs = append(errs, fmt.Errorf("bound: a log: %w", m.err))
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
	// Each node's log bytes and syncs, and the first node's CommitLog
	// (flushed, not synced a send).
	writes := func() []nodeWrites {
		var out []nodeWrites
		for _, m := range g.mirrors {
			out = append(out, nodeWrites{raftBytes: uint64(m.written.Load()), raftSyncs: uint64(m.syncs.Load()),
				clSyncs: -1, logName: "log"})
		}
		out[0].commitLog = g.first.Store().CommitLog().MaxOffset()
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
