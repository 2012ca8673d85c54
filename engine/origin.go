package engine

import (
	"context"
	"net/netip"
)

// Origin is the store timestamp and store host that a replicated broker
// group's leader assigned to a message. Every replica writes these values
// instead of its own clock and address, so that the replicas' CommitLogs
// are byte-identical.
type Origin struct {
	// StoreTimestamp is the store time in milliseconds. The CommitLog
	// still never lets store times go backwards along the log.
	StoreTimestamp int64
	// StoreHost is the address written as the record's STOREHOST.
	StoreHost netip.AddrPort
}

func (o *Origin) host(def netip.AddrPort) netip.AddrPort {
	if o == nil {
		return def
	}
	return o.StoreHost
}

// PutAs is Put with the store timestamp and host taken from o.
func (s *Store) PutAs(ctx context.Context, m *Message, o Origin) (PutResult, error) {
	return s.put(ctx, m, &o)
}

// PutBatchAs is PutBatch with the store timestamp and host taken from o.
func (s *Store) PutBatchAs(ctx context.Context, msgs []*Message, o Origin) (PutResult, error) {
	return s.putBatch(ctx, msgs, &o)
}

// ReadAt copies published CommitLog bytes starting at off into p, never
// past the end of off's file. It returns how many bytes it copied: 0 when
// off is not held (removed, or at or past MaxOffset). Replicas stream and
// compare their CommitLogs with it.
func (c *CommitLog) ReadAt(p []byte, off int64) int {
	b, mf := c.data(off)
	if mf == nil {
		return 0
	}
	defer mf.release()
	return copy(p, b)
}
