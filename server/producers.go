package server

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/remoting"
)

// producerRegistry is RocketMQ's ProducerManager: the producers that sent
// heartbeats, by client id (for request-reply, whose reply is pushed to the
// requesting client) and by group (for the transaction check-back, sent to
// a producer of the half message's group, and for the admin codes that
// list a group's connections). It is the one producer table of the server.
type producerRegistry struct {
	mu      sync.Mutex
	clients map[string]*clientInfo            // client id → latest heartbeat
	groups  map[string]map[string]*clientInfo // group → client id → heartbeat
	// Requesters: the connection each request-reply requester last sent a
	// request on (its REPLY_TO_CLIENT), so that a reply finds a requester
	// whose first heartbeat has not arrived yet. One entry a connection:
	// its latest client id.
	requesters map[string]*remoting.Conn
	requestOf  map[*remoting.Conn]string
}

func newProducerRegistry() *producerRegistry {
	return &producerRegistry{clients: map[string]*clientInfo{}, groups: map[string]map[string]*clientInfo{},
		requesters: map[string]*remoting.Conn{}, requestOf: map[*remoting.Conn]string{}}
}

// requested records that clientID sent a request (a message to be replied
// to) on c.
func (r *producerRegistry) requested(clientID string, c *remoting.Conn) {
	if clientID == "" || c == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.requestOf[c]; ok {
		if old == clientID {
			return
		}
		if r.requesters[old] == c {
			delete(r.requesters, old)
		}
	}
	r.requesters[clientID] = c
	r.requestOf[c] = clientID
}

// heartbeat records the producer groups of a client's heartbeat (parsed
// with the rest of the body by parseHeartbeat) with what info says about
// the client. Heartbeats without producers change nothing.
func (r *producerRegistry) heartbeat(clientID string, groups []string, info clientInfo) {
	if clientID == "" || len(groups) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ci := &info
	r.clients[clientID] = ci
	for _, group := range groups {
		g := r.groups[group]
		if g == nil {
			g = map[string]*clientInfo{}
			r.groups[group] = g
		}
		g[clientID] = ci
	}
}

// findClient returns the connection of a producer client id (findChannel):
// the one its latest heartbeat came on, or else the one it sent a request
// on.
func (r *producerRegistry) findClient(clientID string) *remoting.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ci := r.clients[clientID]; ci != nil {
		return ci.conn
	}
	return r.requesters[clientID]
}

// groupConns returns the connections of a producer group's clients.
func (r *producerRegistry) groupConns(group string) []*remoting.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*remoting.Conn, 0, len(r.groups[group]))
	for _, ci := range r.groups[group] {
		out = append(out, ci.conn)
	}
	return out
}

// connections returns a producer group's clients as the admin codes report
// them, sorted by client id; false when the group has no online client.
func (r *producerRegistry) connections(group string) ([]admin.Connection, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g, ok := r.groups[group]
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

// drop removes the producers picked (a closed connection, or silent for
// too long) and returns their connections.
func (r *producerRegistry) drop(pick func(*clientInfo) bool) []*remoting.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	var gone []*remoting.Conn
	for id, ci := range r.clients {
		if pick(ci) {
			delete(r.clients, id)
			gone = append(gone, ci.conn)
		}
	}
	for name, g := range r.groups {
		for id, ci := range g {
			if pick(ci) {
				delete(g, id)
			}
		}
		if len(g) == 0 {
			delete(r.groups, name)
		}
	}
	return gone
}

func (r *producerRegistry) connClosed(c *remoting.Conn) {
	r.drop(func(ci *clientInfo) bool { return ci.conn == c })
	r.mu.Lock()
	defer r.mu.Unlock()
	if id, ok := r.requestOf[c]; ok {
		delete(r.requestOf, c)
		if r.requesters[id] == c {
			delete(r.requesters, id)
		}
	}
}

// expire drops producers silent for longer than expiry and closes their
// connections (ProducerManager.scanNotActiveChannel).
func (r *producerRegistry) expire(deadline time.Time) {
	for _, c := range r.drop(func(ci *clientInfo) bool { return ci.lastUpdate.Before(deadline) }) {
		_ = c.Close()
	}
}
