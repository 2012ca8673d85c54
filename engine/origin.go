package engine

import (
	"fmt"
	"net/netip"

	"github.com/rocketstore/rocketstore/internal/engineops/link"
	"github.com/rocketstore/rocketstore/record"
)

// origin is the store timestamp and store host that a replicated broker
// group's leader assigned to a message (engineops.Origin). Every replica
// writes these values instead of its own clock and address, so that the
// replicas' CommitLogs are byte-identical.
type origin = link.Origin

// originHost returns o's store host, or def without an origin.
func originHost(o *origin, def netip.AddrPort) netip.AddrPort {
	if o == nil {
		return def
	}
	return o.StoreHost
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
	if end := c.MaxOffset(); off+int64(len(b)) > end {
		b = b[:max(0, end-off)]
	}
	return copy(p, b)
}

// repair overwrites the record at off with rec, a healthy replica's copy
// of it, and syncs it: a replicated group's replicas hold the same bytes,
// so a record damaged on one (a flipped bit, a torn sector) is rewritten
// instead of skipped or truncated. rec must be one whole valid record
// (its CRC checked) for position off, below the published end.
func (c *CommitLog) repair(off int64, rec []byte) error {
	info, err := record.Check(rec, off, true)
	if err != nil {
		return fmt.Errorf("repair at %d: the replacement is not a valid record: %w", off, err)
	}
	if info.Blank || int(info.Size) != len(rec) {
		return fmt.Errorf("repair at %d: the replacement is %d bytes, its record %d", off, len(rec), info.Size)
	}
	mf := c.q.findMappedFileByOffset(off, false)
	if mf == nil || !mf.hold() {
		return fmt.Errorf("repair at %d: offset not held", off)
	}
	defer mf.release()
	pos := off - mf.fileFromOffset
	if pos+int64(len(rec)) > mf.wrote.Load() {
		return fmt.Errorf("repair at %d: %d bytes pass the published end of %s", off, len(rec), mf.name)
	}
	if _, err := mf.seg.WriteAt(rec, pos); err != nil {
		return fmt.Errorf("repair %s at %d: %w", mf.name, pos, err)
	}
	if err := mf.seg.Sync(pos, int64(len(rec))); err != nil {
		return fmt.Errorf("%w: sync repaired record in %s at %d: %v", ErrFlushFailed, mf.name, pos, err)
	}
	return nil
}
