package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/filter"
	"github.com/rocketstore/rocketstore/remoting"
)

// member is one client's registration in one consumer group
// (RocketMQ's ClientChannelInfo).
type member struct {
	conn       *remoting.Conn
	lastUpdate time.Time
}

// registry is the online consumers by group and client id (the channel
// tables of RocketMQ's ConsumerManager). The broker keeps the groups'
// subscriptions; the registry keeps who is connected where, and when each
// client was last heard from.
type registry struct {
	s  *Server
	mu sync.Mutex
	// groups: group → client id → member.
	groups map[string]map[string]*member
}

func newRegistry(s *Server) *registry {
	return &registry{s: s, groups: make(map[string]map[string]*member)}
}

// touch records a heartbeat of clientID for group on conn and reports
// whether the client is new to the group (a membership change).
func (r *registry) touch(group, clientID string, c *remoting.Conn, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.groups[group]
	if g == nil {
		g = make(map[string]*member)
		r.groups[group] = g
	}
	m, ok := g[clientID]
	if !ok {
		g[clientID] = &member{conn: c, lastUpdate: now}
		return true
	}
	m.conn, m.lastUpdate = c, now
	return false
}

// remove drops clientID from group; it reports whether it was there.
func (r *registry) remove(group, clientID string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removeLocked(group, clientID)
}

func (r *registry) removeLocked(group, clientID string) bool {
	g := r.groups[group]
	if _, ok := g[clientID]; !ok {
		return false
	}
	delete(g, clientID)
	if len(g) == 0 {
		delete(r.groups, group)
	}
	return true
}

// clientIDs returns the group's client ids, sorted.
func (r *registry) clientIDs(group string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]string, 0, len(r.groups[group]))
	for id := range r.groups[group] {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// conns returns the connections of the group's clients.
func (r *registry) conns(group string) []*remoting.Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*remoting.Conn, 0, len(r.groups[group]))
	for _, m := range r.groups[group] {
		out = append(out, m.conn)
	}
	return out
}

// counts returns the number of groups and of (group, client) members.
func (r *registry) counts() (groups, members int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range r.groups {
		members += len(g)
	}
	return len(r.groups), members
}

type groupClient struct{ group, clientID string }

// drop removes the members selected by pick, then tells the broker and
// the groups' remaining clients.
func (r *registry) drop(pick func(*member) bool, why string) {
	r.mu.Lock()
	var gone []groupClient
	for group, g := range r.groups {
		for id, m := range g {
			if pick(m) {
				gone = append(gone, groupClient{group, id})
			}
		}
	}
	for _, gc := range gone {
		r.removeLocked(gc.group, gc.clientID)
	}
	r.mu.Unlock()
	r.s.departed(gone, why)
}

// connClosed removes the clients whose latest connection was c (RocketMQ's
// doChannelCloseEvent).
func (r *registry) connClosed(c *remoting.Conn) {
	r.drop(func(m *member) bool { return m.conn == c }, "connection closed")
}

// expire removes clients silent for longer than ChannelExpiry and closes
// their connections (scanNotActiveChannel).
func (r *registry) expire() {
	deadline := r.s.cfg.Clock.Now().Add(-r.s.cfg.ChannelExpiry)
	var stale []*remoting.Conn
	r.drop(func(m *member) bool {
		if m.lastUpdate.Before(deadline) {
			stale = append(stale, m.conn)
			return true
		}
		return false
	}, "heartbeat expired")
	for _, c := range stale {
		_ = c.Close()
	}
}

// departed unregisters clients that left, releases their queue locks when
// they are gone from every group, and notifies each affected group.
func (s *Server) departed(gone []groupClient, why string) {
	if len(gone) == 0 {
		return
	}
	groups := map[string]bool{}
	for _, gc := range gone {
		s.b.Unregister(gc.clientID, gc.group)
		s.locks.unlockClient(gc.group, gc.clientID)
		groups[gc.group] = true
		s.log.Info("consumer left", "group", gc.group, "clientID", gc.clientID, "reason", why)
	}
	for g := range groups {
		s.notifyIDsChanged(g)
	}
}

// notifyIDsChanged sends NOTIFY_CONSUMER_IDS_CHANGED (40), one-way, to
// every client of group so that they rebalance now rather than on their
// 20 s timer, unless the group turned notification off.
func (s *Server) notifyIDsChanged(group string) {
	if gc, ok, err := s.b.Groups().Find(group); err == nil && ok && !gc.NotifyConsumerIdsChangedEnable {
		return
	}
	for _, c := range s.clients.conns(group) {
		req := remoting.NewRequest(remoting.CodeNotifyConsumerIDsChanged, nil)
		req.SetExt("consumerGroup", group)
		if err := c.InvokeOneway(context.Background(), req); err != nil {
			s.log.Debug("notify consumer ids changed", "group", group, "err", err)
		}
	}
	if s.metrics != nil {
		s.metrics.ConsumerIDsChanged()
	}
}

// Enums of HeartbeatData's ConsumerData, by Java ordinal (RocketMQ 4.9).
var (
	consumeTypes      = []string{"CONSUME_ACTIVELY", "CONSUME_PASSIVELY"}
	messageModels     = []string{"BROADCASTING", "CLUSTERING"}
	consumeFromWheres = []string{"CONSUME_FROM_LAST_OFFSET", "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST",
		"CONSUME_FROM_MIN_OFFSET", "CONSUME_FROM_MAX_OFFSET", "CONSUME_FROM_FIRST_OFFSET", "CONSUME_FROM_TIMESTAMP"}
)

// Bounds on one heartbeat, so that a hostile body cannot make the broker
// create groups without end.
const (
	maxGroupsPerHeartbeat        = 1000
	maxSubscriptionsPerHeartbeat = 10000
)

// heartbeatData is a decoded HeartbeatData.
type heartbeatData struct {
	clientID  string
	consumers []broker.ConsumerData
	// consumerEnums are the consumers' consumeType, messageModel and
	// consumeFromWhere by name ("" when not sent), for the admin codes.
	consumerEnums [][3]string
	producers     []string
}

// parseHeartbeat decodes and bounds a heartbeat body (HeartbeatData) as
// fastjson does (see lenient.go): the Java, Go and JavaScript clients send
// the enums by name and subVersion as a number, the C++ core (and the
// Python, PHP and Go v1 clients above it) the enums by ordinal and
// subVersion as a string. tagsSet and codeSet are ignored: the broker
// computes the tag sets itself.
func parseHeartbeat(body []byte) (*heartbeatData, error) {
	d, o, err := decodeObject("heartbeat body", body)
	if err != nil {
		return nil, err
	}
	hb := &heartbeatData{clientID: o.str("clientID")}
	cds := o.objects("consumerDataSet", maxGroupsPerHeartbeat)
	for _, pd := range o.objects("producerDataSet", maxGroupsPerHeartbeat) {
		if g := pd.str("groupName"); g != "" {
			hb.producers = append(hb.producers, g)
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if hb.clientID == "" {
		return nil, &fieldError{Body: "heartbeat body", Field: "clientID", Value: `""`, Reason: "missing"}
	}
	subs := 0
	for _, cd := range cds {
		data := broker.ConsumerData{GroupName: cd.str("groupName"), UnitMode: cd.boolean("unitMode", false)}
		enums := [3]string{enumName(cd, "consumeType", consumeTypes), enumName(cd, "messageModel", messageModels),
			enumName(cd, "consumeFromWhere", consumeFromWheres)}
		if enums[1] == "BROADCASTING" {
			data.MessageModel = broker.Broadcasting
		}
		if d.err == nil && data.GroupName == "" {
			d.fail(cd.path+".groupName", nil, "missing: an unnamed consumer group")
		}
		sds := cd.objects("subscriptionDataSet", maxSubscriptionsPerHeartbeat)
		if subs += len(sds); subs > maxSubscriptionsPerHeartbeat {
			d.fail(cd.path+".subscriptionDataSet", fmt.Sprintf("%d in all", subs), fmt.Sprintf("more than %d subscriptions", maxSubscriptionsPerHeartbeat))
		}
		for _, sd := range sds {
			data.Subscriptions = append(data.Subscriptions, subscription(sd.str("topic"), sd.str("subString"),
				sd.str("expressionType"), sd.int("subVersion", 64, 0)))
		}
		if d.err != nil {
			return nil, d.err
		}
		hb.consumers = append(hb.consumers, data)
		hb.consumerEnums = append(hb.consumerEnums, enums)
	}
	return hb, nil
}

// enumName reads enum key of o by name or ordinal and returns its name, ""
// when absent.
func enumName(o jobj, key string, names []string) string {
	if !o.has(key) {
		return ""
	}
	return names[o.enum(key, names, 0)]
}

// subscription builds the broker's SubscriptionData from a heartbeat's
// entry. A tag expression is parsed here (the client's tag and code sets
// are not trusted); an expression that names no tag, or another type such
// as SQL92, is kept as sent and fails at pull time with the Java broker's
// codes.
func subscription(topic, sub, typ string, version int64) *filter.SubscriptionData {
	if typ == "" || typ == filter.ExpressionTypeTag {
		if sd, err := filter.BuildSubscriptionData(topic, sub); err == nil {
			sd.SubVersion = version
			return sd
		}
	}
	return &filter.SubscriptionData{Topic: topic, SubString: sub, SubVersion: version, ExpressionType: typ}
}

// heartbeat answers HEART_BEAT (34): registers each consumer group's
// subscriptions with the broker (creating the group and its retry topic as
// RocketMQ does), records the client's connection and time, and notifies
// the group when the client is new to it.
func (s *Server) heartbeat(_ context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	hb, err := parseHeartbeat(req.Body)
	if err != nil {
		return s.refuse(req, c, err)
	}
	clientID, consumers := hb.clientID, hb.consumers
	if code, remark := s.b.Heartbeat(clientID, consumers); code != broker.Success {
		if code == broker.SystemError {
			// The group's or retry topic's config could not be saved (a
			// full disk): the client is told, and so is the operator,
			// once a minute while it lasts.
			s.heartbeatFaults.Failed("heartbeat refused: a consumer group's config could not be saved",
				errors.New(remark), "clientID", clientID, "remote", peerString(c))
		}
		return reply(req, code, remark), nil
	}
	if len(consumers) > 0 && s.heartbeatFaults.Failing() {
		s.heartbeatFaults.Resumed("heartbeats accepted again", "clientID", clientID)
	}
	now := s.cfg.Clock.Now()
	s.adminHeartbeat(c, req, hb, now)
	s.producers.heartbeat(hb.clientID, hb.producers, heartbeatInfo(c, req, now))
	for _, d := range consumers {
		if s.clients.touch(d.GroupName, clientID, c, now) {
			s.log.Info("consumer joined", "group", d.GroupName, "clientID", clientID, "remote", peerString(c))
			s.notifyIDsChanged(d.GroupName)
		}
	}
	return req.NewResponse(remoting.CodeSuccess, ""), nil
}

// unregisterClient answers UNREGISTER_CLIENT (35): ext clientID and
// consumerGroup (producerGroup is accepted and ignored).
func (s *Server) unregisterClient(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	clientID := f.String("clientID")
	group := f.OptString("consumerGroup", "")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	if group != "" && s.clients.remove(group, clientID) {
		s.departed([]groupClient{{group, clientID}}, "unregistered")
	}
	return req.NewResponse(remoting.CodeSuccess, ""), nil
}

// getConsumerList answers GET_CONSUMER_LIST_BY_GROUP (38): body
// {"consumerIdList":[...]}, or SYSTEM_ERROR when the group has no online
// client, as the Java broker answers.
func (s *Server) getConsumerList(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	group := f.String("consumerGroup")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	ids := s.ConsumerIDs(group)
	if len(ids) == 0 {
		return req.NewResponse(remoting.CodeSystemError, "no consumer for this group, "+group), nil
	}
	return jsonBody(req, struct {
		ConsumerIDList []string `json:"consumerIdList"`
	}{ids})
}

// ConsumerIDs returns the client ids online in group, sorted.
func (s *Server) ConsumerIDs(group string) []string { return s.clients.clientIDs(group) }
