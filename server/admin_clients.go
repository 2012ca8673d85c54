package server

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/remoting"
)

// clientInfo is what the admin codes report about a client: the header
// fields of its last heartbeat and, for consumers, the group's settings.
type clientInfo struct {
	conn             *remoting.Conn
	language         string
	version          int32
	consumeType      string
	messageModel     string
	consumeFromWhere string
	lastUpdate       time.Time
}

// clientTable records the producers (RocketMQ's ProducerManager) and the
// consumer details the registry does not keep, from heartbeats.
type clientTable struct {
	mu sync.Mutex
	// producers: group → client id → info.
	producers map[string]map[string]*clientInfo
	// consumers: group → client id → info; membership is the registry's.
	consumers map[string]map[string]*clientInfo
}

func newClientTable() *clientTable {
	return &clientTable{producers: map[string]map[string]*clientInfo{}, consumers: map[string]map[string]*clientInfo{}}
}

// adminHeartbeat records a heartbeat's producers and consumer settings.
// hb is the body as parseHeartbeat decoded it.
func (s *Server) adminHeartbeat(c *remoting.Conn, req *remoting.RemotingCommand, hb *heartbeatData) {
	now := s.cfg.Now()
	t := s.clientTable
	t.mu.Lock()
	defer t.mu.Unlock()
	put := func(table map[string]map[string]*clientInfo, group string) *clientInfo {
		g := table[group]
		if g == nil {
			g = map[string]*clientInfo{}
			table[group] = g
		}
		ci := &clientInfo{conn: c, language: req.Language.String(), version: req.Version, lastUpdate: now}
		g[hb.clientID] = ci
		return ci
	}
	for _, p := range hb.producers {
		put(t.producers, p)
	}
	for i, cd := range hb.consumers {
		ci := put(t.consumers, cd.GroupName)
		e := hb.consumerEnums[i]
		ci.consumeType, ci.messageModel, ci.consumeFromWhere = e[0], e[1], e[2]
	}
}

// adminConnClosed forgets the producers and consumer details of a closed
// connection.
func (s *Server) adminConnClosed(c *remoting.Conn) {
	t := s.clientTable
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, table := range []map[string]map[string]*clientInfo{t.producers, t.consumers} {
		for group, g := range table {
			for id, ci := range g {
				if ci.conn == c {
					delete(g, id)
				}
			}
			if len(g) == 0 {
				delete(table, group)
			}
		}
	}
}

// expireProducers drops producers silent for longer than ChannelExpiry.
func (s *Server) expireProducers() {
	deadline := s.cfg.Now().Add(-s.cfg.ChannelExpiry)
	t := s.clientTable
	t.mu.Lock()
	defer t.mu.Unlock()
	for group, g := range t.producers {
		for id, ci := range g {
			if ci.lastUpdate.Before(deadline) {
				delete(g, id)
			}
		}
		if len(g) == 0 {
			delete(t.producers, group)
		}
	}
}

// consumerMember is one online consumer of a group.
type consumerMember struct {
	clientID string
	conn     *remoting.Conn
	info     clientInfo
}

// consumerMembers returns the group's online consumers, sorted by id.
func (s *Server) consumerMembers(group string) []consumerMember {
	r := s.clients
	r.mu.Lock()
	out := make([]consumerMember, 0, len(r.groups[group]))
	for id, m := range r.groups[group] {
		out = append(out, consumerMember{clientID: id, conn: m.conn})
	}
	r.mu.Unlock()
	t := s.clientTable
	t.mu.Lock()
	for i := range out {
		if ci := t.consumers[group][out[i].clientID]; ci != nil {
			out[i].info = *ci
		}
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b consumerMember) int { return strings.Compare(a.clientID, b.clientID) })
	return out
}

// producerConnections returns a producer group's connections.
func (s *Server) producerConnections(group string) ([]admin.Connection, bool) {
	t := s.clientTable
	t.mu.Lock()
	defer t.mu.Unlock()
	g, ok := t.producers[group]
	if !ok {
		return nil, false
	}
	out := make([]admin.Connection, 0, len(g))
	for id, ci := range g {
		out = append(out, admin.Connection{ClientID: id, ClientAddr: peerString(ci.conn), Language: ci.language, Version: ci.version})
	}
	slices.SortFunc(out, func(a, b admin.Connection) int { return strings.Compare(a.ClientID, b.ClientID) })
	return out, true
}

// ProducerGroups returns the producer groups with an online client, sorted.
func (s *Server) ProducerGroups() []string {
	t := s.clientTable
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]string, 0, len(t.producers))
	for g := range t.producers {
		out = append(out, g)
	}
	slices.Sort(out)
	return out
}

// ConsumerGroupsOnline returns the consumer groups with an online client, sorted.
func (s *Server) ConsumerGroupsOnline() []string {
	r := s.clients
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.groups))
	for g := range r.groups {
		out = append(out, g)
	}
	slices.Sort(out)
	return out
}
