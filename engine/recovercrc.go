package engine

import (
	"sync"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/engine/record"
)

// crcAhead verifies the records of one CommitLog file, CRCs included, in a
// goroutine of its own while recovery's scan walks the same records
// (headers, dispatch) in order: on two cores the CRC work, a fifth of
// recovery's, runs beside the walk instead of inside it.
//
// The helper follows the record chain from the scan's start position by
// TOTALSIZE and publishes verified: every record of that chain ending at or
// below it passed every check. It stops at the first record that fails or
// at a BLANK record, so the scan meets any damage with its own full check.
type crcAhead struct {
	verified atomic.Int64 // file position
	stop     atomic.Bool
	wg       sync.WaitGroup
}

// minCRCAheadBytes is the data below which a helper is not worth starting.
var minCRCAheadBytes int64 = 4 << 20 // a variable for BenchmarkRecoveryCRCAhead

// startCRCAhead starts verifying mf's records from file position pos, or
// returns nil when CRCs are not checked or there is too little to check.
func (s *Store) startCRCAhead(mf *mappedFile, pos int64, checkCRC bool) *crcAhead {
	if !checkCRC || mf.fileSize-pos < minCRCAheadBytes {
		return nil
	}
	a := &crcAhead{}
	a.verified.Store(pos)
	b := mf.seg.View(0, mf.fileSize)
	checks := record.Checks{CRC: true, NoPhysicalOffset: s.parser.NoPhysicalOffsetCheck}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		for p := pos; !a.stop.Load(); {
			info, err := record.CheckWith(b[p:], mf.fileFromOffset+p, checks)
			if err != nil || info.Blank || info.Size <= 0 {
				return
			}
			p += int64(info.Size)
			a.verified.Store(p)
		}
	}()
	return a
}

// covers reports whether the record of the helper's chain starting at file
// position pos was verified. Only positions reached from the helper's start
// by record sizes are on its chain; the caller tracks that.
func (a *crcAhead) covers(pos int64) bool { return a != nil && pos < a.verified.Load() }

// close stops the helper and waits for it, so that the file is never
// unmapped under it.
func (a *crcAhead) close() {
	if a != nil {
		a.stop.Store(true)
		a.wg.Wait()
	}
}
