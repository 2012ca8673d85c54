package proxy

import (
	"context"
	"errors"

	"github.com/rocketstore/rocketstore/acl"
	"github.com/rocketstore/rocketstore/broker/transaction"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/proxy/rmqpb"
	"github.com/rocketstore/rocketstore/record"
)

// errNoPublisher reports a check-back for a topic with no 5.x producer
// online and no fallback checker.
var errNoPublisher = errors.New("proxy: no producer of the topic is online")

// EndTransaction commits or rolls back a half message. Its transaction
// id is the half message's offset message id (what SendMessage
// answered), which locates it without any state in the proxy: the half
// must belong to the request's topic and message id.
func (p *Proxy) EndTransaction(ctx context.Context, req *rmqpb.EndTransactionRequest) (*rmqpb.EndTransactionResponse, error) {
	topic := req.GetTopic().GetName()
	if st := validTopic(topic); st != nil {
		return &rmqpb.EndTransactionResponse{Status: st}, nil
	}
	if st := p.authorize(ctx, topicNeed(topic, acl.PermPub)); st != nil {
		return &rmqpb.EndTransactionResponse{Status: st}, nil
	}
	_, off, err := record.ParseOffsetMsgID(req.GetTransactionId())
	if err != nil {
		return &rmqpb.EndTransactionResponse{Status: status(rmqpb.Code_INVALID_TRANSACTION_ID, "transaction id "+quote(req.GetTransactionId())+" is not valid")}, nil
	}
	half, err := p.b.Store().LookMessageByOffset(off)
	if err != nil || half.Topic != transaction.HalfTopic {
		return &rmqpb.EndTransactionResponse{Status: status(rmqpb.Code_INVALID_TRANSACTION_ID, "no half message for transaction id "+req.GetTransactionId())}, nil
	}
	props := properties(half)
	if transactionTopic(props) != topic || messageID(half, props) != req.GetMessageId() {
		return &rmqpb.EndTransactionResponse{Status: status(rmqpb.Code_INVALID_TRANSACTION_ID, "transaction id "+req.GetTransactionId()+" is not of this topic and message id")}, nil
	}
	var typ int32
	switch req.GetResolution() {
	case rmqpb.TransactionResolution_COMMIT:
		typ = transaction.TypeCommit
	case rmqpb.TransactionResolution_ROLLBACK:
		typ = transaction.TypeRollback
	default: // unknown: the transaction stays open for the check-back
		return &rmqpb.EndTransactionResponse{Status: okStatus}, nil
	}
	res := p.b.EndTransaction(ctx, transaction.EndRequest{ProducerGroup: props[transaction.PropProducerGroup],
		TranStateTableOffset: half.QueueOffset, CommitLogOffset: half.CommitLogOffset, CommitOrRollback: typ,
		FromTransactionCheck: req.GetSource() == rmqpb.TransactionSource_SOURCE_SERVER_CHECK,
		MsgID:                req.GetMessageId(), TransactionID: req.GetTransactionId()})
	if res.Code != transaction.CodeSuccess {
		p.log.Warn("end transaction refused", "topic", topic, "transactionId", req.GetTransactionId(), "remark", res.Remark)
		return &rmqpb.EndTransactionResponse{Status: status(rmqpb.Code_INTERNAL_SERVER_ERROR, res.Remark)}, nil
	}
	return &rmqpb.EndTransactionResponse{Status: okStatus}, nil
}

// checkTransaction is the broker's check-back: a half message whose
// producer group is a topic published by an online 5.x producer is sent
// to it as RecoverOrphanedTransactionCommand through its telemetry
// stream; others go to the remoting server's checker.
func (p *Proxy) checkTransaction(group string, half *engine.MessageExt, rec []byte) error {
	props := properties(half)
	sessions := p.clients.publishers(group)
	if len(sessions) == 0 || transactionTopic(props) != group {
		if p.cfg.FallbackChecker != nil {
			return p.cfg.FallbackChecker.CheckTransactionState(group, half, rec)
		}
		return errNoPublisher
	}
	m := toMessage(half, group)
	m.SystemProperties.MessageType = rmqpb.MessageType_TRANSACTION
	cmd := &rmqpb.TelemetryCommand{Command: &rmqpb.TelemetryCommand_RecoverOrphanedTransactionCommand{
		RecoverOrphanedTransactionCommand: &rmqpb.RecoverOrphanedTransactionCommand{Message: m, TransactionId: half.MsgID()}}}
	for _, s := range sessions {
		select {
		case s.out <- cmd:
			return nil
		case <-s.done:
		default: // the stream is backed up: the next check-back retries
		}
	}
	return errNoPublisher
}
