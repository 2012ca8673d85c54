package engine

import (
	"encoding/binary"
	"errors"
	"sync"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/engine/record"
)

// parseAhead splits abnormal recovery's work on one CommitLog file over
// three goroutines in a pipeline: a helper walks the record chain from the
// scan's start and parses each record into its dispatch request (every
// check but the body CRC), in batches; a second helper checks the body CRCs
// of each batch (when recovery checks CRCs); the scan takes the requests in
// order and dispatches them. On two cores the scheduler spreads the three
// stages over both, and every record header is decoded once. The parser
// stops at the first record that fails a check or at a BLANK record, so the
// scan meets any damage (and a file's end) with its own full check; a CRC
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

// parsedBatch is a run of consecutive records parsed by the helper. Where
// the segment can read through the file (backend.FileReader), the helper
// reads each run into buf with one pread and parses it there: touching a
// mapping's pages for the first time costs a fault each (on a virtual
// machine, microseconds a page even when the page is cached), a pread
// copies from the page cache into a buffer whose pages stay mapped. The
// records' requests and bytes then alias buf, which is reused only after
// the scan has dispatched every record of the batch.
type parsedBatch struct {
	recs []parsedRecord
	buf  []byte
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

// Batch sizes: a batch of 256 records (or one read of parseAheadRead
// bytes), and 4 queued after each helper, keep the parser a few MiB ahead
// of the scan, so that the later stages find the bytes still in the cache.
const (
	parseAheadBatch  = 256
	parseAheadQueued = 4
	parseAheadRead   = 256 << 10
	// maxParseAheadRecord bounds the read the helper grows to for one
	// record larger than parseAheadRead; a TOTALSIZE above it is left to
	// the scan's own check.
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
			pb.buf = make([]byte, parseAheadRead)
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
	go func() {
		defer a.wg.Done()
		defer close(parsed)
		p := pos
		for {
			var batch *parsedBatch
			select {
			case batch = <-a.free:
				batch.recs = batch.recs[:0]
			case <-a.stop:
				return
			}
			var last bool
			if rd != nil {
				p, last = s.parseRead(rd, mf, batch, p)
			} else {
				p, last = s.parseMapped(mf, batch, p)
			}
			if len(batch.recs) > 0 {
				select {
				case parsed <- batch:
				case <-a.stop:
					return
				}
			}
			if last {
				return
			}
		}
	}()
	return a
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

// parseMapped parses up to parseAheadBatch records of mf's mapping from
// file position p into batch. It returns the position after them and
// whether the helper stops there (a record that fails a check, a BLANK
// record, or the end of the file).
func (s *Store) parseMapped(mf *mappedFile, batch *parsedBatch, p int64) (int64, bool) {
	b := mf.seg.View(0, mf.fileSize)
	for len(batch.recs) < parseAheadBatch {
		req, size, blank, err := s.parser.Parse(b[p:], mf.fileFromOffset+p, false)
		if err != nil || blank || size <= 0 {
			return p, true
		}
		batch.recs = append(batch.recs, parsedRecord{pos: p, size: size, rec: b[p : p+int64(size)], req: req})
		p += int64(size)
	}
	return p, false
}

// parseRead reads the bytes from file position p into batch.buf (one
// pread of parseAheadRead bytes, or of a larger record) and parses the
// records that lie whole in them. It returns the position after them and
// whether the helper stops there, as parseMapped. A record cut by the end
// of the read starts the next batch; any other failure, a failed read
// included, stops the helper, and the scan checks from there on its own.
func (s *Store) parseRead(rd backend.FileReader, mf *mappedFile, batch *parsedBatch, p int64) (int64, bool) {
	n := min(int64(parseAheadRead), mf.fileSize-p)
	for {
		if int64(cap(batch.buf)) < n {
			batch.buf = make([]byte, n) // a record above parseAheadRead: rare
		}
		buf := batch.buf[:n]
		if _, err := rd.ReadFile(buf, p); err != nil {
			return p, true
		}
		q := p
		for {
			req, size, blank, err := s.parser.Parse(buf[q-p:], mf.fileFromOffset+q, false)
			if errors.Is(err, record.ErrTruncated) && p+n < mf.fileSize {
				break // cut by the end of the read, not of the file
			}
			if err != nil || blank || size <= 0 {
				return q, true
			}
			batch.recs = append(batch.recs, parsedRecord{pos: q, size: size, rec: buf[q-p : q-p+int64(size)], req: req})
			q += int64(size)
		}
		if q > p {
			return q, false
		}
		// The first record does not fit in the read: read it whole.
		if len(buf) < 8 {
			return p, true
		}
		size := int64(int32(binary.BigEndian.Uint32(buf)))
		if size <= n || size > maxParseAheadRecord {
			return p, true
		}
		n = min(size, mf.fileSize-p)
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
