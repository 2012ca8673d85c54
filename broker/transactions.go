package broker

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/rocketstore/rocketstore/broker/transaction"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/record"
)

// openTransactions starts the transaction service once the store's
// queues are dispatched (it rebuilds its state from the half and op
// queues).
func (b *Broker) openTransactions() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if b.manual() {
		if _, err := engineops.Of(b.store).Dispatch(); err != nil {
			return err
		}
	} else if err := b.store.WaitDispatched(ctx, b.store.CommitLog().MaxOffset()); err != nil {
		return fmt.Errorf("broker: wait for dispatch before the transaction service: %w", err)
	}
	tc := b.cfg.Transaction
	var err error
	b.tx, err = transaction.Open(ctx, b.store, hooks.ManualService(transaction.Config{TimeOut: tc.TimeOut,
		CheckMax: tc.CheckMax, CheckInterval: tc.CheckInterval, Clock: b.cfg.Store.Clock,
		Logger: b.logger, Put: b.writer().Put, Active: b.writer().Writable}, b.manual()))
	return err
}

// InvalidateTransactions has the transaction service rebuild its state
// from the half and op queues before it next uses it: a replicated group
// calls it when a replica starts leading (see transaction.Service.Invalidate).
func (b *Broker) InvalidateTransactions() { b.tx.Invalidate() }

// isHalfMessage is SendMessageProcessor's test: TRAN_MSG=true, except for
// a retried message that is being delayed (or a prepared sysflag).
func isHalfMessage(req *SendRequest, props map[string]string) bool {
	if record.TransactionType(req.SysFlag) == record.TransactionPrepared {
		return true
	}
	v, _ := strconv.ParseBool(props[record.PropertyTransactionPrep])
	return v && !(req.ReconsumeTimes > 0 && props[record.PropertyDelayTimeLevel] != "" &&
		props[record.PropertyDelayTimeLevel] != "0")
}

// prepareTransaction stores a half message, or refuses it when
// rejectTransactionMessage is set.
func (b *Broker) prepareTransaction(ctx context.Context, req *SendRequest, qid int32, props map[string]string) SendResult {
	if b.cfg.Transaction.Reject {
		return SendResult{Code: NoPermission, Remark: "the broker[" + b.cfg.BrokerName + "] sending transaction message is forbidden"}
	}
	if req.Cluster != "" {
		props[record.PropertyCluster] = req.Cluster
	}
	m := &record.Message{Topic: req.Topic, QueueID: qid, Flag: req.Flag, Body: req.Body, Properties: props,
		SysFlag: req.SysFlag, BornTimestamp: req.BornTimestamp, BornHost: req.BornHost, ReconsumeTimes: req.ReconsumeTimes}
	res, err := b.tx.Prepare(ctx, m)
	out := putResult(err)
	if out.Code == Success || out.Code == FlushDiskTimeout {
		out.MsgID, out.Topic, out.QueueID, out.QueueOffset, out.MsgNum = res.MsgID(), req.Topic, qid, res.QueueOffset, 1
	}
	return out
}

// EndTransaction answers END_TRANSACTION (37); see transaction.Service.End.
func (b *Broker) EndTransaction(ctx context.Context, req transaction.EndRequest) transaction.EndResult {
	if b.closed.Load() {
		return transaction.EndResult{Code: int(ServiceNotAvailable), Remark: "the broker is shutting down"}
	}
	return b.tx.End(ctx, req)
}

// SetTransactionChecker installs what sends CHECK_TRANSACTION_STATE to
// producers (the server).
func (b *Broker) SetTransactionChecker(c transaction.Checker) { b.tx.SetChecker(c) }

// CheckTransactions runs one check-back pass now (what the
// transactionCheckInterval timer does; Manual brokers call it).
func (b *Broker) CheckTransactions(ctx context.Context) (transaction.CheckReport, error) {
	if b.closed.Load() {
		return transaction.CheckReport{}, ErrClosed
	}
	return b.tx.Check(ctx)
}

// PendingTransactions returns the number of open transactions.
func (b *Broker) PendingTransactions() int { return b.tx.Pending() }
