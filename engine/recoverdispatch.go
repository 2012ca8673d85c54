package engine

import "fmt"

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
		for i := range reqs {
			req := &reqs[i]
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
