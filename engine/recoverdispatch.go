package engine

import "fmt"

// dispatchRecovered dispatches reqs, consecutive records that abnormal
// recovery's scan validated, as the reput service's Apply would one at a
// time (the ConsumeQueue dispatcher, then the others given to Open, record
// by record), with the bookkeeping taken out of the per-record path: the
// service's lock is held once for the run, the queue of the previous
// record is reused without a table lookup (without even comparing the
// topic when same, if not nil, says that record i has the topic and queue
// of record i-1: the parsers compare them while the bytes are in their
// core's cache, and the scan would miss the cache on every record's
// topic), and the checkpoint's logics timestamp is set once, to the last
// record's that reached a queue. It returns how many records every
// dispatcher took before the first failure.
func (s *Store) dispatchRecovered(reqs []dispatchRequest, same []bool) (n int, err error) {
	_ = s.reput.Exclusive(func() error { // fn sets n and err itself and returns nil
		var cq *consumeQueue
		cqOf := -1 // the record whose queue cq is
		var logics int64
		defer func() {
			if logics != 0 {
				s.checkpoint.setLogics(logics)
			}
		}()
		// Runs of one queue's records go to its stage in one step
		// (unless a deleted topic's records must be told apart).
		runs := !noStagedRuns && !s.deleted.any.Load()
		for i := 0; i < len(reqs); i++ {
			req := &reqs[i]
			if runs && cqOf >= 0 && cqOf == i-1 && i < len(same) && same[i] {
				k, derr := cq.putStagedRun(reqs[i:], same[i:], s.extraDispatchers)
				n += k
				if derr != nil {
					req = &reqs[i+k]
					logics = req.StoreTimestamp
					err = fmt.Errorf("dispatch at commitlog offset %d: %w", req.CommitLogOffset, derr)
					return nil
				}
				if k > 0 {
					i += k - 1
					cqOf, logics = i, reqs[i].StoreTimestamp
					continue
				}
			}
			var put bool
			var derr error
			if cqOf >= 0 && cqOf == i-1 && i < len(same) && same[i] {
				if req.Dispatchable() && !s.deletedBelow(req.Topic, req.CommitLogOffset) {
					put, derr = s.putUnitTo(cq, req)
				}
			} else {
				put, derr = s.putUnit(req, &cq)
			}
			if put {
				cqOf = i
				logics = req.StoreTimestamp
			}
			for _, d := range s.extraDispatchers {
				if derr != nil {
					break
				}
				derr = d.Dispatch(req)
			}
			if derr != nil {
				err = fmt.Errorf("dispatch at commitlog offset %d: %w", req.CommitLogOffset, derr)
				return nil
			}
			n++
		}
		return nil
	})
	return n, err
}

// noStagedRuns makes dispatchRecovered put every unit through putUnit: the
// reference TestStagedRunsMatchUnitByUnit compares staged runs with.
var noStagedRuns bool
