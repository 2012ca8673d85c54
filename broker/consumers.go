package broker

import (
	"maps"
	"sync"

	"github.com/rocketstore/rocketstore/filter"
)

// MessageModel is a consumer group's delivery model.
type MessageModel int

const (
	// Clustering: each message goes to one consumer of the group.
	Clustering MessageModel = iota
	// Broadcasting: each message goes to every consumer.
	Broadcasting
)

// ConsumerData is one group's part of a heartbeat (RocketMQ's
// ConsumerData).
type ConsumerData struct {
	GroupName     string
	MessageModel  MessageModel
	Subscriptions []*filter.SubscriptionData
	UnitMode      bool
}

// ConsumerGroupInfo is what the broker knows of an online consumer group
// (RocketMQ's ConsumerGroupInfo, reduced to what pulls need).
type ConsumerGroupInfo struct {
	GroupName    string
	MessageModel MessageModel
	// Subscriptions by topic.
	Subscriptions map[string]*filter.SubscriptionData
	// Clients are the ids of the clients that sent heartbeats.
	Clients map[string]struct{}
}

// consumerManager is the registry of online consumer groups (RocketMQ's
// ConsumerManager). Channel expiry is the server's job.
type consumerManager struct {
	mu     sync.Mutex
	groups map[string]*ConsumerGroupInfo
}

func newConsumerManager() *consumerManager {
	return &consumerManager{groups: make(map[string]*ConsumerGroupInfo)}
}

// register records a client's subscriptions for a group. A subscription
// replaces the known one for its topic only when its SubVersion is newer
// (RocketMQ's updateSubscription).
func (m *consumerManager) register(clientID string, d ConsumerData) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[d.GroupName]
	if g == nil {
		g = &ConsumerGroupInfo{GroupName: d.GroupName, Subscriptions: make(map[string]*filter.SubscriptionData),
			Clients: make(map[string]struct{})}
		m.groups[d.GroupName] = g
	}
	g.MessageModel = d.MessageModel
	g.Clients[clientID] = struct{}{}
	for _, sd := range d.Subscriptions {
		if old, ok := g.Subscriptions[sd.Topic]; !ok || sd.SubVersion > old.SubVersion {
			g.Subscriptions[sd.Topic] = sd
		}
	}
}

// unregister removes a client; a group without clients is forgotten.
func (m *consumerManager) unregister(clientID, group string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if g := m.groups[group]; g != nil {
		delete(g.Clients, clientID)
		if len(g.Clients) == 0 {
			delete(m.groups, group)
		}
	}
}

// subscription returns a group's message model and its subscription to
// topic (nil if it has none), and whether the group is known, without the
// snapshot find copies: a pull asks on every request.
func (m *consumerManager) subscription(group, topic string) (MessageModel, *filter.SubscriptionData, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[group]
	if g == nil {
		return 0, nil, false
	}
	return g.MessageModel, g.Subscriptions[topic], true
}

// find returns a snapshot of a group, or nil.
func (m *consumerManager) find(group string) *ConsumerGroupInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[group]
	if g == nil {
		return nil
	}
	cp := *g
	cp.Subscriptions = maps.Clone(g.Subscriptions)
	cp.Clients = maps.Clone(g.Clients)
	return &cp
}
