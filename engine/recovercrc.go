package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/engine/record"
)

// parseAhead takes the record checks of abnormal recovery's scan of one
// CommitLog file off the scan's goroutine, and splits them over
// parseAheadWorkers parsers: the file is cut into regions of
// parseAheadRegion bytes from the scan's start, dealt round-robin to the
// parsers, and each parser checks fully (CRC included, when recovery
// checks CRCs) the records that start in its region, into their dispatch
// requests; the scan takes the regions' requests in order and dispatches
// them. On two cores the scheduler spreads the parsers and the scan over
// both, and every record is decoded once.
//
// Only the first region's first record is known (the scan's start); a
// parser finds the first record of a later region by looking for a record
// header that names its own position (the magic code and PHYSICALOFFSET).
// That guess is only a guess: the scan takes a region's records only when
// the first one starts exactly where the previous region's chain of
// records ended, so each record it dispatches was reached from its start
// by record sizes, as without the parsers. On a wrong guess (a body that
// holds such a header, or a damaged record the guess skipped) the parsers
// start again from the scan's position.
//
// A parser stops at the first record that fails a check or at a BLANK
// record, so the scan meets any damage (and a file's end) with its own
// full check, which reports it with the same error at the same offset as
// without the parsers.
//
// The parsers read the mapping itself, the CRC streaming through each
// record before its fields are decoded, with each region's pages populated
// first (backend.ReadPrefaulter) so that the reads take no fault: copying
// the file out with pread first costs a pass over every byte.
type parseAhead struct {
	mf      *mappedFile
	start   int64 // file position of the first region
	out     [parseAheadWorkers]chan *parsedBatch
	free    chan *parsedBatch // emptied batches, for reuse
	stop    chan struct{}
	stopAt  atomic.Int64 // regions after this one are not parsed: one stopped
	wg      sync.WaitGroup
	cur     *parsedBatch // the batch the scan takes from
	region  int          // the region the scan takes next
	done    bool         // the scan takes nothing more from the parsers
	guessed bool         // done because a region's first record was guessed wrong
}

// parsedBatch holds the checked records that start in one region: their
// dispatch requests, which alias the mapping. Each record's file position
// and size are its request's CommitLogOffset (less the file's start) and
// MsgSize.
type parsedBatch struct {
	end     int64 // file position where the region ends
	first   int64 // file position of its first record, or -1 if none was found
	stopped bool  // a record failed a check, or was BLANK, after reqs
	reqs    []dispatchRequest
}

// Regions of 1 MiB (about 850 records of 1 KiB) keep the handoffs rare;
// each parser queues up to parseAheadQueued regions ahead of the scan.
const (
	parseAheadWorkers = 2
	parseAheadRegion  = 1 << 20
	parseAheadQueued  = 2
	// parseAheadBatch is the initial capacity of a batch's requests.
	parseAheadBatch = 1024
)

// minParseAheadBytes is the data below which parsers are not worth
// starting.
var minParseAheadBytes int64 = 4 << 20 // a variable for BenchmarkRecoveryCRCAhead

// startParseAhead starts checking mf's records from file position pos (the
// body CRCs too when checkCRC is set), or returns nil when there is too
// little to check.
func (s *Store) startParseAhead(mf *mappedFile, pos int64, checkCRC bool) *parseAhead {
	if mf.fileSize-pos < minParseAheadBytes {
		return nil
	}
	a := &parseAhead{
		mf:    mf,
		start: pos,
		free:  make(chan *parsedBatch, parseAheadWorkers*(parseAheadQueued+1)+1),
		stop:  make(chan struct{}),
	}
	a.stopAt.Store(int64(^uint64(0) >> 1))
	for range cap(a.free) {
		a.free <- &parsedBatch{reqs: make([]dispatchRequest, 0, parseAheadBatch)}
	}
	for w := range parseAheadWorkers {
		a.out[w] = make(chan *parsedBatch, parseAheadQueued)
		a.wg.Add(1)
		go s.parseRegions(a, w, checkCRC)
	}
	return a
}

// parseRegions is parser w: it checks the records of regions w,
// w+parseAheadWorkers, ... until the end of the file or a region after one
// in which a parser stopped.
func (s *Store) parseRegions(a *parseAhead, w int, checkCRC bool) {
	defer a.wg.Done()
	defer close(a.out[w])
	mf := a.mf
	b := mf.seg.View(0, mf.fileSize)
	pf, _ := mf.seg.(backend.ReadPrefaulter)
	for r := w; ; r += parseAheadWorkers {
		from := a.start + int64(r)*parseAheadRegion
		if from >= mf.fileSize || int64(r) > a.stopAt.Load() {
			return
		}
		var batch *parsedBatch
		select {
		case batch = <-a.free:
		case <-a.stop:
			return
		}
		batch.end = min(from+parseAheadRegion, mf.fileSize)
		if pf != nil {
			// Only an optimisation: on failure the reads fault.
			_ = pf.PrefaultRead(from, batch.end-from)
		}
		batch.first = from
		if r > 0 {
			batch.first = guessRecordStart(b, mf.fileFromOffset, from, batch.end)
		}
		batch.reqs, batch.stopped = batch.reqs[:0], false
		if batch.first >= 0 {
			batch.reqs, batch.stopped = s.parseRegion(b, mf.fileFromOffset, batch.first, batch.end, checkCRC, batch.reqs)
		}
		stopped := batch.stopped // the batch is the scan's once sent
		if stopped {
			for cur := a.stopAt.Load(); int64(r) < cur && !a.stopAt.CompareAndSwap(cur, int64(r)); cur = a.stopAt.Load() {
			}
		}
		select {
		case a.out[w] <- batch:
		case <-a.stop:
			return
		}
		if stopped {
			return
		}
	}
}

// parseRegion checks the records of b (the file starting at CommitLog
// offset fileFrom) that start from file position p to end, appending their
// requests to reqs, and reports whether a record failed a check or was
// BLANK (where it stopped).
func (s *Store) parseRegion(b []byte, fileFrom, p, end int64, checkCRC bool, reqs []dispatchRequest) ([]dispatchRequest, bool) {
	for p < end {
		// The CRC first: it streams through the record, so that the
		// fields after the body (topic, properties), which Parse decodes,
		// are in the cache by then; decoding first costs a cache miss on
		// every record's tail.
		crcErr := errCRCNotChecked
		if checkCRC {
			if n := messageSizeAt(b, p); n > 0 {
				crcErr = record.VerifyBodyCRC(b[p : p+n])
			}
		}
		reqs = slices.Grow(reqs, 1)
		size, blank, err := s.parser.ParseInto(&reqs[:len(reqs)+1][len(reqs)], b[p:], fileFrom+p, false)
		if err != nil || blank || size <= 0 || (checkCRC && crcErr != nil) {
			return reqs, true // the scan's own full check reports it
		}
		reqs = reqs[:len(reqs)+1]
		p += int64(size)
	}
	return reqs, false
}

// guessRecordStart returns the first file position in [from, end) that
// holds what looks like the header of a message record written there (its
// magic code, and its PHYSICALOFFSET naming that position), or -1.
func guessRecordStart(b []byte, fileFrom, from, end int64) int64 {
	const offPhysicalOffset = 28
	for p := from; p < end && p+int64(offMagic) < int64(len(b)); {
		i := bytes.Index(b[p+int64(offMagic):min(end+int64(offMagic), int64(len(b)))], magicMessage)
		if i < 0 {
			return -1
		}
		p += int64(i)
		if p+offPhysicalOffset+8 <= int64(len(b)) && int64(binary.BigEndian.Uint64(b[p+offPhysicalOffset:])) == fileFrom+p {
			return p
		}
		p++
	}
	return -1
}

// errCRCNotChecked marks a record whose CRC the parser could not check
// before its other checks (they fail too, or it is not a message).
var errCRCNotChecked = errors.New("engine: body crc not checked")

// messageSizeAt returns the TOTALSIZE of the message record at b[p:] when
// its magic code is a v1 message's and the record fits in b, else 0.
func messageSizeAt(b []byte, p int64) int64 {
	if p+8 > int64(len(b)) || int32(binary.BigEndian.Uint32(b[p+4:])) != record.MagicMessage {
		return 0
	}
	n := int64(int32(binary.BigEndian.Uint32(b[p:])))
	if n < record.FixedOverhead || n > int64(len(b))-p {
		return 0
	}
	return n
}

// take returns the parsers' requests for the records from file position
// pos on, to the end of a region, if the parsers checked the record at
// pos: the scan calls it at each position it reaches by record sizes from
// the parsers' start, in order, and dispatches all the returned records
// before it calls again. After a miss (the parsers stopped, or the record
// at pos is not the next they checked) it returns nil for good; guessedWrong
// then says whether starting again from pos may help.
func (a *parseAhead) take(pos int64) []dispatchRequest {
	if a == nil || a.done {
		return nil
	}
	for {
		if a.cur != nil {
			a.free <- a.cur // never blocks: free holds every batch
			a.cur = nil
		}
		b, ok := <-a.out[a.region%parseAheadWorkers]
		if !ok {
			a.done = true
			return nil
		}
		a.cur = b
		a.region++
		if b.end <= pos {
			// Inside the records taken so far: whatever the parser
			// guessed there is no record of the chain.
			continue
		}
		if b.first != pos && !trustGuessedStarts {
			a.done, a.guessed = true, true
			return nil
		}
		if b.stopped {
			a.done = true // the scan checks the record after these
		}
		return b.reqs
	}
}

// trustGuessedStarts makes the scan take a region's records wherever the
// parser guessed its first record: the broken variant of
// TestRecoveryIgnoresGuessedStartInABody. Never set outside it.
var trustGuessedStarts bool

// guessedWrong reports whether the parsers stopped being of use because a
// region's first record was not where the chain reached it.
func (a *parseAhead) guessedWrong() bool { return a != nil && a.guessed }

// close stops the parsers and waits for them, so that the file is never
// unmapped under them.
func (a *parseAhead) close() {
	if a != nil {
		close(a.stop)
		a.wg.Wait()
	}
}
