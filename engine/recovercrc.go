package engine

import (
	"sync"

	"github.com/rocketstore/rocketstore/engine/record"
)

// parseAhead splits abnormal recovery's work on one CommitLog file between
// two goroutines: a helper walks the record chain from the scan's start
// and parses each record into its dispatch request (every check but the
// body CRC), handing them over in batches; the scan takes the requests in
// order, checks each body CRC and dispatches. On two cores that balances
// the work (parse on one, CRC and ConsumeQueue writes on the other), and
// every record header is decoded once instead of twice. The helper stops
// at the first record that fails a check or at a BLANK record, so the scan
// meets any damage (and a file's end) with its own full check.
type parseAhead struct {
	batches chan *parsedBatch // filled batches, in chain order; closed when the helper stops
	free    chan *parsedBatch // emptied batches, for reuse
	stop    chan struct{}
	wg      sync.WaitGroup
	cur     *parsedBatch
	next    int  // index in cur of the scan's next record
	done    bool // the helper stopped and its batches are used up
}

// parsedBatch is a run of consecutive records parsed by the helper.
type parsedBatch struct {
	recs []parsedRecord
}

// parsedRecord is one record parsed by the helper: its file position,
// size and dispatch request.
type parsedRecord struct {
	pos  int64
	size int32
	req  dispatchRequest
}

// Batch sizes: a batch of 256 records and 4 queued keep the helper at most
// ~1,300 records (1.3 MiB of 1 KiB records) ahead, so the scan finds the
// bytes still in the cache.
const (
	parseAheadBatch  = 256
	parseAheadQueued = 4
)

// minParseAheadBytes is the data below which a helper is not worth
// starting.
var minParseAheadBytes int64 = 4 << 20 // a variable for BenchmarkRecoveryCRCAhead

// startParseAhead starts parsing mf's records from file position pos, or
// returns nil when there is too little to parse.
func (s *Store) startParseAhead(mf *mappedFile, pos int64) *parseAhead {
	if mf.fileSize-pos < minParseAheadBytes {
		return nil
	}
	a := &parseAhead{
		batches: make(chan *parsedBatch, parseAheadQueued),
		free:    make(chan *parsedBatch, parseAheadQueued+2),
		stop:    make(chan struct{}),
	}
	for range parseAheadQueued + 2 {
		a.free <- &parsedBatch{recs: make([]parsedRecord, 0, parseAheadBatch)}
	}
	b := mf.seg.View(0, mf.fileSize)
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer close(a.batches)
		var batch *parsedBatch
		for p := pos; ; {
			if batch == nil {
				select {
				case batch = <-a.free:
					batch.recs = batch.recs[:0]
				case <-a.stop:
					return
				}
			}
			req, size, blank, err := s.parser.Parse(b[p:], mf.fileFromOffset+p, false)
			last := err != nil || blank || size <= 0
			if !last {
				batch.recs = append(batch.recs, parsedRecord{pos: p, size: size, req: req})
				p += int64(size)
			}
			if last || len(batch.recs) == parseAheadBatch {
				if len(batch.recs) > 0 {
					select {
					case a.batches <- batch:
					case <-a.stop:
						return
					}
				}
				batch = nil
			}
			if last {
				return
			}
		}
	}()
	return a
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

// checkParsed finishes the check of a record the helper parsed: its body
// CRC, when recovery checks CRCs.
func checkParsed(b []byte, r parsedRecord, checkCRC bool) error {
	if !checkCRC {
		return nil
	}
	return record.VerifyBodyCRC(b[r.pos : r.pos+int64(r.size)])
}
