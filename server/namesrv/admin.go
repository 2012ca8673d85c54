package namesrv

import (
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/record"
)

// The route table's side of the name server's admin codes
// (RouteInfoManager's getTopicsByCluster, wipeWritePermOfBroker,
// addWritePermOfBroker and the registered DataVersion).

// TopicsOfCluster returns the registered topics held by a broker of
// cluster (RouteInfoManager.getTopicsByCluster).
func (t *RouteTable) TopicsOfCluster(cluster string) []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	var out []string
	for topic, byBroker := range t.topics {
		for name := range byBroker {
			if bd := t.brokers[name]; bd != nil && bd.Cluster == cluster {
				out = append(out, topic)
				break
			}
		}
	}
	return out
}

// SetWritePerm adds or removes the write permission in the queue data of
// broker group name and returns how many topics changed
// (RouteInfoManager.wipeWritePermOfBroker / addWritePermOfBroker).
func (t *RouteTable) SetWritePerm(name string, add bool) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, byBroker := range t.topics {
		qd, ok := byBroker[name]
		if !ok {
			continue
		}
		perm := qd.Perm &^ record.PermWrite
		if add {
			perm = qd.Perm | record.PermWrite
		}
		if perm != qd.Perm {
			qd.Perm = perm
			byBroker[name] = qd
			n++
		}
	}
	return n
}

// DataVersion returns the topic-table version a broker last registered.
func (t *RouteTable) DataVersion(addr string) (config.DataVersion, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	l, ok := t.live[addr]
	if !ok {
		return config.DataVersion{}, false
	}
	return l.dataVersion, true
}
