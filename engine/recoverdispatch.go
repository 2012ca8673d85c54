package engine

import "fmt"

// dispatchLoadAhead is how many records ahead dispatchRecovered loads
// the request and topic of a record.
const dispatchLoadAhead = 4

// dispatchRecovered dispatches reqs, consecutive records that abnormal
// recovery's scan validated, as the reput service's Apply would one at a
// time (the ConsumeQueue dispatcher, then the others given to Open, record
// by record), with the bookkeeping taken out of the per-record path: the
// service's lock is held once for the run, the queue of the previous
// record is reused without a table lookup, and the checkpoint's logics
// timestamp is set once, to the last record's that reached a queue. It
// returns how many records every dispatcher took before the first
// failure.
func (s *Store) dispatchRecovered(reqs []dispatchRequest) (n int, err error) {
	s.reput.Exclusive(func() error {
		var cq *consumeQueue
		var logics int64
		defer func() {
			if logics != 0 {
				s.checkpoint.setLogics(logics)
			}
		}()
		var touch byte
		defer func() { s.recovery.touch ^= touch }()
		for i := range reqs {
			req := &reqs[i]
			if ahead := i + dispatchLoadAhead; ahead < len(reqs) && len(reqs[ahead].Topic) > 0 {
				// Load a later record's request and topic now: a
				// parser on another core wrote them (the topic by its
				// pread), and each load misses this core's cache
				// (~0.1 s of CPU per GiB in memeqbody, comparing the
				// topic, in some profiles of the bench); they are
				// served while the records before it are dispatched.
				touch ^= reqs[ahead].Topic[0] ^ byte(reqs[ahead].SysFlag)
			}
			put, derr := s.putUnit(req, &cq)
			if put {
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
