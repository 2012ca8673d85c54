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
// requests. The regions are dispatched in order by the parsers
// themselves: the parser that hands in the region next in line dispatches
// it, and any that follow and are ready, while the other goes on parsing
// (advance); the scan waits (drain) and takes over where the parsers stop.
// So two goroutines keep the two cores busy, instead of a third, the scan,
// waiting for a core after each region, and half the regions are
// dispatched from the cache that parsed them. Every record is decoded
// once.
//
// Only the first region's first record is known (the scan's start); a
// parser finds the first record of a later region by looking for a record
// header that names its own position (the magic code and PHYSICALOFFSET).
// That guess is only a guess: a region's records are dispatched only when
// the first one starts exactly where the previous region's chain of
// records ended, so each record it dispatches was reached from its start
// by record sizes, as without the parsers. On a wrong guess (a body that
// holds such a header, or a damaged record the guess skipped) the parsers
// start again from where the chain ended.
//
// A parser stops at the first record that fails a check or at a BLANK
// record, so the scan meets any damage (and a file's end) with its own
// full check, which reports it with the same error at the same offset as
// without the parsers.
//
// Where the segment can read through its file (backend.FileReader), a
// parser reads each region with one pread into its batch's buffer (plus
// parseAheadOverlap bytes, so that a record crossing the region's end is
// checked from the same read; a larger one is read whole) and checks the
// records there, while the bytes are in its core's cache; the CRC streams
// through each record before its fields are decoded. The requests alias
// the buffer, which goes back to its parser once they are dispatched.
// A pread copies through the kernel's mapping of the page cache; reading
// a fresh mapping of the file instead costs a page-table update for every
// page, which on this project's virtual machine cost more than the copy
// (0.62-0.70 s against 0.39-0.48 s of CPU for the bench's 1 GiB, side by
// side at a load of 9-10). Other segments (memfs) are checked in their
// mapping.
type parseAhead struct {
	mf    *mappedFile
	start int64 // file position of the first region
	// free holds each parser's emptied batches, parseAheadQueued+1 of
	// them: a parser runs at most that many regions ahead of the one
	// dispatched next, and never takes the batches the other needs.
	free   [parseAheadWorkers]chan *parsedBatch
	stop   chan struct{}
	stopAt atomic.Int64 // regions after this one are not parsed: one stopped
	wg     sync.WaitGroup
	// dispatch dispatches a region's checked records, in order; it is
	// called by one parser at a time (the one holding dispatching).
	dispatch func([]dispatchRequest, []bool)

	mu          sync.Mutex
	idle        sync.Cond      // signalled when the parsers may have finished
	ring        []*parsedBatch // parsed regions waiting for their turn, by region % len
	region      int            // the region dispatched next
	pos         int64          // file position the chain of dispatched records reached
	dispatching bool           // a parser is dispatching (outside mu)
	exited      int            // parsers that returned
	done        bool           // nothing more is dispatched from the parsers
	guessed     bool           // done because a region's first record was guessed wrong
	drained     bool           // the scan took the position the parsers reached
}

// parsedBatch holds the checked records that start in one region: their
// dispatch requests, which alias the batch's buffers (or the mapping).
// Each record's file position and size are its request's CommitLogOffset
// (less the file's start) and MsgSize.
type parsedBatch struct {
	owner   int   // the parser whose batch it is
	region  int   // its index from the first region
	end     int64 // file position where the region ends
	first   int64 // file position of its first record, -1 if none was found, or regionUnread
	stopped bool  // a record failed a check, or was BLANK, after reqs
	reqs    []dispatchRequest
	// same[i] says that record i has the topic and queue of record i-1
	// (a hint for the dispatch: comparing topics here, where the bytes
	// are in the cache, spares a cache miss on each record's topic when
	// the other parser dispatches the region).
	same []bool
	buf  []byte // the region's bytes, when the parser reads the file
	big  []byte // a record cut by the end of buf, read whole
}

// Regions of 512 KiB (about 430 records of 1 KiB) keep the handoffs rare
// and a region's read within a core's cache; each parser queues up to
// parseAheadQueued regions ahead of the region dispatched next.
const (
	parseAheadWorkers = 2
	parseAheadRegion  = 512 << 10
	parseAheadOverlap = 64 << 10
	parseAheadQueued  = 2
	// parseAheadBatch is the initial capacity of a batch's requests.
	parseAheadBatch = 512
	// maxParseAheadRecord bounds the read a parser makes for one record
	// cut by the end of a region's read; a TOTALSIZE above it is left to
	// the scan's own check.
	maxParseAheadRecord = 16 << 20
)

// minParseAheadBytes is the data below which parsers are not worth
// starting.
var minParseAheadBytes int64 = 4 << 20 // a variable for BenchmarkRecoveryCRCAhead

// startParseAhead starts checking mf's records from file position pos (the
// body CRCs too when checkCRC is set) and dispatching them with dispatch,
// or returns nil when there is too little to check.
func (s *Store) startParseAhead(mf *mappedFile, pos int64, checkCRC bool, dispatch func([]dispatchRequest, []bool)) *parseAhead {
	if mf.fileSize-pos < minParseAheadBytes {
		return nil
	}
	a := &parseAhead{
		mf:       mf,
		start:    pos,
		pos:      pos,
		stop:     make(chan struct{}),
		dispatch: dispatch,
	}
	a.idle.L = &a.mu
	// The regions waiting lie within 2*(parseAheadQueued+1) of the next
	// one (each parser's are two apart): they never share a slot.
	a.ring = make([]*parsedBatch, 2*parseAheadWorkers*(parseAheadQueued+1))
	a.stopAt.Store(int64(^uint64(0) >> 1))
	_, read := mf.seg.(backend.FileReader)
	for w := range parseAheadWorkers {
		a.free[w] = make(chan *parsedBatch, parseAheadQueued+1)
		for range cap(a.free[w]) {
			pb := &parsedBatch{owner: w, reqs: make([]dispatchRequest, 0, parseAheadBatch), same: make([]bool, 0, parseAheadBatch)}
			if read {
				pb.buf = make([]byte, parseAheadRegion+parseAheadOverlap)
			}
			a.free[w] <- pb
		}
	}
	for w := range parseAheadWorkers {
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
	defer a.exit()
	mf := a.mf
	rd, _ := mf.seg.(backend.FileReader)
	for r := w; ; r += parseAheadWorkers {
		from := a.start + int64(r)*parseAheadRegion
		if from >= mf.fileSize || int64(r) > a.stopAt.Load() {
			return
		}
		var batch *parsedBatch
		select {
		case batch = <-a.free[w]:
		case <-a.stop:
			return
		}
		batch.region, batch.end = r, min(from+parseAheadRegion, mf.fileSize)
		batch.reqs, batch.same, batch.stopped = batch.reqs[:0], batch.same[:0], false
		v := regionView{b: mf.seg.View(0, mf.fileSize)}
		if rd != nil {
			v = regionView{b: batch.buf[:min(batch.end+parseAheadOverlap, mf.fileSize)-from], base: from}
			if _, err := rd.ReadFile(v.b, from); err != nil {
				batch.first, batch.stopped = regionUnread, true
			}
		}
		if !batch.stopped {
			batch.first = from
			if r > 0 {
				batch.first = v.guessRecordStart(mf.fileFromOffset, from, batch.end)
			}
			if batch.first >= 0 {
				s.parseRegion(rd, mf, v, batch, checkCRC)
			}
		}
		stopped := batch.stopped // the batch is not this parser's once handed in
		if stopped {
			for cur := a.stopAt.Load(); int64(r) < cur && !a.stopAt.CompareAndSwap(cur, int64(r)); cur = a.stopAt.Load() {
			}
		}
		a.mu.Lock()
		a.ring[r%len(a.ring)] = batch
		a.advance()
		a.mu.Unlock()
		if stopped {
			return
		}
	}
}

// exit counts a parser out, waking the scan when it was the last.
func (a *parseAhead) exit() {
	a.mu.Lock()
	a.exited++
	a.idle.Broadcast()
	a.mu.Unlock()
}

// advance dispatches the parsed regions that are next in order, unless
// another parser is dispatching (it takes them when it is done): the
// records of a region are dispatched only when its first record starts
// where the chain of records dispatched so far ended, so that each one is
// reached from the start by record sizes. Called with mu held; it
// releases mu while it dispatches.
func (a *parseAhead) advance() {
	for !a.dispatching && !a.done {
		b := a.ring[a.region%len(a.ring)]
		if b == nil || b.region != a.region {
			return
		}
		a.ring[a.region%len(a.ring)] = nil
		a.region++
		switch {
		case b.end <= a.pos:
			// Inside the records dispatched so far: whatever the
			// parser guessed there is no record of the chain.
		case b.first == regionUnread:
			a.done = true // the scan reads through the mapping
		case b.first != a.pos && !trustGuessedStarts:
			a.done, a.guessed = true, true
		default:
			if len(b.reqs) > 0 {
				a.dispatching = true
				a.mu.Unlock()
				a.dispatch(b.reqs, b.same)
				a.mu.Lock()
				a.dispatching = false
				last := &b.reqs[len(b.reqs)-1]
				a.pos = last.CommitLogOffset - a.mf.fileFromOffset + int64(last.MsgSize)
			}
			if b.stopped {
				a.done = true // the scan checks the record after these
			}
		}
		a.free[b.owner] <- b // never blocks: free holds all its parser's batches
		if a.done {
			a.idle.Broadcast()
		}
	}
}

// regionUnread is parsedBatch.first for a region the parser could not
// read.
const regionUnread = -2

// regionView is the bytes a parser checks records in: b[i] is file
// position base+i. It is the file's mapping (base 0), or the bytes of a
// region read into a batch's buffer, from the region's start to
// parseAheadOverlap past its end.
type regionView struct {
	b    []byte
	base int64
}

// parseRegion appends to batch the checked records of v that start from
// file position batch.first to batch.end (mf's), and sets batch.stopped
// when a record failed a check or was BLANK (where it stopped). A record
// cut by the end of a read (rd) is read whole into batch.big and checked
// there.
func (s *Store) parseRegion(rd backend.FileReader, mf *mappedFile, v regionView, batch *parsedBatch, checkCRC bool) {
	for p := batch.first; p < batch.end; {
		size, cut := s.checkRecord(v, mf.fileFromOffset, p, batch, checkCRC)
		if cut && rd != nil && v.base+int64(len(v.b)) < mf.fileSize {
			size = s.checkWhole(rd, mf, v, p, batch, checkCRC)
		}
		if size <= 0 {
			batch.stopped = true // the scan's own full check reports it
			return
		}
		p += int64(size)
	}
}

// checkRecord checks the record of v at file position p and appends its
// request to batch; it returns the record's size, or 0 if it failed a
// check or was BLANK, and whether it may be whole past the end of v.
func (s *Store) checkRecord(v regionView, fileFrom, p int64, batch *parsedBatch, checkCRC bool) (int32, bool) {
	b := v.b[p-v.base:]
	// The CRC first: it streams through the record, so that the fields
	// after the body (topic, properties), which Parse decodes, are in the
	// cache by then; decoding first costs a cache miss on every record's
	// tail.
	crcErr := errCRCNotChecked
	if checkCRC {
		if n := messageSizeAt(b); n > 0 {
			crcErr = record.VerifyBodyCRC(b[:n])
		}
	}
	reqs := slices.Grow(batch.reqs, 1)
	req := &reqs[:len(reqs)+1][len(reqs)]
	size, blank, err := s.parser.ParseInto(req, b, fileFrom+p, false)
	batch.reqs = reqs
	if err != nil || blank || size <= 0 || (checkCRC && crcErr != nil) {
		return 0, errors.Is(err, record.ErrTruncated)
	}
	same := false
	if i := len(reqs); i > 0 {
		same = reqs[i-1].QueueID == req.QueueID && bytes.Equal(reqs[i-1].Topic, req.Topic)
	}
	batch.same = append(batch.same, same)
	batch.reqs = reqs[:len(reqs)+1]
	return size, false
}

// checkWhole reads the record at file position p, of which v holds the
// first bytes, into batch.big and checks it there; it returns the
// record's size, or 0.
func (s *Store) checkWhole(rd backend.FileReader, mf *mappedFile, v regionView, p int64, batch *parsedBatch, checkCRC bool) int32 {
	head := v.b[p-v.base:]
	if len(head) < 4 {
		return 0
	}
	size := int64(int32(binary.BigEndian.Uint32(head)))
	if size <= int64(len(head)) || size > maxParseAheadRecord || p+size > mf.fileSize {
		return 0
	}
	if int64(cap(batch.big)) < size || cap(batch.big) > 4*parseAheadRegion {
		// A batch keeps a buffer of up to 2 MiB for the next such
		// record; a larger one (rare) is not reused.
		batch.big = make([]byte, size)
	}
	batch.big = batch.big[:size]
	if _, err := rd.ReadFile(batch.big, p); err != nil {
		return 0
	}
	n, _ := s.checkRecord(regionView{b: batch.big, base: p}, mf.fileFromOffset, p, batch, checkCRC)
	return n
}

// guessRecordStart returns the first file position in [from, end) that
// holds what looks like the header of a message record written there (its
// magic code, and its PHYSICALOFFSET naming that position), or -1.
func (v regionView) guessRecordStart(fileFrom, from, end int64) int64 {
	const offPhysicalOffset = 28
	b := v.b
	for i, stop := from-v.base, end-v.base; i < stop && i+int64(offMagic) < int64(len(b)); {
		k := bytes.Index(b[i+int64(offMagic):min(stop+int64(offMagic), int64(len(b)))], magicMessage)
		if k < 0 {
			return -1
		}
		i += int64(k)
		if i+offPhysicalOffset+8 <= int64(len(b)) && int64(binary.BigEndian.Uint64(b[i+offPhysicalOffset:])) == fileFrom+v.base+i {
			return v.base + i
		}
		i++
	}
	return -1
}

// errCRCNotChecked marks a record whose CRC the parser could not check
// before its other checks (they fail too, or it is not a message).
var errCRCNotChecked = errors.New("engine: body crc not checked")

// messageSizeAt returns the TOTALSIZE of the message record at the start
// of b when its magic code is a v1 message's and the record fits in b, else
// 0.
func messageSizeAt(b []byte) int64 {
	if len(b) < 8 || int32(binary.BigEndian.Uint32(b[4:])) != record.MagicMessage {
		return 0
	}
	n := int64(int32(binary.BigEndian.Uint32(b)))
	if n < record.FixedOverhead || n > int64(len(b)) {
		return 0
	}
	return n
}

// drain waits until the parsers have dispatched what they can, in order
// from the position they started at, and returns the file position the
// chain of dispatched records reached, and whether there was anything to
// wait for. After it the parsers dispatch nothing more; guessedWrong then
// says whether starting them again from the returned position may help.
func (a *parseAhead) drain() (int64, bool) {
	if a == nil {
		return 0, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.drained {
		return a.pos, false
	}
	for !a.done && a.exited < parseAheadWorkers {
		a.idle.Wait()
	}
	a.done, a.drained = true, true
	return a.pos, true
}

// trustGuessedStarts makes the parsers dispatch a region's records
// wherever its parser guessed the first record: the broken variant of
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
