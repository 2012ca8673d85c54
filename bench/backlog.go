package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/rocketstore/rocketstore/engine"
)

// backlog writes spec.BacklogBytes of bodies to queue 0, then measures:
//   - catch-up read: GetMessage from offset 0 to the end by one consumer
//     that copies each record out (as a socket write would);
//   - on mmap, abnormal recovery: the store is closed, then made to look
//     crashed (abort marker back, ConsumeQueues and checkpoint deleted), so
//     that Open CRC-checks the whole CommitLog and re-dispatches every
//     record;
//
// each run in turn with its bounds, Spec.Pairs times (min / median /
// max of the ratios): catch-up beside a copy of the same CommitLog bytes
// out of a fresh mapping
// (the backlog is read after its flush, which drops the store's page-table
// entries of the pages it syncs), recovery beside a CRC32 of them read
// through a fresh mapping (as recovery reads them) and, second, read with
// pread in 256 KiB chunks (a copy out of the page cache, which pays no
// fault per page).
func (e env) backlog(ctx context.Context, backendName string) ([]Result, error) {
	cfg := e.storeConfig(engine.AsyncFlush)
	bs, err := e.openStore(backendName, cfg)
	if err != nil {
		return nil, err
	}
	defer bs.remove()
	body := e.spec.BacklogBody
	m := newMessage(0, body)
	n := e.spec.BacklogMsgs()
	var end int64
	for i := int64(0); i < n; i++ {
		res, err := bs.Put(ctx, m)
		if err != nil {
			return nil, err
		}
		end = res.WroteOffset + int64(res.WroteBytes)
	}
	if err := bs.WaitDispatched(ctx, end); err != nil {
		return nil, err
	}
	// A consumer catching up reads a backlog older than the flush
	// interval: flushed, and so (on mmap) no longer in the store's page
	// tables. Flushing it all first reads it in that state every run,
	// instead of in whatever part the background flush had reached.
	if err := bs.FlushCommitLog(0); err != nil {
		return nil, err
	}
	logBytes := end - bs.CommitLog().MinOffset()
	note := fmt.Sprintf("%s backlog, flushed, 32 msgs per GetMessage, records copied out", byteSize(int(logBytes)))
	if backendName != Mmap {
		catch, err := e.catchUp(ctx, bs, backendName, n, logBytes)
		catch.Note = note
		return []Result{catch}, err
	}
	files, err := filepath.Glob(filepath.Join(bs.dir, "commitlog", "*"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)

	// Catch-up, its bound, recovery and its two bounds, in turn,
	// Spec.Pairs times: each recovery reopens the store, so that the
	// next catch-up reads through a fresh mapping as the first did (after
	// its flush dropped the store's page-table entries), and every bound
	// runs beside the workload it bounds, not once after all of them.
	var catches, recs []Result
	var catchBs, recBs, recPs []Bound
	var catchR, recR, recPR []float64
	for i := range max(e.spec.Pairs, 1) {
		if i > 0 {
			// Recovery's dispatch read the log through the store's
			// mapping: reopened cleanly, the store maps it afresh.
			if err := bs.Close(); err != nil {
				return nil, err
			}
			bs.Store = nil
			if err := bs.reopen(bs.cfg); err != nil {
				return nil, err
			}
		}
		catch, err := e.catchUp(ctx, bs, backendName, n, logBytes)
		if err != nil {
			return nil, err
		}
		// Catch-up copies records out of the mapping; recovery reads the
		// mapping and CRC-checks every record: each bound does that work
		// on the same bytes, from the page cache and through page tables
		// filled on first touch, as the store's reads are.
		catchB, err := e.mappedBound(files, logBytes, n, 32*RecordSize(body), false)
		if err != nil {
			return nil, err
		}
		rec, err := e.recoverRun(bs, backendName, n, end, logBytes)
		if err != nil {
			return nil, err
		}
		recB, err := e.mappedBound(files, logBytes, n, 0, true)
		if err != nil {
			return nil, err
		}
		// The same bytes read without a mapping: pread in 256 KiB chunks,
		// with the CRC (a copy instead of a fault per page).
		recP, err := e.preadBound(files, logBytes, n, 256<<10)
		if err != nil {
			return nil, err
		}
		catches, recs = append(catches, catch), append(recs, rec)
		catchBs, recBs, recPs = append(catchBs, catchB), append(recBs, recB), append(recPs, recP)
		catchR = append(catchR, catch.MsgsPerS/catchB.MsgsPerS)
		recR, recPR = append(recR, rec.MsgsPerS/recB.MsgsPerS), append(recPR, rec.MsgsPerS/recP.MsgsPerS)
	}
	byRate := func(r Result) float64 { return r.MsgsPerS }
	boundRate := func(b Bound) float64 { return b.MsgsPerS }
	catch, rec := medianBy(catches, byRate), medianBy(recs, byRate)
	catchB, recB, recP := medianBy(catchBs, boundRate), medianBy(recBs, boundRate), medianBy(recPs, boundRate)
	catchB.setRatios(catchR)
	recB.setRatios(recR)
	recP.setRatios(recPR)
	catch.Note = note + runsNote(catches)
	rec.Note = fmt.Sprintf("abnormal: %s CommitLog CRC-checked and re-dispatched in %.2f s (%.0f MB/s of log)",
		byteSize(int(logBytes)), rec.Seconds, float64(logBytes)/rec.Seconds/1e6) + runsNote(recs)
	catch.Bound, rec.Bound, rec.Physical = &catchB, &recB, &recP
	return []Result{catch, rec}, nil
}

// runsNote is the spread of runs' rates for a note ("" for one run).
func runsNote(runs []Result) string {
	if len(runs) < 2 {
		return ""
	}
	rates := make([]float64, len(runs))
	for i, r := range runs {
		rates[i] = r.MsgsPerS
	}
	s := spreadOf(rates)
	return fmt.Sprintf("; %d runs: msgs/s min/median/max %s/%s/%s", len(runs), num(s.min), num(s.med), num(s.max))
}

// catchUp reads the n-message backlog of queue 0 from offset 0, copying
// every record out, and returns the run.
func (e env) catchUp(ctx context.Context, bs *benchStore, backendName string, n, logBytes int64) (Result, error) {
	body := e.spec.BacklogBody
	c := &consumer{bs: bs, buf: make([]byte, 4*body+4096)}
	start := time.Now()
	if err := c.consume(ctx, n); err != nil {
		return Result{}, err
	}
	r := Result{Group: GroupCatchUp, Backend: backendName, Body: body, Msgs: n, BodyBytes: n * int64(body),
		LogBytes: logBytes, Seconds: time.Since(start).Seconds()}
	r.finish()
	return r, nil
}

// recoverRun closes the store, makes it look crashed and times its reopening:
// abnormal recovery of the n records up to end.
func (e env) recoverRun(bs *benchStore, backendName string, n, end, logBytes int64) (Result, error) {
	if err := bs.Close(); err != nil {
		return Result{}, err
	}
	bs.Store = nil
	if err := markCrashed(bs.dir); err != nil {
		return Result{}, err
	}
	start := time.Now()
	if err := bs.reopen(bs.cfg); err != nil {
		return Result{}, err
	}
	elapsed := time.Since(start)
	rep := bs.Recovery()
	if !rep.Abnormal || int64(rep.Redispatched) != n || rep.CommitLogEnd != end {
		return Result{}, fmt.Errorf("bench: recovery did not replay the backlog: %+v, want %d records to %d", rep, n, end)
	}
	body := e.spec.BacklogBody
	r := Result{Group: GroupRecovery, Backend: backendName, Body: body, Msgs: n, BodyBytes: n * int64(body),
		LogBytes: logBytes, Seconds: elapsed.Seconds()}
	r.finish()
	return r, nil
}

// markCrashed makes the closed store in dir look crashed with its
// ConsumeQueues and checkpoint lost: the abort marker is put back and
// consumequeue/ and checkpoint are deleted, so that the next Open
// CRC-checks the whole CommitLog and re-dispatches every record.
func markCrashed(dir string) error {
	for _, name := range []string{"consumequeue", "checkpoint"} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "abort"), nil, 0o644)
}
