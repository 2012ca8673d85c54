package cluster

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"time"

	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/rocketstore/rocketstore/record"
)

// Repair protocol, on the Raft port (TCPTransport):
//
//	request:  0xF0 | OP uint8 | OFFSET int64 | LENGTH int32
//	response: STATUS uint8 (0 ok) | LENGTH uint32 | LENGTH bytes (op 2, 3) or CRC32 uint32 (op 1) or an error text
//
// op 1 is the CRC32 of CommitLog bytes [OFFSET, OFFSET+LENGTH), op 2 the
// bytes, op 3 the whole valid record at OFFSET. A replica serves only
// what it has applied: the committed prefix, identical on every replica.
const (
	opCRC    = 1
	opBytes  = 2
	opRecord = 3
)

// maxRepairRead bounds one request.
const maxRepairRead = 64 << 20

// serveRepair answers one connection's requests.
func (n *Node) serveRepair(c net.Conn, br *bufio.Reader) {
	defer c.Close()
	var req [14]byte
	for {
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		if _, err := io.ReadFull(br, req[:]); err != nil {
			return
		}
		if req[0] != repairMagic {
			return
		}
		off, size := int64(binary.BigEndian.Uint64(req[2:])), int64(int32(binary.BigEndian.Uint32(req[10:])))
		if isAdminOp(req[1]) {
			if err := n.serveAdmin(c, br, req[1], size); err != nil {
				return
			}
			continue
		}
		out, err := n.repairAnswer(req[1], off, size)
		var resp []byte
		if err != nil {
			resp = append([]byte{1}, binary.BigEndian.AppendUint32(nil, uint32(len(err.Error())))...)
			resp = append(resp, err.Error()...)
		} else {
			resp = append([]byte{0}, binary.BigEndian.AppendUint32(nil, uint32(len(out)))...)
			resp = append(resp, out...)
		}
		if _, err := c.Write(resp); err != nil {
			return
		}
	}
}

func (n *Node) repairAnswer(op byte, off, size int64) ([]byte, error) {
	cl := n.fsm.store.CommitLog()
	applied := n.AppliedOffset()
	if op == opRecord {
		if off >= applied {
			return nil, fmt.Errorf("offset %d not applied here (applied to %d)", off, applied)
		}
		rec, err := readRecord(cl, off)
		if err != nil {
			return nil, err
		}
		if _, err := record.Check(rec, off, true); err != nil {
			return nil, fmt.Errorf("damaged here too: %w", err)
		}
		return rec, nil
	}
	if size <= 0 || size > maxRepairRead || off < cl.MinOffset() || off+size > applied {
		return nil, fmt.Errorf("range [%d, %d) not held or not applied here (applied to %d)", off, off+size, applied)
	}
	b := make([]byte, size)
	for got := int64(0); got < size; {
		k := cl.ReadAt(b[got:], off+got)
		if k == 0 {
			return nil, fmt.Errorf("offset %d not readable", off+got)
		}
		got += int64(k)
	}
	if op == opCRC {
		return binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(b)), nil
	}
	return b, nil
}

// askPeer sends one repair request to the replica at addr over plain
// TCP (a TCPTransport's node dials as its transport does: useFor).
func askPeer(ctx context.Context, addr string, op byte, off, size int64) ([]byte, error) {
	return dialer(net.Dialer{}, nil).askPeer(ctx, addr, op, off, size)
}

// askPeer sends one repair request to the replica at addr.
func (dial dialFunc) askPeer(ctx context.Context, addr string, op byte, off, size int64) ([]byte, error) {
	c, err := dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	} else {
		_ = c.SetDeadline(time.Now().Add(time.Minute))
	}
	req := []byte{repairMagic, op}
	req = binary.BigEndian.AppendUint64(req, uint64(off))
	req = binary.BigEndian.AppendUint32(req, uint32(size))
	if _, err := c.Write(req); err != nil {
		return nil, err
	}
	var h [5]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		return nil, err
	}
	l := binary.BigEndian.Uint32(h[1:])
	if l > maxRepairRead {
		return nil, fmt.Errorf("answer of %d bytes", l)
	}
	b := make([]byte, l)
	if _, err := io.ReadFull(c, b); err != nil {
		return nil, err
	}
	if h[0] != 0 {
		return nil, fmt.Errorf("replica %s: %s", addr, b)
	}
	return b, nil
}

// peers returns the Raft addresses of the other members.
func (n *Node) peers() []string {
	fut := n.raft.GetConfiguration()
	if fut.Error() != nil {
		return nil
	}
	var out []string
	for _, s := range fut.Configuration().Servers {
		if string(s.ID) != n.ccfg.NodeID {
			out = append(out, string(s.Address))
		}
	}
	return out
}

// ScrubReport says what a scrub pass found.
type ScrubReport struct {
	// From and To are the CommitLog range checked.
	From, To int64
	// Records is the number of records checked locally.
	Records int
	// Repaired lists the offsets of the records rewritten from a replica.
	Repaired []int64
	// Disagree lists ranges whose bytes differ between replicas that
	// could not be settled (no majority); they are left as they are.
	Disagree []int64
}

// ErrNoRepair reports damage that no replica could repair.
var ErrNoRepair = errors.New("cluster: damaged record not repaired")

// Scrub checks the committed CommitLog range [from, to) (to <= the
// applied offset; 0 means it): every record against its own CRC, and
// every chunk of up to chunk bytes against the other replicas' CRC32. A
// damaged record is fetched from a replica that holds it whole and
// rewritten; a chunk whose bytes differ from what the other replicas
// agree on is rewritten from them record by record.
func (n *Node) Scrub(ctx context.Context, from, to, chunk int64) (ScrubReport, error) {
	cl := n.fsm.store.CommitLog()
	if to <= 0 || to > n.AppliedOffset() {
		to = n.AppliedOffset()
	}
	if chunk <= 0 {
		chunk = n.ccfg.ScrubBytes
	}
	from = max(from, cl.MinOffset())
	rep := ScrubReport{From: from, To: from}
	fileSize := cl.FileSize()
	for pos := from; pos < to; {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		end, err := n.scrubChunk(ctx, pos, min(to, pos+chunk, pos-pos%fileSize+fileSize), &rep)
		if err != nil {
			return rep, err
		}
		pos = end
		rep.To = end
	}
	return rep, nil
}

// scrubChunk checks the records from pos (a record boundary) up to at
// most limit and returns where the next chunk starts.
func (n *Node) scrubChunk(ctx context.Context, pos, limit int64, rep *ScrubReport) (int64, error) {
	cl := n.fsm.store.CommitLog()
	start := pos
	for pos < limit {
		rec, err := readRecord(cl, pos)
		var info record.Info
		if err == nil {
			info, err = record.Check(rec, pos, true)
		}
		if err != nil {
			if rec, err = n.repairRecord(ctx, pos, err); err != nil {
				return pos, err
			}
			rep.Repaired = append(rep.Repaired, pos)
			info, _ = record.Check(rec, pos, true)
		}
		rep.Records++
		if info.Blank {
			pos += cl.FileSize() - pos%cl.FileSize()
			break
		}
		if pos+int64(info.Size) > limit && pos > start {
			break
		}
		pos += int64(info.Size)
	}
	if pos > start {
		if err := n.compareChunk(ctx, start, pos, rep); err != nil {
			return pos, err
		}
	}
	return pos, nil
}

// repairRecord rewrites the damaged record at off from the first replica
// that has it whole.
func (n *Node) repairRecord(ctx context.Context, off int64, damage error) ([]byte, error) {
	var errs []error
	for _, p := range n.peers() {
		rec, err := n.ask(ctx, p, opRecord, off, 0)
		if err == nil {
			err = engineops.Of(n.fsm.store).RepairRecord(off, rec)
		}
		if err == nil {
			n.log.Warn("damaged CommitLog record rewritten from a replica", "offset", off, "replica", p, "damage", damage)
			n.repaired.Add(1)
			return rec, nil
		}
		errs = append(errs, err)
	}
	n.log.Error("damaged CommitLog record: no replica could repair it", "offset", off, "damage", damage, "err", errors.Join(errs...))
	return nil, fmt.Errorf("%w: at %d (%v): %w", ErrNoRepair, off, damage, errors.Join(errs...))
}

// compareChunk compares [from, to) with the other replicas' CRC32 and,
// when they agree with each other and not with this replica, rewrites
// the records that differ.
func (n *Node) compareChunk(ctx context.Context, from, to int64, rep *ScrubReport) error {
	local, err := n.repairAnswer(opCRC, from, to-from)
	if err != nil {
		return nil // moved out of range (retention); nothing to compare
	}
	var agreeing []string
	var crcs []string
	for _, p := range n.peers() {
		c, err := n.ask(ctx, p, opCRC, from, to-from)
		if err != nil {
			continue // down or behind: compare with the others
		}
		crcs = append(crcs, string(c))
		if string(c) != string(local) {
			agreeing = append(agreeing, p)
		}
	}
	if len(agreeing) == 0 {
		return nil
	}
	for _, c := range crcs {
		if c != crcs[0] {
			n.log.Error("replicas disagree on a committed CommitLog range; left as it is", "from", from, "to", to)
			rep.Disagree = append(rep.Disagree, from)
			return nil
		}
	}
	theirs, err := n.ask(ctx, agreeing[0], opBytes, from, to-from)
	if err != nil {
		return nil
	}
	cl := n.fsm.store.CommitLog()
	for pos := from; pos < to; {
		info, err := record.Check(theirs[pos-from:], pos, true)
		if err != nil || info.Blank {
			return nil
		}
		size := int64(info.Size)
		mine := make([]byte, size)
		cl.ReadAt(mine, pos)
		if string(mine) != string(theirs[pos-from:pos-from+size]) {
			if err := engineops.Of(n.fsm.store).RepairRecord(pos, theirs[pos-from:pos-from+size]); err != nil {
				return err
			}
			n.log.Warn("CommitLog record differing from the other replicas rewritten", "offset", pos, "replica", agreeing[0])
			n.repaired.Add(1)
			rep.Repaired = append(rep.Repaired, pos)
		}
		pos += size
	}
	return nil
}

// scrubLoop runs the background scrub: ScrubBytes every ScrubInterval,
// from the start of the CommitLog to the applied offset, then again.
func (n *Node) scrubLoop() {
	defer n.wg.Done()
	t := time.NewTicker(n.ccfg.ScrubInterval)
	defer t.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-n.stop
		cancel()
	}()
	var pos int64
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		if pos >= n.AppliedOffset() {
			pos = 0
		}
		rep, err := n.Scrub(ctx, pos, 0, n.ccfg.ScrubBytes)
		n.counters.scrubRuns.Add(1)
		n.counters.scrubbedBytes.Add(max(0, rep.To-rep.From))
		if err != nil && ctx.Err() == nil {
			n.log.Error("scrub", "from", pos, "err", err)
		}
		if rep.To > pos {
			pos = rep.To
		} else {
			pos = 0
		}
	}
}

// Repaired returns how many CommitLog records this node rewrote from a
// replica since it started.
func (n *Node) Repaired() int64 { return n.repaired.Load() }
