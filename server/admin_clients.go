package server

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server/adminapi"
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

// clientTable records the consumer details that the registry does not
// keep, from heartbeats (the producers are the producerRegistry's).
type clientTable struct {
	mu sync.Mutex
	// consumers: group → client id → info; membership is the registry's.
	consumers map[string]map[string]*clientInfo
}

func newClientTable() *clientTable {
	return &clientTable{consumers: map[string]map[string]*clientInfo{}}
}

// heartbeatInfo is what a heartbeat request says about its client.
func heartbeatInfo(c *remoting.Conn, req *remoting.RemotingCommand, now time.Time) clientInfo {
	return clientInfo{conn: c, language: req.Language.String(), version: req.Version, lastUpdate: now}
}

// adminHeartbeat records a heartbeat's consumer settings. hb is the body
// as parseHeartbeat decoded it.
func (s *Server) adminHeartbeat(c *remoting.Conn, req *remoting.RemotingCommand, hb *heartbeatData, now time.Time) {
	t := s.clientTable
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, cd := range hb.consumers {
		g := t.consumers[cd.GroupName]
		if g == nil {
			g = map[string]*clientInfo{}
			t.consumers[cd.GroupName] = g
		}
		ci := heartbeatInfo(c, req, now)
		e := hb.consumerEnums[i]
		ci.consumeType, ci.messageModel, ci.consumeFromWhere = e[0], e[1], e[2]
		g[hb.clientID] = &ci
	}
}

// adminConnClosed forgets the consumer details of a closed connection.
func (s *Server) adminConnClosed(c *remoting.Conn) {
	t := s.clientTable
	t.mu.Lock()
	defer t.mu.Unlock()
	for group, g := range t.consumers {
		for id, ci := range g {
			if ci.conn == c {
				delete(g, id)
			}
		}
		if len(g) == 0 {
			delete(t.consumers, group)
		}
	}
}

// consumerMembers returns the group's online consumers with their
// heartbeat details, sorted by id.
func (s *Server) consumerMembers(group string) []adminapi.Consumer {
	r := s.clients
	r.mu.Lock()
	out := make([]adminapi.Consumer, 0, len(r.groups[group]))
	for id, m := range r.groups[group] {
		out = append(out, adminapi.Consumer{ClientID: id, Conn: m.conn})
	}
	r.mu.Unlock()
	t := s.clientTable
	t.mu.Lock()
	for i := range out {
		if ci := t.consumers[group][out[i].ClientID]; ci != nil {
			out[i].Language, out[i].Version = ci.language, ci.version
			out[i].ConsumeType, out[i].MessageModel, out[i].ConsumeFromWhere = ci.consumeType, ci.messageModel, ci.consumeFromWhere
		}
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b adminapi.Consumer) int { return strings.Compare(a.ClientID, b.ClientID) })
	return out
}

// ConsumerGroupsOnline returns the consumer groups with an online client, sorted.
func (s *Server) ConsumerGroupsOnline() []string {
	r := s.clients
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.groups))
}
