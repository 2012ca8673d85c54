package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/record"
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
// Where the segment can read through its file (backend.FileReader), a
// parser reads each region either through the file's mapping or with one
// pread into its batch's buffer (plus parseAheadOverlap bytes, so that a
// record crossing the region's end is checked from the same read; a larger
// one is read whole), whichever regionReads has measured to be cheaper for
// this file. After a pread the parser checks the records while the bytes
// are in its core's cache; the CRC streams through each record before its
// fields are decoded. The requests alias the buffer (or the mapping),
// which the scan hands back only once it has dispatched them. Other
// segments (memfs) are checked in their mapping.
type parseAhead struct {
	mf      *mappedFile
	start   int64 // file position of the first region
	out     [parseAheadWorkers]chan *parsedBatch
	free    chan *parsedBatch // emptied batches, for reuse
	stop    chan struct{}
	stopAt  atomic.Int64 // regions after this one are not parsed: one stopped
	reads   *regionReads // how the parsers read the regions
	wg      sync.WaitGroup
	cur     *parsedBatch // the batch the scan takes from
	region  int          // the region the scan takes next
	done    bool         // the scan takes nothing more from the parsers
	guessed bool         // done because a region's first record was guessed wrong
}

// parsedBatch holds the checked records that start in one region: their
// dispatch requests, which alias the batch's buffers (or the mapping).
// Each record's file position and size are its request's CommitLogOffset
// (less the file's start) and MsgSize.
type parsedBatch struct {
	end     int64 // file position where the region ends
	first   int64 // file position of its first record, -1 if none was found, or regionUnread
	stopped bool  // a record failed a check, or was BLANK, after reqs
	reqs    []dispatchRequest
	// same[i] says that record i has the topic and queue of record i-1
	// (a hint for the scan: comparing topics here, where the bytes are
	// in the cache, spares the scan a cache miss on each record's topic).
	same []bool
	buf  []byte // the region's bytes, when the parser reads the file
	big  []byte // a record cut by the end of buf, read whole
}

// Regions of 512 KiB (about 430 records of 1 KiB) keep the handoffs rare
// and a region's read within a core's cache; each parser queues up to
// parseAheadQueued regions ahead of the scan.
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
		reads: newRegionReads(),
	}
	a.stopAt.Store(int64(^uint64(0) >> 1))
	_, read := mf.seg.(backend.FileReader)
	for range cap(a.free) {
		pb := &parsedBatch{reqs: make([]dispatchRequest, 0, parseAheadBatch), same: make([]bool, 0, parseAheadBatch)}
		if read {
			pb.buf = make([]byte, parseAheadRegion+parseAheadOverlap)
		}
		a.free <- pb
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
	rd, _ := mf.seg.(backend.FileReader)
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
		batch.reqs, batch.same, batch.stopped = batch.reqs[:0], batch.same[:0], false
		method, began := readMapped, time.Time{}
		if rd != nil {
			method, began = a.reads.next(r), time.Now()
		}
		s.readRegion(rd, method, mf, from, r, batch, checkCRC)
		if rd != nil && !batch.stopped {
			a.reads.observe(r, method, batch.end-from, time.Since(began))
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
		// The send made the scan runnable on this parser's P, where it
		// waits until the parser blocks or is preempted; yield so that
		// it dispatches now. In a trace of the bench (3 recoveries of
		// 1 GiB) the scan waited for a core 0.05 s a recovery and the
		// parsers were blocked 0.06 s; with the yield 0.015 s and 0.023 s.
		runtime.Gosched()
	}
}

// readRegion checks the records that start in region r (from file position
// from to batch.end) into batch, reading the region with method (rd is nil
// when the segment has only its mapping).
func (s *Store) readRegion(rd backend.FileReader, method readMethod, mf *mappedFile, from int64, r int, batch *parsedBatch, checkCRC bool) {
	v := regionView{b: mf.seg.View(0, mf.fileSize)}
	if method == readPread {
		v = regionView{b: batch.buf[:min(batch.end+parseAheadOverlap, mf.fileSize)-from], base: from}
		if _, err := rd.ReadFile(v.b, from); err != nil {
			batch.first, batch.stopped = regionUnread, true
			return
		}
	} else {
		rd = nil // no read is cut short in the mapping
	}
	batch.first = from
	if r > 0 {
		batch.first = v.guessRecordStart(mf.fileFromOffset, from, batch.end)
	}
	if batch.first >= 0 {
		s.parseRegion(rd, mf, v, batch, checkCRC)
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

// take returns the parsers' requests for the records from file position
// pos on, to the end of a region, if the parsers checked the record at
// pos, with their same-queue hints (parsedBatch.same): the scan calls it at each position it reaches by record sizes from
// the parsers' start, in order, and dispatches all the returned records
// before it calls again. After a miss (the parsers stopped, or the record
// at pos is not the next they checked) it returns nil for good; guessedWrong
// then says whether starting again from pos may help.
func (a *parseAhead) take(pos int64) ([]dispatchRequest, []bool) {
	if a == nil || a.done {
		return nil, nil
	}
	for {
		if a.cur != nil {
			a.free <- a.cur // never blocks: free holds every batch
			a.cur = nil
		}
		b, ok := <-a.out[a.region%parseAheadWorkers]
		if !ok {
			a.done = true
			return nil, nil
		}
		a.cur = b
		a.region++
		if b.end <= pos {
			// Inside the records taken so far: whatever the parser
			// guessed there is no record of the chain.
			continue
		}
		if b.first == regionUnread {
			a.done = true // the scan reads through the mapping
			return nil, nil
		}
		if b.first != pos && !trustGuessedStarts {
			a.done, a.guessed = true, true
			return nil, nil
		}
		if b.stopped {
			a.done = true // the scan checks the record after these
		}
		return b.reqs, b.same
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
