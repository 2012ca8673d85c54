package transaction

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// EndRequest is EndTransactionRequestHeader.
type EndRequest struct {
	ProducerGroup        string
	TranStateTableOffset int64
	CommitLogOffset      int64
	CommitOrRollback     int32
	FromTransactionCheck bool
	MsgID                string
	TransactionID        string
}

// EndResult is the answer to END_TRANSACTION. NoResponse is set where
// RocketMQ answers nothing (an UNKNOWN state, an unknown type).
type EndResult struct {
	Code       int
	Remark     string
	NoResponse bool
}

// End commits or rolls back a transaction (EndTransactionProcessor). The
// half message at CommitLogOffset must exist and match the producer group
// and queue offset (RocketMQ's checkPrepareMessage, SYSTEM_ERROR with its
// remarks otherwise). A commit writes the real message, then the op
// record; a rollback writes the op record. Ending an ended transaction
// again the same way succeeds without writing; the other way is refused.
func (s *Service) End(ctx context.Context, req EndRequest) EndResult {
	if req.CommitOrRollback != TypeCommit && req.CommitOrRollback != TypeRollback {
		return EndResult{NoResponse: true}
	}
	half, err := s.store.LookMessageByOffset(req.CommitLogOffset)
	if err != nil || half.Topic != record.TransHalfTopic {
		return EndResult{Code: CodeSystemError, Remark: "Find prepared transaction message failed"}
	}
	switch {
	case half.Properties[PropProducerGroup] != req.ProducerGroup:
		return EndResult{Code: CodeSystemError, Remark: "The producer group wrong"}
	case half.QueueOffset != req.TranStateTableOffset:
		return EndResult{Code: CodeSystemError, Remark: "The transaction state table offset wrong"}
	case half.CommitLogOffset != req.CommitLogOffset:
		return EndResult{Code: CodeSystemError, Remark: "The commit log offset wrong"}
	}
	want := Committed
	if req.CommitOrRollback == TypeRollback {
		want = RolledBack
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fresh(ctx); err != nil {
		return EndResult{Code: CodeServiceNA, Remark: "service not available now: " + err.Error()}
	}
	root, ok := s.rootByCL[half.CommitLogOffset]
	if !ok {
		// A half message older than what the service scanned: adopt it.
		s.addHalf(half.QueueOffset, half.CommitLogOffset, &half.Message)
		root = s.rootByCL[half.CommitLogOffset]
	}
	if o, done := s.ended[root]; done {
		if o == want {
			return EndResult{Code: CodeSuccess}
		}
		return EndResult{Code: CodeSystemError, Remark: fmt.Sprintf("the transaction has already ended: %s", o)}
	}
	if want == Committed {
		if res := s.putFinal(ctx, half); res.Code != CodeSuccess {
			return res
		}
		s.end(root, Committed)
		if s.afterFinalPut != nil {
			s.afterFinalPut()
		}
	}
	if err := s.putOp(ctx, half.QueueOffset, want); err != nil {
		if want == Committed {
			// The real message is stored; open repairs the op record.
			s.cfg.Logger.Error("write transaction op record", "halfOffset", half.QueueOffset, "err", err)
			return EndResult{Code: CodeSuccess}
		}
		return putCode(err)
	}
	s.end(root, want)
	return EndResult{Code: CodeSuccess}
}

// finalMessage is EndTransactionProcessor.endMessageTransaction: the half
// message back in its real topic and queue, with the commit sysflag and
// the half's offset as PreparedTransactionOffset.
func finalMessage(half *engine.MessageExt) (*record.Message, error) {
	topic := half.Properties[record.PropertyRealTopic]
	qid, err := strconv.ParseInt(half.Properties[record.PropertyRealQueueID], 10, 32)
	if topic == "" || err != nil {
		return nil, fmt.Errorf("half message at %d has no real topic or queue", half.CommitLogOffset)
	}
	props := make(map[string]string, len(half.Properties))
	for k, v := range half.Properties {
		props[k] = v
	}
	for _, k := range []string{record.PropertyRealTopic, record.PropertyRealQueueID, record.PropertyTransactionPrep,
		PropCheckTimes, PropPreparedQueueOff} {
		delete(props, k)
	}
	m := half.Message
	m.Topic, m.QueueID, m.Properties = topic, int32(qid), props
	m.SysFlag = half.SysFlag&^record.TransactionRollback | record.TransactionCommit
	m.PreparedTransactionOffset = half.CommitLogOffset
	return &m, nil
}

func (s *Service) putFinal(ctx context.Context, half *engine.MessageExt) EndResult {
	m, err := finalMessage(half)
	if err != nil {
		return EndResult{Code: CodeSystemError, Remark: err.Error()}
	}
	if _, err := s.put(ctx, m); err != nil && !errors.Is(err, engine.ErrFlushTimeout) {
		return putCode(err)
	}
	return EndResult{Code: CodeSuccess}
}

// putCode maps a put error as sendFinalMessage does.
func putCode(err error) EndResult {
	switch {
	case errors.Is(err, engine.ErrMessageIllegal), errors.Is(err, engine.ErrPropertiesTooLarge):
		return EndResult{Code: CodeMessageIllegal, Remark: err.Error()}
	case errors.Is(err, engine.ErrReadOnly), errors.Is(err, engine.ErrClosed), errors.Is(err, engine.ErrFlushFailed):
		return EndResult{Code: CodeServiceNA, Remark: "service not available now: " + err.Error()}
	}
	return EndResult{Code: CodeSystemError, Remark: err.Error()}
}
