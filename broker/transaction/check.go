package transaction

import (
	"context"
	"errors"
	"strconv"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/clocks"
	"github.com/rocketstore/rocketstore/record"
)

// CheckReport says what one check pass did.
type CheckReport struct {
	Checked, Discarded int
}

// Check runs one pass of TransactionalMessageCheckService: every open
// transaction whose latest half message was born at least its immunity
// (transactionTimeOut, or CHECK_IMMUNITY_TIME_IN_SECONDS) ago is either
// discarded, when it was checked transactionCheckMax times already, or
// written again to the half queue with one more check and checked back.
func (s *Service) Check(ctx context.Context) (CheckReport, error) {
	var rep CheckReport
	type pendingCheck struct {
		group string
		half  *engine.MessageExt
	}
	var checks []pendingCheck
	if !s.cfg.Active() {
		return rep, nil // only the group's leader checks back
	}
	s.mu.Lock()
	if err := s.fresh(ctx); err != nil {
		s.mu.Unlock()
		return rep, err
	}
	now := clocks.Millis(s.cfg.Clock)()
	var err error
	for _, t := range s.sortedOpen() {
		if now-t.born < t.immunity.Milliseconds() && now-t.born > -1 {
			continue
		}
		var half *engine.MessageExt
		if half, err = s.latestHalf(t); err != nil {
			break
		}
		if t.checkTimes >= s.cfg.CheckMax {
			if err = s.discard(ctx, t, half); err != nil {
				break
			}
			rep.Discarded++
			continue
		}
		var again *engine.MessageExt
		if again, err = s.putBack(ctx, t, half); err != nil {
			break
		}
		checks = append(checks, pendingCheck{half.Properties[PropProducerGroup], again})
		rep.Checked++
	}
	s.mu.Unlock()
	s.checkerMu.Lock()
	c := s.checker
	s.checkerMu.Unlock()
	for _, pc := range checks {
		if c == nil {
			s.cfg.Logger.Warn("transaction check: no checker", "group", pc.group)
			continue
		}
		if cerr := c.CheckTransactionState(pc.group, pc.half, encode(pc.half)); cerr != nil {
			s.cfg.Logger.Warn("transaction check-back not sent", "group", pc.group,
				"queueOffset", pc.half.QueueOffset, "err", cerr)
		}
	}
	return rep, err
}

// latestHalf reads a transaction's latest half message.
func (s *Service) latestHalf(t *tx) (*engine.MessageExt, error) {
	return s.store.LookMessageByOffset(t.latestCLO)
}

// putBack writes the half message again with one more check
// (putBackHalfMsgQueue / renewHalfMessageInner) and returns the new copy.
func (s *Service) putBack(ctx context.Context, t *tx, half *engine.MessageExt) (*engine.MessageExt, error) {
	m := half.Message
	m.Properties = make(map[string]string, len(half.Properties)+2)
	for k, v := range half.Properties {
		m.Properties[k] = v
	}
	m.Properties[PropCheckTimes] = strconv.Itoa(t.checkTimes + 1)
	m.Properties[PropPreparedQueueOff] = strconv.FormatInt(t.root, 10)
	res, err := s.put(ctx, &m)
	if err != nil && !errors.Is(err, engine.ErrFlushTimeout) {
		return nil, err
	}
	s.addHalf(res.QueueOffset, res.WroteOffset, &m)
	return &engine.MessageExt{Message: m, QueueOffset: res.QueueOffset, CommitLogOffset: res.WroteOffset,
		StoreTimestamp: res.StoreTimestamp, StoreHost: res.StoreHost, StoreSize: res.WroteBytes}, nil
}

// discard ends a transaction checked too often: the half message is
// copied to TRANS_CHECK_MAX_TIME_TOPIC (the default listener's
// resolveDiscardMsg) and an op record ends it.
func (s *Service) discard(ctx context.Context, t *tx, half *engine.MessageExt) error {
	m := half.Message
	m.Topic, m.QueueID = record.TransCheckMaxTimeTopic, 0
	if _, err := s.put(ctx, &m); err != nil && !errors.Is(err, engine.ErrFlushTimeout) {
		return err
	}
	s.cfg.Logger.Warn("transaction discarded after too many checks", "group", half.Properties[PropProducerGroup],
		"checks", t.checkTimes, "halfOffset", half.QueueOffset, "uniqKey", half.Properties[record.PropertyUniqClientMsgID])
	if err := s.putOp(ctx, half.QueueOffset, Discarded); err != nil {
		return err
	}
	s.end(t.root, Discarded)
	return nil
}

// encode returns a message in the CommitLog record layout (the body of
// CHECK_TRANSACTION_STATE: MessageDecoder.encode).
func encode(m *engine.MessageExt) []byte {
	var e record.Encoder
	p, err := e.Prepare(&m.Message, m.StoreHost, len(m.Body))
	if err != nil {
		return nil
	}
	head, body, tail := e.Encode(p, record.Stamp{QueueOffset: m.QueueOffset, PhysicalOffset: m.CommitLogOffset,
		StoreTimestamp: m.StoreTimestamp, StoreHost: m.StoreHost})
	out := make([]byte, 0, p.Size)
	return append(append(append(out, head...), body...), tail...)
}
