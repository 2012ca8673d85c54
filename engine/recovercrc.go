package engine

import (
	"encoding/binary"
	"errors"
	"sync"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/engine/record"
)

// parseAhead splits abnormal recovery's work on one CommitLog file over a
// pipeline of goroutines: a reader preads the file in chunks (where the
// segment can read through its file); a parser walks the record chain from
// the scan's start and parses each record into its dispatch request (every
// check but the body CRC), in batches; a CRC helper checks the body CRCs of
// each batch (when recovery checks CRCs); the scan takes the requests in
// order and dispatches them. On two cores the scheduler spreads the stages
// over both, and every record header is decoded once. The parser stops at
// the first record that fails a check or at a BLANK record, so the scan
// meets any damage (and a file's end) with its own full check; a CRC
// mismatch is handed over with the record and reported by the scan where
// its own check would have found it, with the same error.
type parseAhead struct {
	batches chan *parsedBatch // checked batches, in chain order; closed when the helpers stop
	free    chan *parsedBatch // emptied batches, for reuse
	stop    chan struct{}
	wg      sync.WaitGroup
	cur     *parsedBatch
	next    int  // index in cur of the scan's next record
	done    bool // the helpers stopped and their batches are used up
}

// parsedBatch is a run of consecutive records parsed by the helpers. Where
// the segment can read through the file (backend.FileReader), the reader
// fills buf with one pread and the parser parses the records that start
// in it there: touching a mapping's pages for the first time costs a fault
// each (on a virtual machine, microseconds a page even when the page is
// cached), a pread copies from the page cache into a buffer whose pages
// stay mapped. The records' requests and bytes then alias buf (or big),
// which are reused only after the scan has dispatched every record of the
// batch.
type parsedBatch struct {
	recs []parsedRecord
	buf  []byte // file bytes from position from (read mode)
	from int64
	big  []byte // the record that crosses the end of buf, read whole
	// readFailed is set by the reader when the read of buf failed.
	readFailed bool
}

// parsedRecord is one record parsed by the helper: its file position,
// size, bytes and dispatch request.
type parsedRecord struct {
	pos    int64
	size   int32
	rec    []byte
	req    dispatchRequest
	crcErr error // the CRC helper's verdict (nil when CRCs are not checked)
}

// Batch sizes: a batch of 256 records (or the records that start in one
// chunk of parseAheadRead bytes), and 4 queued after each stage, keep the
// reader a few MiB ahead of the scan, so that the later stages find the
// bytes still in the cache. Each read takes parseAheadOverlap bytes more
// than its chunk, so that a record crossing into the next chunk is parsed
// from it; a larger one is read whole.
const (
	parseAheadBatch   = 256
	parseAheadQueued  = 4
	parseAheadRead    = 256 << 10
	parseAheadOverlap = 64 << 10
	// maxParseAheadRecord bounds the read the parser makes for one record
	// crossing the end of a read; a TOTALSIZE above it is left to the
	// scan's own check.
	maxParseAheadRecord = 16 << 20
)

// minParseAheadBytes is the data below which a helper is not worth
// starting.
var minParseAheadBytes int64 = 4 << 20 // a variable for BenchmarkRecoveryCRCAhead

// startParseAhead starts parsing mf's records from file position pos (and
// checking their body CRCs when checkCRC is set), or returns nil when there
// is too little to parse.
func (s *Store) startParseAhead(mf *mappedFile, pos int64, checkCRC bool) *parseAhead {
	if mf.fileSize-pos < minParseAheadBytes {
		return nil
	}
	a := &parseAhead{
		batches: make(chan *parsedBatch, parseAheadQueued),
		free:    make(chan *parsedBatch, parseAheadQueued*2+2),
		stop:    make(chan struct{}),
	}
	rd, _ := mf.seg.(backend.FileReader)
	for range cap(a.free) {
		pb := &parsedBatch{recs: make([]parsedRecord, 0, parseAheadBatch)}
		if rd != nil {
			pb.buf = make([]byte, 0, parseAheadRead+parseAheadOverlap)
		}
		a.free <- pb
	}
	parsed := a.batches
	if checkCRC {
		parsed = make(chan *parsedBatch, parseAheadQueued)
		a.wg.Add(1)
		go a.checkCRCs(parsed)
	}
	a.wg.Add(1)
	if rd == nil {
		go s.parseMapped(a, mf, pos, parsed)
		return a
	}
	read := make(chan *parsedBatch, parseAheadQueued)
	a.wg.Add(1)
	go a.readChunks(rd, mf, pos, read)
	go s.parseRead(a, rd, mf, pos, read, parsed)
	return a
}

// parseMapped is the parser on a segment that cannot read through its
// file: it parses batches of parseAheadBatch records of the mapping from
// file position p until a record fails a check, a BLANK record, or the
// end of the file.
func (s *Store) parseMapped(a *parseAhead, mf *mappedFile, p int64, parsed chan<- *parsedBatch) {
	defer a.wg.Done()
	defer close(parsed)
	b := mf.seg.View(0, mf.fileSize)
	for {
		var batch *parsedBatch
		select {
		case batch = <-a.free:
			batch.recs = batch.recs[:0]
		case <-a.stop:
			return
		}
		last := false
		for len(batch.recs) < parseAheadBatch {
			req, size, blank, err := s.parser.Parse(b[p:], mf.fileFromOffset+p, false)
			if err != nil || blank || size <= 0 {
				last = true
				break
			}
			batch.recs = append(batch.recs, parsedRecord{pos: p, size: size, rec: b[p : p+int64(size)], req: req})
			p += int64(size)
		}
		if !a.pass(parsed, batch) || last {
			return
		}
	}
}

// pass hands a parsed batch on (an empty one goes back to free); false
// when the pipeline is stopping.
func (a *parseAhead) pass(parsed chan<- *parsedBatch, batch *parsedBatch) bool {
	if len(batch.recs) == 0 {
		a.free <- batch // never blocks: free holds every batch
		return true
	}
	select {
	case parsed <- batch:
		return true
	case <-a.stop:
		return false
	}
}

// readChunks is the reader: it preads mf from file position from in
// chunks of parseAheadRead bytes (plus parseAheadOverlap, up to the end of
// the file), one per batch, until the end of the file or a failed read.
func (a *parseAhead) readChunks(rd backend.FileReader, mf *mappedFile, from int64, read chan<- *parsedBatch) {
	defer a.wg.Done()
	defer close(read)
	for from < mf.fileSize {
		var batch *parsedBatch
		select {
		case batch = <-a.free:
		case <-a.stop:
			return
		}
		batch.from = from
		batch.buf = batch.buf[:min(int64(parseAheadRead+parseAheadOverlap), mf.fileSize-from)]
		_, err := rd.ReadFile(batch.buf, from)
		batch.readFailed = err != nil
		select {
		case read <- batch:
		case <-a.stop:
			return
		}
		if err != nil {
			return
		}
		from += parseAheadRead
	}
}

// parseRead is the parser on a segment read through its file: from file
// position p it parses the records that start in each chunk the reader
// read, from the chunk's bytes, or, for the record that crosses the end of
// the read, from a read of that record whole. It stops as parseMapped, or
// at a failed read; a record cut by the end of a read is never a failure.
func (s *Store) parseRead(a *parseAhead, rd backend.FileReader, mf *mappedFile, p int64, read <-chan *parsedBatch, parsed chan<- *parsedBatch) {
	defer a.wg.Done()
	defer close(parsed)
	for batch := range read {
		batch.recs = batch.recs[:0]
		if batch.readFailed {
			return
		}
		readEnd := batch.from + int64(len(batch.buf))
		end := batch.from + parseAheadRead // records starting before end are this batch's
		if readEnd == mf.fileSize {
			end = readEnd
		}
		last := false
		for p < end {
			rec := batch.buf[p-batch.from:]
			req, size, blank, err := s.parser.Parse(rec, mf.fileFromOffset+p, false)
			if errors.Is(err, record.ErrTruncated) && readEnd < mf.fileSize {
				// Cut by the end of the read: read it whole (the
				// last record of the batch: it ends past readEnd).
				req, size, blank, err = s.parseWhole(rd, mf, batch, p, rec)
				rec = batch.big
			}
			if err != nil || blank || size <= 0 {
				last = true
				break
			}
			batch.recs = append(batch.recs, parsedRecord{pos: p, size: size, rec: rec[:size], req: req})
			p += int64(size)
		}
		if !a.pass(parsed, batch) || last {
			return
		}
	}
}

// parseWhole reads the record at file position p, of which view holds
// the first bytes, into batch.big and parses it there.
func (s *Store) parseWhole(rd backend.FileReader, mf *mappedFile, batch *parsedBatch, p int64, view []byte) (dispatchRequest, int32, bool, error) {
	fail := func() (dispatchRequest, int32, bool, error) { return dispatchRequest{}, 0, false, record.ErrTruncated }
	if len(view) < 4 {
		return fail()
	}
	size := int64(int32(binary.BigEndian.Uint32(view)))
	if size <= int64(len(view)) || size > maxParseAheadRecord || p+size > mf.fileSize {
		return fail()
	}
	if int64(cap(batch.big)) < size || cap(batch.big) > 4*parseAheadRead {
		// The batch keeps a buffer of up to 1 MiB for the next such
		// record; a larger one (rare) is not reused.
		batch.big = make([]byte, size)
	}
	batch.big = batch.big[:size]
	if _, err := rd.ReadFile(batch.big, p); err != nil {
		return fail()
	}
	return s.parser.Parse(batch.big, mf.fileFromOffset+p, false)
}

// checkCRCs verifies the body CRC of every record of the parsed batches
// and passes them on in order.
func (a *parseAhead) checkCRCs(parsed <-chan *parsedBatch) {
	defer a.wg.Done()
	defer close(a.batches)
	for batch := range parsed {
		for i := range batch.recs {
			r := &batch.recs[i]
			r.crcErr = record.VerifyBodyCRC(r.rec)
		}
		select {
		case a.batches <- batch:
		case <-a.stop:
			return
		}
	}
}

// take returns the helper's parse of the record at file position pos, if
// the helper parsed it: the scan calls it for each record it reaches by
// record sizes from the helper's start, in order. After a miss (the helper
// stopped, or pos is not the helper's next record) it returns false for
// good.
func (a *parseAhead) take(pos int64) (parsedRecord, bool) {
	if a == nil || a.done {
		return parsedRecord{}, false
	}
	if a.cur == nil || a.next == len(a.cur.recs) {
		if a.cur != nil {
			a.free <- a.cur // never blocks: free holds every batch
			a.cur = nil
		}
		b, ok := <-a.batches
		if !ok {
			a.done = true
			return parsedRecord{}, false
		}
		a.cur, a.next = b, 0
	}
	r := a.cur.recs[a.next]
	if r.pos != pos {
		a.done = true
		return parsedRecord{}, false
	}
	a.next++
	return r, true
}

// close stops the helper and waits for it, so that the file is never
// unmapped under it.
func (a *parseAhead) close() {
	if a != nil {
		close(a.stop)
		a.wg.Wait()
	}
}

// checkParsed returns the outcome of the last check of a record the
// helpers parsed: the CRC helper's, when recovery checks CRCs.
func checkParsed(r parsedRecord, checkCRC bool) error {
	if !checkCRC {
		return nil
	}
	return r.crcErr
}
