package server

import (
	"context"
	"errors"

	"github.com/rocketstore/rocketstore/broker/transaction"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
)

// errNoProducer reports a check-back for a group with no producer online.
var errNoProducer = errors.New("no producer of the group is online")

// endTransaction answers END_TRANSACTION (37). The clients send it
// one-way; a response, when RocketMQ gives one, goes only to requests that
// want one. An UNKNOWN state (0) is not answered: the transaction stays
// open for the check-back.
func (s *Server) endTransaction(ctx context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	er := transaction.EndRequest{
		ProducerGroup:        f.String("producerGroup"),
		TranStateTableOffset: f.Int64("tranStateTableOffset"),
		CommitLogOffset:      f.Int64("commitLogOffset"),
		CommitOrRollback:     f.Int32("commitOrRollback"),
		FromTransactionCheck: f.OptBool("fromTransactionCheck", false),
		MsgID:                f.OptString("msgId", ""),
		TransactionID:        f.OptString("transactionId", ""),
	}
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	res := s.b.EndTransaction(ctx, er)
	if res.Code != transaction.CodeSuccess {
		s.log.Warn("end transaction refused", "group", er.ProducerGroup, "commitLogOffset", er.CommitLogOffset,
			"commitOrRollback", er.CommitOrRollback, "remark", res.Remark)
	}
	if res.NoResponse || req.IsOneway() {
		return nil, nil
	}
	return req.NewResponse(int32(res.Code), res.Remark), nil
}

// TransactionChecker returns the check-back that sends
// CHECK_TRANSACTION_STATE to remoting producers, for a front that
// installs its own checker on the broker and passes other groups on.
func (s *Server) TransactionChecker() transaction.Checker {
	return transaction.CheckerFunc(s.checkTransactionState)
}

// checkTransactionState sends CHECK_TRANSACTION_STATE (39), one-way, to a
// producer of the half message's group (Broker2Client.checkProducerTransactionState).
func (s *Server) checkTransactionState(group string, half *engine.MessageExt, rec []byte) error {
	conns := s.producers.groupConns(group)
	if len(conns) == 0 {
		return errNoProducer
	}
	uniq := half.Properties[record.PropertyUniqClientMsgID]
	req := remoting.NewRequest(remoting.CodeCheckTransactionState, rec)
	req.SetExtInt("tranStateTableOffset", half.QueueOffset)
	req.SetExtInt("commitLogOffset", half.CommitLogOffset)
	req.SetExt("msgId", uniq)
	req.SetExt("transactionId", uniq)
	req.SetExt("offsetMsgId", half.MsgID())
	var err error
	for _, c := range conns {
		if err = c.InvokeOneway(context.Background(), req); err == nil {
			return nil
		}
	}
	return err
}
