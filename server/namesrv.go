package server

import (
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/remoting"
)

// Name-server request codes of the broker registry (Java RequestCode).
const (
	codeRegisterBroker   int32 = 103
	codeUnregisterBroker int32 = 104
)

// nameServerCodes are the request codes the name-server role answers;
// every other registered code belongs to the broker role.
var nameServerCodes = map[int32]bool{
	remoting.CodeGetRouteInfoByTopic:        true,
	remoting.CodeGetBrokerClusterInfo:       true,
	remoting.CodeGetAllTopicListFromNamesrv: true,
	remoting.CodeDeleteTopicInNamesrv:       true,
	codeRegisterBroker:                      true,
	codeUnregisterBroker:                    true,
}

// brokerLive is RocketMQ's BrokerLiveInfo: when a broker last registered,
// the topic table version it registered, the connection it registered on
// and its HA address.
type brokerLive struct {
	lastUpdate   time.Time
	dataVersion  config.DataVersion
	conn         *remoting.Conn
	haServerAddr string
}

// brokerRef names one registered broker.
type brokerRef struct {
	cluster, name, addr string
}

// routeTable is the name server's view of the registered brokers
// (RocketMQ's RouteInfoManager): clusters, broker groups with their
// members by broker id, each topic's queue data per broker group, and the
// live table that expires brokers that stop registering.
type routeTable struct {
	now    func() time.Time
	expiry time.Duration

	mu sync.RWMutex
	// topics: topic → broker name → the group master's queue data.
	topics map[string]map[string]queueData
	// brokers: broker name → cluster and members (id → address).
	brokers map[string]*brokerData
	// clusters: cluster → broker names.
	clusters map[string]map[string]bool
	// live: broker address → liveness.
	live map[string]*brokerLive
}

func newRouteTable(now func() time.Time, expiry time.Duration) *routeTable {
	return &routeTable{now: now, expiry: expiry, topics: map[string]map[string]queueData{},
		brokers: map[string]*brokerData{}, clusters: map[string]map[string]bool{}, live: map[string]*brokerLive{}}
}

// registration is one REGISTER_BROKER request, decoded.
type registration struct {
	cluster, name, addr, haServerAddr string
	id                                int64
	// topics is nil when the request carried no topic table.
	topics      map[string]config.TopicConfig
	dataVersion config.DataVersion
	conn        *remoting.Conn
}

// register records a broker's registration (RouteInfoManager.registerBroker)
// and returns its group's master address and the master's HA address for a
// slave ("" for a master or when the group has no master yet). Only a
// master's topic table defines the group's queue data, and it replaces the
// group's previous queue data when its version changed, so that topics the
// broker deleted leave the routes.
func (t *routeTable) register(r registration) (masterAddr, masterHA string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.clusters[r.cluster] == nil {
		t.clusters[r.cluster] = map[string]bool{}
	}
	t.clusters[r.cluster][r.name] = true
	bd := t.brokers[r.name]
	first := bd == nil
	if first {
		bd = &brokerData{Cluster: r.cluster, BrokerName: r.name, BrokerAddrs: map[string]string{}}
		t.brokers[r.name] = bd
	}
	bd.Cluster = r.cluster
	// A broker whose id changed (a slave switched to master, or back)
	// leaves its old slot: one address has one id in a group.
	for id, addr := range bd.BrokerAddrs {
		if addr == r.addr && id != idKey(r.id) {
			delete(bd.BrokerAddrs, id)
		}
	}
	old, had := bd.BrokerAddrs[idKey(r.id)]
	first = first || !had || old != r.addr
	bd.BrokerAddrs[idKey(r.id)] = r.addr
	prev := t.live[r.addr]
	if r.topics != nil && r.id == 0 && (first || prev == nil || prev.dataVersion != r.dataVersion) {
		t.replaceQueueDataLocked(r.name, r.topics)
	}
	t.live[r.addr] = &brokerLive{lastUpdate: t.now(), dataVersion: r.dataVersion, conn: r.conn, haServerAddr: r.haServerAddr}
	if r.id != 0 {
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
func (t *routeTable) replaceQueueDataLocked(name string, topics map[string]config.TopicConfig) {
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
			t.topics[topic] = map[string]queueData{}
		}
		t.topics[topic][name] = queueData{BrokerName: name, ReadQueueNums: tc.ReadQueueNums,
			WriteQueueNums: tc.WriteQueueNums, Perm: tc.Perm, TopicSynFlag: tc.TopicSysFlag}
	}
}

// unregister removes broker id of group name at addr (UNREGISTER_BROKER).
func (t *routeTable) unregister(cluster, name, addr string, id int64) {
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
func (t *routeTable) removeGroupLocked(cluster, name string) {
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

// removeAddrLocked forgets every registration of addr
// (RouteInfoManager.onChannelDestroy) and returns the groups it left.
func (t *routeTable) removeAddrLocked(addr string) []brokerRef {
	delete(t.live, addr)
	var gone []brokerRef
	for name, bd := range t.brokers {
		for id, a := range bd.BrokerAddrs {
			if a == addr {
				delete(bd.BrokerAddrs, id)
				gone = append(gone, brokerRef{bd.Cluster, name, addr})
			}
		}
		if len(bd.BrokerAddrs) == 0 {
			t.removeGroupLocked(bd.Cluster, name)
		}
	}
	return gone
}

// expire removes brokers that have not registered for the expiry
// (scanNotActiveBroker) and closes their connections.
func (t *routeTable) expire() []brokerRef {
	deadline := t.now().Add(-t.expiry)
	t.mu.Lock()
	var gone []brokerRef
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

// connClosed detaches c from the brokers that registered on it and
// returns them. Unlike RocketMQ's onChannelDestroy it forgets none of
// them: a closed connection says nothing of the broker (its registrar may
// have timed out on another name server, a proxy may have cut it), and a
// broker forgotten while it lives is unroutable until it registers again.
// A broker that is gone stops registering and expires after the expiry,
// and a new master of its group replaces it in its group at once.
func (t *routeTable) connClosed(c *remoting.Conn) []brokerRef {
	t.mu.Lock()
	defer t.mu.Unlock()
	var detached []brokerRef
	for addr, l := range t.live {
		if l.conn != c {
			continue
		}
		l.conn = nil
		for name, bd := range t.brokers {
			for _, a := range bd.BrokerAddrs {
				if a == addr {
					detached = append(detached, brokerRef{bd.Cluster, name, addr})
				}
			}
		}
	}
	return detached
}

// route returns the registered route of topic: the queue data of every
// group holding it (sorted by broker name) and those groups' members.
func (t *routeTable) route(topic string) topicRouteData {
	t.mu.RLock()
	defer t.mu.RUnlock()
	rd := topicRouteData{FilterServer: map[string]any{}}
	for _, name := range slices.Sorted(maps.Keys(t.topics[topic])) {
		bd := t.brokers[name]
		if bd == nil {
			continue
		}
		rd.QueueDatas = append(rd.QueueDatas, t.topics[topic][name])
		rd.BrokerDatas = append(rd.BrokerDatas, brokerData{Cluster: bd.Cluster, BrokerName: name,
			BrokerAddrs: maps.Clone(bd.BrokerAddrs)})
	}
	return rd
}

// clusterInfo returns every registered group and cluster.
func (t *routeTable) clusterInfo() clusterInfo {
	t.mu.RLock()
	defer t.mu.RUnlock()
	ci := clusterInfo{BrokerAddrTable: map[string]brokerData{}, ClusterAddrTable: map[string][]string{}}
	for name, bd := range t.brokers {
		ci.BrokerAddrTable[name] = brokerData{Cluster: bd.Cluster, BrokerName: name, BrokerAddrs: maps.Clone(bd.BrokerAddrs)}
	}
	for c, names := range t.clusters {
		ci.ClusterAddrTable[c] = slices.Sorted(maps.Keys(names))
	}
	return ci
}

// topicNames returns the registered topics.
func (t *routeTable) topicNames() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return slices.Collect(maps.Keys(t.topics))
}

// deleteTopic removes topic's queue data (DELETE_TOPIC_IN_NAMESRV).
func (t *routeTable) deleteTopic(topic string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.topics, topic)
}

func idKey(id int64) string {
	return strconv.FormatInt(id, 10)
}
