package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/remoting"
)

// messageQueue is RocketMQ's MessageQueue in JSON.
type messageQueue struct {
	Topic      string `json:"topic"`
	BrokerName string `json:"brokerName"`
	QueueID    int    `json:"queueId"`
}

// lockBatchBody is LockBatchRequestBody / UnlockBatchRequestBody.
type lockBatchBody struct {
	ConsumerGroup string         `json:"consumerGroup"`
	ClientID      string         `json:"clientId"`
	MQSet         []messageQueue `json:"mqSet"`
}

type lockEntry struct {
	clientID   string
	lastUpdate time.Time
}

// lockManager is RocketMQ's RebalanceLockManager: a queue is locked by
// one client of a group until the client unlocks it or stops renewing it
// for the lock expiry.
type lockManager struct {
	expiry time.Duration
	clock  clockwork.Clock
	mu     sync.Mutex
	table  map[string]map[messageQueue]*lockEntry // group → queue → holder
}

func newLockManager(expiry time.Duration, clock clockwork.Clock) *lockManager {
	return &lockManager{expiry: expiry, clock: clock, table: make(map[string]map[messageQueue]*lockEntry)}
}

// tryLockBatch locks (or renews) each queue for clientID unless another
// live client holds it, and returns the queues clientID now holds.
func (m *lockManager) tryLockBatch(group, clientID string, mqs []messageQueue) []messageQueue {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.table[group]
	if g == nil {
		g = make(map[messageQueue]*lockEntry)
		m.table[group] = g
	}
	out := make([]messageQueue, 0, len(mqs))
	for _, mq := range mqs {
		e := g[mq]
		switch {
		case e == nil:
			g[mq] = &lockEntry{clientID: clientID, lastUpdate: now}
		case e.clientID == clientID || now.Sub(e.lastUpdate) > m.expiry:
			e.clientID, e.lastUpdate = clientID, now
		default:
			continue
		}
		out = append(out, mq)
	}
	return out
}

// unlockBatch releases the queues clientID holds among mqs.
func (m *lockManager) unlockBatch(group, clientID string, mqs []messageQueue) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.table[group]
	for _, mq := range mqs {
		if e := g[mq]; e != nil && e.clientID == clientID {
			delete(g, mq)
		}
	}
	if len(g) == 0 {
		delete(m.table, group)
	}
}

// unlockClient releases every queue clientID holds in group; a client
// that left cannot renew them, and its successor should not wait for the
// expiry.
func (m *lockManager) unlockClient(group, clientID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.table[group]
	for mq, e := range g {
		if e.clientID == clientID {
			delete(g, mq)
		}
	}
	if len(g) == 0 {
		delete(m.table, group)
	}
}

// expire drops locks past their expiry, so the table does not keep
// queues of groups that are gone.
func (m *lockManager) expire() {
	now := m.clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for group, g := range m.table {
		for mq, e := range g {
			if now.Sub(e.lastUpdate) > m.expiry {
				delete(g, mq)
			}
		}
		if len(g) == 0 {
			delete(m.table, group)
		}
	}
}

// maxLockBatch bounds the queues of one lock request.
const maxLockBatch = 10000

// parseLockBody decodes LockBatchRequestBody / UnlockBatchRequestBody as
// fastjson does (see lenient.go); onlyThisBroker (4.9) is ignored: this
// broker only answers for itself.
func parseLockBody(body []byte) (lockBatchBody, error) {
	var lb lockBatchBody
	d, o, err := decodeObject("lock batch body", body)
	if err != nil {
		return lb, err
	}
	lb.ConsumerGroup, lb.ClientID = o.str("consumerGroup"), o.str("clientId")
	o.boolean("onlyThisBroker", false)
	for _, q := range o.objects("mqSet", maxLockBatch) {
		lb.MQSet = append(lb.MQSet, parseMessageQueue(q))
	}
	if d.err != nil {
		return lb, d.err
	}
	if lb.ConsumerGroup == "" || lb.ClientID == "" {
		return lb, &fieldError{Body: "lock batch body", Reason: "consumerGroup or clientId missing"}
	}
	return lb, nil
}

// parseMessageQueue decodes a MessageQueue object.
func parseMessageQueue(o jobj) messageQueue {
	return messageQueue{Topic: o.str("topic"), BrokerName: o.str("brokerName"), QueueID: int(o.int("queueId", 32, 0))}
}

// lockBatchMQ answers LOCK_BATCH_MQ (41): body {"lockOKMQSet":[...]}.
func (s *Server) lockBatchMQ(_ context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	lb, err := parseLockBody(req.Body)
	if err != nil {
		return s.refuse(req, c, err)
	}
	locked := s.locks.tryLockBatch(lb.ConsumerGroup, lb.ClientID, lb.MQSet)
	return jsonBody(req, struct {
		LockOKMQSet []messageQueue `json:"lockOKMQSet"`
	}{locked})
}

// unlockBatchMQ answers UNLOCK_BATCH_MQ (42).
func (s *Server) unlockBatchMQ(_ context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	lb, err := parseLockBody(req.Body)
	if err != nil {
		return s.refuse(req, c, err)
	}
	s.locks.unlockBatch(lb.ConsumerGroup, lb.ClientID, lb.MQSet)
	return req.NewResponse(remoting.CodeSuccess, ""), nil
}

// LockedQueues returns the queues locked in group and their holders.
func (s *Server) LockedQueues(group string) map[string]string {
	s.locks.mu.Lock()
	defer s.locks.mu.Unlock()
	out := make(map[string]string)
	for mq, e := range s.locks.table[group] {
		out[fmt.Sprintf("%s@%d", mq.Topic, mq.QueueID)] = e.clientID
	}
	return out
}
