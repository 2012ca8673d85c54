package namesrv

import (
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/internal/clocks"
	"github.com/rocketstore/rocketstore/remoting"
)

// brokerLive is RocketMQ's BrokerLiveInfo: when a broker last registered,
// the topic table version it registered, the connection it registered on
// and its HA address.
type brokerLive struct {
	lastUpdate   time.Time
	dataVersion  config.DataVersion
	conn         *remoting.Conn
	haServerAddr string
}

// BrokerRef names one registered broker.
type BrokerRef struct {
	Cluster, Name, Addr string
}

// RouteTable is the name server's view of the registered brokers
// (RocketMQ's RouteInfoManager): clusters, broker groups with their
// members by broker id, each topic's queue data per broker group, and the
// live table that expires brokers that stop registering.
type RouteTable struct {
	clock  clockwork.Clock
	expiry time.Duration

	mu sync.RWMutex
	// topics: topic → broker name → the group master's queue data.
	topics map[string]map[string]QueueData
	// brokers: broker name → cluster and members (id → address).
	brokers map[string]*BrokerData
	// clusters: cluster → broker names.
	clusters map[string]map[string]bool
	// live: broker address → liveness.
	live map[string]*brokerLive
}

// NewRouteTable returns an empty table that reads the time from clock
// (nil: the wall clock) and expires brokers silent for longer than expiry.
func NewRouteTable(clock clockwork.Clock, expiry time.Duration) *RouteTable {
	return &RouteTable{clock: clocks.Or(clock), expiry: expiry, topics: map[string]map[string]QueueData{},
		brokers: map[string]*BrokerData{}, clusters: map[string]map[string]bool{}, live: map[string]*brokerLive{}}
}

// Registration is one REGISTER_BROKER request, decoded.
type Registration struct {
	Cluster, Name, Addr, HAServerAddr string
	ID                                int64
	// Topics is nil when the request carried no topic table.
	Topics      map[string]config.TopicConfig
	DataVersion config.DataVersion
	// Conn is the connection the broker registered on.
	Conn *remoting.Conn
}

// Register records a broker's Registration (RouteInfoManager.registerBroker)
// and returns its group's master address and the master's HA address for a
// slave ("" for a master or when the group has no master yet). Only a
// master's topic table defines the group's queue data, and it replaces the
// group's previous queue data when its version changed, so that topics the
// broker deleted leave the routes.
func (t *RouteTable) Register(r Registration) (masterAddr, masterHA string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.clusters[r.Cluster] == nil {
		t.clusters[r.Cluster] = map[string]bool{}
	}
	t.clusters[r.Cluster][r.Name] = true
	bd := t.brokers[r.Name]
	first := bd == nil
	if first {
		bd = &BrokerData{Cluster: r.Cluster, BrokerName: r.Name, BrokerAddrs: map[string]string{}}
		t.brokers[r.Name] = bd
	}
	bd.Cluster = r.Cluster
	// A broker whose id changed (a slave switched to master, or back)
	// leaves its old slot: one address has one id in a group.
	for id, addr := range bd.BrokerAddrs {
		if addr == r.Addr && id != idKey(r.ID) {
			delete(bd.BrokerAddrs, id)
		}
	}
	old, had := bd.BrokerAddrs[idKey(r.ID)]
	first = first || !had || old != r.Addr
	bd.BrokerAddrs[idKey(r.ID)] = r.Addr
	prev := t.live[r.Addr]
	if r.Topics != nil && r.ID == 0 && (first || prev == nil || prev.dataVersion != r.DataVersion) {
		t.replaceQueueDataLocked(r.Name, r.Topics)
	}
	t.live[r.Addr] = &brokerLive{lastUpdate: t.clock.Now(), dataVersion: r.DataVersion, conn: r.Conn, haServerAddr: r.HAServerAddr}
	if r.ID != 0 {
		if m, ok := bd.BrokerAddrs["0"]; ok {
			masterAddr = m
			if l := t.live[m]; l != nil {
				masterHA = l.haServerAddr
			}
		}
	}
	return masterAddr, masterHA
}

// replaceQueueDataLocked makes topics the queue data of broker group name.
func (t *RouteTable) replaceQueueDataLocked(name string, topics map[string]config.TopicConfig) {
	for topic, byBroker := range t.topics {
		if _, keep := topics[topic]; !keep {
			delete(byBroker, name)
			if len(byBroker) == 0 {
				delete(t.topics, topic)
			}
		}
	}
	for topic, tc := range topics {
		if t.topics[topic] == nil {
			t.topics[topic] = map[string]QueueData{}
		}
		t.topics[topic][name] = QueueData{BrokerName: name, ReadQueueNums: tc.ReadQueueNums,
			WriteQueueNums: tc.WriteQueueNums, Perm: tc.Perm, TopicSynFlag: tc.TopicSysFlag}
	}
}

// Unregister removes broker id of group name at addr (UNREGISTER_BROKER).
func (t *RouteTable) Unregister(cluster, name, addr string, id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.live, addr)
	if bd := t.brokers[name]; bd != nil {
		if bd.BrokerAddrs[idKey(id)] == addr {
			delete(bd.BrokerAddrs, idKey(id))
		}
		if len(bd.BrokerAddrs) == 0 {
			t.removeGroupLocked(bd.Cluster, name)
		}
	}
	if len(t.clusters[cluster]) == 0 {
		delete(t.clusters, cluster)
	}
}

// removeGroupLocked forgets broker group name: its cluster entry and its
// queue data.
func (t *RouteTable) removeGroupLocked(cluster, name string) {
	delete(t.brokers, name)
	if c := t.clusters[cluster]; c != nil {
		delete(c, name)
		if len(c) == 0 {
			delete(t.clusters, cluster)
		}
	}
	for topic, byBroker := range t.topics {
		delete(byBroker, name)
		if len(byBroker) == 0 {
			delete(t.topics, topic)
		}
	}
}

// removeAddrLocked forgets every Registration of addr
// (RouteInfoManager.onChannelDestroy) and returns the groups it left.
func (t *RouteTable) removeAddrLocked(addr string) []BrokerRef {
	delete(t.live, addr)
	var gone []BrokerRef
	for name, bd := range t.brokers {
		for id, a := range bd.BrokerAddrs {
			if a == addr {
				delete(bd.BrokerAddrs, id)
				gone = append(gone, BrokerRef{bd.Cluster, name, addr})
			}
		}
		if len(bd.BrokerAddrs) == 0 {
			t.removeGroupLocked(bd.Cluster, name)
		}
	}
	return gone
}

// Expire removes brokers that have not registered for the expiry
// (scanNotActiveBroker) and closes their connections.
func (t *RouteTable) Expire() []BrokerRef {
	deadline := t.clock.Now().Add(-t.expiry)
	t.mu.Lock()
	var gone []BrokerRef
	var conns []*remoting.Conn
	for addr, l := range t.live {
		if l.lastUpdate.Before(deadline) {
			gone = append(gone, t.removeAddrLocked(addr)...)
			if l.conn != nil {
				conns = append(conns, l.conn)
			}
		}
	}
	t.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
	return gone
}

// ConnClosed detaches c from the brokers that registered on it and
// returns them. Unlike RocketMQ's onChannelDestroy it forgets none of
// them: a closed connection says nothing of the broker (its registrar may
// have timed out on another name server, a proxy may have cut it), and a
// broker forgotten while it lives is unroutable until it registers again.
// A broker that is gone stops registering and expires after the expiry,
// and a new master of its group replaces it in its group at once.
func (t *RouteTable) ConnClosed(c *remoting.Conn) []BrokerRef {
	t.mu.Lock()
	defer t.mu.Unlock()
	var detached []BrokerRef
	for addr, l := range t.live {
		if l.conn != c {
			continue
		}
		l.conn = nil
		for name, bd := range t.brokers {
			for _, a := range bd.BrokerAddrs {
				if a == addr {
					detached = append(detached, BrokerRef{bd.Cluster, name, addr})
				}
			}
		}
	}
	return detached
}

// Route returns the registered route of topic: the queue data of every
// group holding it (sorted by broker name) and those groups' members.
func (t *RouteTable) Route(topic string) TopicRouteData {
	t.mu.RLock()
	defer t.mu.RUnlock()
	rd := TopicRouteData{FilterServer: map[string]any{}}
	for _, name := range slices.Sorted(maps.Keys(t.topics[topic])) {
		bd := t.brokers[name]
		if bd == nil {
			continue
		}
		rd.QueueDatas = append(rd.QueueDatas, t.topics[topic][name])
		rd.BrokerDatas = append(rd.BrokerDatas, BrokerData{Cluster: bd.Cluster, BrokerName: name,
			BrokerAddrs: maps.Clone(bd.BrokerAddrs)})
	}
	return rd
}

// ClusterInfo returns every registered group and cluster.
func (t *RouteTable) ClusterInfo() ClusterInfo {
	t.mu.RLock()
	defer t.mu.RUnlock()
	ci := ClusterInfo{BrokerAddrTable: map[string]BrokerData{}, ClusterAddrTable: map[string][]string{}}
	for name, bd := range t.brokers {
		ci.BrokerAddrTable[name] = BrokerData{Cluster: bd.Cluster, BrokerName: name, BrokerAddrs: maps.Clone(bd.BrokerAddrs)}
	}
	for c, names := range t.clusters {
		ci.ClusterAddrTable[c] = slices.Sorted(maps.Keys(names))
	}
	return ci
}

// TopicNames returns the registered topics.
func (t *RouteTable) TopicNames() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return slices.Collect(maps.Keys(t.topics))
}

// DeleteTopic removes topic's queue data (DELETE_TOPIC_IN_NAMESRV).
func (t *RouteTable) DeleteTopic(topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.topics, topic)
}

func idKey(id int64) string {
	return strconv.FormatInt(id, 10)
}
