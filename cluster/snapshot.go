package cluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// Snapshot stream (what InstallSnapshot carries, and what a snapshot
// store keeps for one it received):
//
//	0 MAGIC "RSSNAP01" | 8 HEADERLEN uint32 | 12 HEADER (JSON snapHeader) | CommitLog bytes [From, To)
//
// A snapshot taken locally has From == To: the CommitLog itself is the
// data, synced when the snapshot was taken. The store streams the bytes
// from the CommitLog when the leader sends the snapshot.
const snapMagic = "RSSNAP01"

// maxSnapHeader bounds the header a receiver accepts.
const maxSnapHeader = 256 << 20

// snapHeader describes a snapshot: the group, the CommitLog range that
// follows the header, and the tables at To.
type snapHeader struct {
	Group groupEntry `json:"group"`
	From  int64      `json:"from"`
	To    int64      `json:"to"`
	// LastTs is the store timestamp of the record ending at To.
	LastTs int64      `json:"lastTs"`
	State  stateEntry `json:"state"`
}

func encodeSnapHeader(h *snapHeader) ([]byte, error) {
	j, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, len(snapMagic)+4+len(j))
	b = append(b, snapMagic...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(j)))
	return append(b, j...), nil
}

func writeSnapHeader(w io.Writer, h *snapHeader) error {
	b, err := encodeSnapHeader(h)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// ErrBadSnapshot reports a snapshot stream that does not decode.
var ErrBadSnapshot = errors.New("cluster: bad snapshot")

func readSnapHeader(r io.Reader) (*snapHeader, *bufio.Reader, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	var pre [len(snapMagic) + 4]byte
	if _, err := io.ReadFull(br, pre[:]); err != nil {
		return nil, nil, fmt.Errorf("%w: header: %v", ErrBadSnapshot, err)
	}
	if string(pre[:len(snapMagic)]) != snapMagic {
		return nil, nil, fmt.Errorf("%w: magic %q", ErrBadSnapshot, pre[:len(snapMagic)])
	}
	n := binary.BigEndian.Uint32(pre[len(snapMagic):])
	if n > maxSnapHeader {
		return nil, nil, fmt.Errorf("%w: header of %d bytes", ErrBadSnapshot, n)
	}
	j := make([]byte, n)
	if _, err := io.ReadFull(br, j); err != nil {
		return nil, nil, fmt.Errorf("%w: header: %v", ErrBadSnapshot, err)
	}
	var h snapHeader
	if err := json.Unmarshal(j, &h); err != nil {
		return nil, nil, fmt.Errorf("%w: header: %v", ErrBadSnapshot, err)
	}
	if h.From < 0 || h.To < h.From {
		return nil, nil, fmt.Errorf("%w: range [%d, %d)", ErrBadSnapshot, h.From, h.To)
	}
	return &h, br, nil
}

// install brings the CommitLog to h.To from the stream r of the bytes
// [h.From, h.To): records below this replica's end are compared byte for
// byte, later ones are re-put with their own store timestamp and host
// and the result compared with the stream. The caller holds f.mu.
func (f *fsm) install(h *snapHeader, r io.Reader) error {
	if f.records {
		return f.installRecords(h, r)
	}
	cl := f.store.CommitLog()
	local, fileSize := cl.MaxOffset(), cl.FileSize()
	if h.From > local {
		return fmt.Errorf("the leader's CommitLog starts at %d (older files were removed) and this replica's ends at %d: "+
			"it cannot be caught up record by record; give it a copy of a replica's store directory", h.From, local)
	}
	var head [8]byte
	var rec, mine []byte
	for pos := h.From; pos < h.To; {
		if err := f.deleteTopicsUpTo(h.State.DeletedTopics, local, pos); err != nil {
			return err
		}
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return fmt.Errorf("stream at %d: %w", pos, err)
		}
		size := int64(int32(be32(head[:])))
		if int32(be32(head[4:])) == record.MagicBlank {
			if size != fileSize-pos%fileSize {
				return fmt.Errorf("BLANK record at %d fills %d bytes, the file has %d left", pos, size, fileSize-pos%fileSize)
			}
			if _, err := io.CopyN(io.Discard, r, size-8); err != nil {
				return fmt.Errorf("stream at %d: %w", pos, err)
			}
			pos += size
			continue
		}
		if size < record.FixedOverhead || pos%fileSize+size > fileSize || pos+size > h.To {
			return fmt.Errorf("record at %d: size %d", pos, size)
		}
		rec = append(rec[:0], head[:]...)
		rec = append(rec, make([]byte, size-8)...)
		if _, err := io.ReadFull(r, rec[8:]); err != nil {
			return fmt.Errorf("stream at %d: %w", pos, err)
		}
		if pos < local {
			mine = append(mine[:0], make([]byte, size)...)
			if int64(cl.ReadAt(mine, pos)) != size || !bytes.Equal(mine, rec) {
				return fmt.Errorf("record at %d differs from the leader's", pos)
			}
			pos += size
			continue
		}
		if err := f.reput(rec, pos); err != nil {
			return err
		}
		pos += size
	}
	return f.deleteTopicsUpTo(h.State.DeletedTopics, local, h.To)
}

// reput stores the record rec, which belongs at pos, through the put
// path and checks that the bytes written are rec.
func (f *fsm) reput(rec []byte, pos int64) error {
	ext, err := record.Decode(rec, pos, true)
	if err != nil {
		return fmt.Errorf("leader's record at %d: %w", pos, err)
	}
	m := ext.Message
	if ext.Topic == record.ScheduleTopic && m.Properties[record.PropertyDelayTimeLevel] != "" {
		// The put path moves a delayed message to the schedule topic
		// again; give it the message as it was sent.
		if real := m.Properties[record.PropertyRealTopic]; real != "" {
			q, _ := strconv.Atoi(m.Properties[record.PropertyRealQueueID])
			m.Topic, m.QueueID = real, int32(q)
			delete(m.Properties, record.PropertyRealTopic)
			delete(m.Properties, record.PropertyRealQueueID)
		}
	}
	res, err := engineops.Of(f.store).PutAs(context.Background(), &m, engineops.Origin{StoreTimestamp: ext.StoreTimestamp, StoreHost: ext.StoreHost})
	if err != nil {
		return fmt.Errorf("re-put the record at %d: %w", pos, err)
	}
	if res.WroteOffset != pos {
		return fmt.Errorf("the record at %d was re-put at %d", pos, res.WroteOffset)
	}
	back := make([]byte, len(rec))
	if f.store.CommitLog().ReadAt(back, pos) != len(rec) || !bytes.Equal(back, rec) {
		return fmt.Errorf("the record at %d re-put differs from the leader's", pos)
	}
	f.lastTs.Store(ext.StoreTimestamp)
	return nil
}

// commitLogReader streams CommitLog bytes [off, end).
type commitLogReader struct {
	cl       *engine.CommitLog
	off, end int64
}

func (r *commitLogReader) Read(p []byte) (int, error) {
	if r.off >= r.end {
		return 0, io.EOF
	}
	if rest := r.end - r.off; int64(len(p)) > rest {
		p = p[:rest]
	}
	n := r.cl.ReadAt(p, r.off)
	if n == 0 {
		return 0, fmt.Errorf("cluster: CommitLog offset %d is no longer held (CommitLog %d..%d)", r.off, r.cl.MinOffset(), r.cl.MaxOffset())
	}
	r.off += int64(n)
	return n, nil
}

// streamFrom returns the header for a stream of the CommitLog from its
// first held byte to h.To, and the reader of that stream.
func streamFrom(cl *engine.CommitLog, h snapHeader) (int64, io.Reader, error) {
	h.From = cl.MinOffset()
	if h.From > h.To {
		h.From = h.To
	}
	if cl.MaxOffset() < h.To {
		return 0, nil, fmt.Errorf("cluster: snapshot to %d, CommitLog ends at %d", h.To, cl.MaxOffset())
	}
	hb, err := encodeSnapHeader(&h)
	if err != nil {
		return 0, nil, err
	}
	return int64(len(hb)) + h.To - h.From, io.MultiReader(bytes.NewReader(hb), &commitLogReader{cl: cl, off: h.From, end: h.To}), nil
}
