package broker

import (
	"context"
	"fmt"
	"time"

	"github.com/rocketstore/rocketstore/broker/pop"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/record"
)

// openPop starts pop consumption (package pop) once the store's queues
// are dispatched: it replays the revive topic.
func (b *Broker) openPop() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := hooks.ManualService(pop.Config{
		BrokerName:  b.cfg.BrokerName,
		ReviveTopic: b.ReviveTopic(),
		Clock:       b.cfg.Store.Clock,
		Logger:      b.logger,
		Put:         b.popPut(),
		Arrivals:    b.arrivals,
		QueueIDs:    b.readQueues,
		FS:          b.fs,
		MaxDeliveryAttempts: func(group string) int {
			if g, ok, err := b.groups.Find(group); err == nil && ok {
				return g.RetryMaxTimes + 1
			}
			return pop.DefaultMaxDeliveryAttempts
		},
		DeadLetter: b.popDeadLetter,
		CommittedOffset: func(group, topic string, qid int32) int64 {
			return b.offsets.Query(group, topic, qid)
		},
		CommitOffset: func(group, topic string, qid int32, off int64) {
			b.offsets.Commit("pop", group, topic, qid, off)
		},
	}, b.manual())
	var err error
	b.pop, err = pop.Open(ctx, b.store, cfg)
	return err
}

// popPut is how pop writes its revive-log records: through the
// configured Writer, or (nil) pop's default, into the store without
// waking its dispatcher (engine.Store.PutUnhurried: they are read
// through their queue only when pop starts, and a wake per receive and
// per ack costs goroutine switches).
func (b *Broker) popPut() func(ctx context.Context, m *record.Message) (engine.PutResult, error) {
	if b.cfg.Writer != nil {
		return b.cfg.Writer.Put
	}
	return nil
}

// ReviveTopic is the system topic of pop's records:
// rmq_sys_REVIVE_LOG_{BrokerClusterName}.
func (b *Broker) ReviveTopic() string { return record.ReviveTopic(b.cfg.BrokerClusterName) }

// popDeadLetter moves a message that reached its group's
// maxDeliveryAttempts to the group's DLQ through the send-back path.
func (b *Broker) popDeadLetter(ctx context.Context, group string, m *record.MessageExt) error {
	r := b.SendMsgBack(ctx, &SendMsgBackRequest{Offset: m.CommitLogOffset, Group: group, DelayLevel: -1,
		OriginMsgID: m.MsgID(), OriginTopic: m.Topic})
	if r.Code != Success {
		return fmt.Errorf("broker: send %s back to the DLQ of %s: code %d: %s", m.MsgID(), group, r.Code, r.Remark)
	}
	return nil
}

// Pop returns pop consumption (RocketMQ 5.x's POP_MESSAGE, ACK_MESSAGE and
// CHANGE_MESSAGE_INVISIBLETIME, which the gRPC MessagingService's
// ReceiveMessage, AckMessage and ChangeInvisibleDuration call).
func (b *Broker) Pop() *pop.Service { return b.pop }

// RevivePop runs one pop revive pass now (what the service's goroutine
// does every second; brokers in manual mode call it).
func (b *Broker) RevivePop(ctx context.Context) (pop.ReviveReport, error) {
	if b.closed.Load() {
		return pop.ReviveReport{}, ErrClosed
	}
	return b.pop.Revive(ctx)
}

// ReloadPop has pop consumption rebuild its in-flight state from the
// revive topic: a replicated group calls it when a replica starts
// leading (see pop.Service.Reload).
func (b *Broker) ReloadPop(ctx context.Context) error {
	if b.closed.Load() {
		return ErrClosed
	}
	return b.pop.Reload(ctx)
}

// readQueues are the queue ids of a topic that consumers read: 0 up to
// its readQueueNums.
func (b *Broker) readQueues(topic string) []int32 {
	tc, ok := b.topics.Get(topic)
	if !ok {
		return nil
	}
	qids := make([]int32, tc.ReadQueueNums)
	for i := range qids {
		qids[i] = int32(i)
	}
	return qids
}
