package server

import (
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/remoting"
)

// producerRegistry is RocketMQ's ProducerManager: the connections of the
// producers that sent heartbeats, by client id (for request-reply, whose
// reply is pushed to the requesting client) and by group (for the
// transaction check-back, sent to a producer of the half message's group).
type producerRegistry struct {
	mu      sync.Mutex
	clients map[string]*member            // client id → latest connection
	groups  map[string]map[string]*member // group → client id → member
}

func newProducerRegistry() *producerRegistry {
	return &producerRegistry{clients: map[string]*member{}, groups: map[string]map[string]*member{}}
}

// heartbeat records the producer groups of a client's heartbeat (parsed
// with the rest of the body by parseHeartbeat). Heartbeats without
// producers change nothing.
func (r *producerRegistry) heartbeat(clientID string, groups []string, c *remoting.Conn, now time.Time) {
	if clientID == "" || len(groups) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	m := &member{conn: c, lastUpdate: now}
	r.clients[clientID] = m
	for _, group := range groups {
		g := r.groups[group]
		if g == nil {
			g = map[string]*member{}
			r.groups[group] = g
		}
		g[clientID] = m
	}
}

// findClient returns the connection of a producer client id (findChannel).
func (r *producerRegistry) findClient(clientID string) *remoting.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.clients[clientID]; m != nil {
		return m.conn
	}
	return nil
}

// groupConns returns the connections of a producer group's clients.
func (r *producerRegistry) groupConns(group string) []*remoting.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*remoting.Conn, 0, len(r.groups[group]))
	for _, m := range r.groups[group] {
		out = append(out, m.conn)
	}
	return out
}

// drop removes the producers picked (a closed connection, or silent for
// too long) and returns their connections.
func (r *producerRegistry) drop(pick func(*member) bool) []*remoting.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	var gone []*remoting.Conn
	for id, m := range r.clients {
		if pick(m) {
			delete(r.clients, id)
			gone = append(gone, m.conn)
		}
	}
	for name, g := range r.groups {
		for id, m := range g {
			if pick(m) {
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
	r.drop(func(m *member) bool { return m.conn == c })
}

// expire drops producers silent for longer than expiry and closes their
// connections (ProducerManager.scanNotActiveChannel).
func (r *producerRegistry) expire(deadline time.Time) {
	for _, c := range r.drop(func(m *member) bool { return m.lastUpdate.Before(deadline) }) {
		_ = c.Close()
	}
}
