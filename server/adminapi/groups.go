package adminapi

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/filter"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
)

// updateAndCreateSubscriptionGroup answers
// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200): body a SubscriptionGroupConfig.
// Fields the body leaves out keep RocketMQ's defaults.
func (a *API) updateAndCreateSubscriptionGroup(_ context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	g, err := a.host.ParseSubscriptionGroup(req.Body)
	if err != nil {
		return a.host.Refuse(req, c, err)
	}
	if err := checkGroupName(g.GroupName); err != nil {
		return badRequest(req, err)
	}
	if g.RetryQueueNums < 0 || g.RetryMaxTimes < 0 || g.RetryQueueNums > 1024 {
		return badRequest(req, fmt.Errorf("group %s: retryQueueNums %d / retryMaxTimes %d out of range", g.GroupName, g.RetryQueueNums, g.RetryMaxTimes))
	}
	if err := a.b.Groups().Update(g); err != nil {
		return badRequest(req, err)
	}
	a.log.Info("subscription group created or updated", "group", g.GroupName, "remote", c.RemoteAddrString())
	return req.NewResponse(remoting.CodeSuccess, ""), nil
}

// checkGroupName applies the topic name rules to a group name, since the
// group names its retry and DLQ topics.
func checkGroupName(g string) error {
	switch {
	case g == "":
		return fmt.Errorf("the specified group is blank")
	case len(g) > 120:
		return fmt.Errorf("the specified group is longer than group max length 120")
	case !validName.MatchString(g):
		return fmt.Errorf("the specified group[%s] contains illegal characters, allowing only ^[%%|a-zA-Z0-9_-]+$", g)
	}
	return nil
}

// SubscriptionGroups returns the broker's subscription group table.
func (a *API) SubscriptionGroups() admin.SubscriptionGroupWrapper {
	all, v := a.b.Groups().All()
	w := admin.SubscriptionGroupWrapper{SubscriptionGroupTable: make(map[string]admin.SubscriptionGroupConfig, len(all)),
		DataVersion: admin.DataVersion{Timestamp: v.Timestamp, Counter: v.Counter}}
	for n, g := range all {
		w.SubscriptionGroupTable[n] = admin.SubscriptionGroupConfig(g)
	}
	return w
}

// getAllSubscriptionGroup answers GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201).
func (a *API) getAllSubscriptionGroup(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	return adminBody(req, a.SubscriptionGroups())
}

// deleteSubscriptionGroup answers DELETE_SUBSCRIPTIONGROUP (207): header
// groupName, removeOffset (optional, false).
func (a *API) deleteSubscriptionGroup(_ context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	group := f.String("groupName")
	removeOffset := f.OptBool("removeOffset", false)
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	if code, remark := a.b.DeleteSubscriptionGroup(group, removeOffset); code != broker.Success {
		return reply(req, code, remark), nil
	}
	a.log.Info("subscription group deleted", "group", group, "removeOffset", removeOffset, "remote", c.RemoteAddrString())
	return req.NewResponse(remoting.CodeSuccess, ""), nil
}

func toAdminSubscription(sd *filter.SubscriptionData) admin.SubscriptionData {
	typ := sd.ExpressionType
	if typ == "" {
		typ = filter.ExpressionTypeTag
	}
	tags, codes := sd.TagsSet, sd.CodeSet
	if tags == nil {
		tags = []string{}
	}
	if codes == nil {
		codes = []int32{}
	}
	return admin.SubscriptionData{Topic: sd.Topic, SubString: sd.SubString, TagsSet: tags, CodeSet: codes,
		SubVersion: sd.SubVersion, ExpressionType: typ}
}

// ConsumerConnection returns a consumer group's online clients and
// subscriptions, or false when no client of the group is online.
func (a *API) ConsumerConnection(group string) (admin.ConsumerConnection, bool) {
	members := a.host.Consumers(group)
	gi := a.b.ConsumerGroup(group)
	if len(members) == 0 || gi == nil {
		return admin.ConsumerConnection{}, false
	}
	cc := admin.ConsumerConnection{SubscriptionTable: map[string]admin.SubscriptionData{}}
	for t, sd := range gi.Subscriptions {
		cc.SubscriptionTable[t] = toAdminSubscription(sd)
	}
	for _, m := range members {
		cc.ConnectionSet = append(cc.ConnectionSet, admin.Connection{ClientID: m.ClientID, ClientAddr: m.Conn.RemoteAddrString(),
			Language: m.Language, Version: m.Version})
		if m.ConsumeType != "" {
			cc.ConsumeType, cc.MessageModel, cc.ConsumeFromWhere = m.ConsumeType, m.MessageModel, m.ConsumeFromWhere
		}
	}
	return cc, true
}

// codeConsumerNotOnline is ResponseCode.CONSUMER_NOT_ONLINE.
const codeConsumerNotOnline = 206

// getConsumerConnectionList answers GET_CONSUMER_CONNECTION_LIST (203):
// header consumerGroup; ConsumerConnection, or CONSUMER_NOT_ONLINE (206).
func (a *API) getConsumerConnectionList(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	group := f.String("consumerGroup")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	cc, ok := a.ConsumerConnection(group)
	if !ok {
		return req.NewResponse(codeConsumerNotOnline, "the consumer group["+group+"] not online"), nil
	}
	return adminBody(req, cc)
}

// getProducerConnectionList answers GET_PRODUCER_CONNECTION_LIST (204):
// header producerGroup; ProducerConnection, or SYSTEM_ERROR when no
// producer of the group sent a heartbeat.
func (a *API) getProducerConnectionList(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	group := f.String("producerGroup")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	conns, ok := a.host.ProducerConnections(group)
	if !ok {
		return req.NewResponse(remoting.CodeSystemError, "the producer group["+group+"] not exist"), nil
	}
	return adminBody(req, admin.ProducerConnection{ConnectionSet: conns})
}

// topicsOfGroup returns the topics a group has offsets for, sorted
// (ConsumerOffsetManager.whichTopicByConsumer).
func (a *API) topicsOfGroup(group string) []string {
	var out []string
	for k := range a.b.Offsets().Table() {
		if i := strings.LastIndex(k, "@"); i >= 0 && k[i+1:] == group {
			out = append(out, k[:i])
		}
	}
	slices.Sort(out)
	return out
}

// groupsOfTopic returns the groups with offsets for topic, sorted.
func (a *API) groupsOfTopic(topic string) []string {
	var out []string
	for k := range a.b.Offsets().Table() {
		if i := strings.LastIndex(k, "@"); i >= 0 && k[:i] == topic {
			out = append(out, k[i+1:])
		}
	}
	slices.Sort(out)
	return out
}

// ConsumeStats returns a group's offsets against the queues' max offsets
// for topic, or for every topic it has offsets for when topic is empty
// (GET_CONSUME_STATS). Topics the broker does not know, and topics an
// online group does not subscribe to, are left out, as in RocketMQ.
func (a *API) ConsumeStats(group, topic string) admin.ConsumeStats {
	topics := []string{topic}
	if topic == "" {
		topics = a.topicsOfGroup(group)
	}
	cs := admin.ConsumeStats{OffsetTable: admin.MQMap[admin.OffsetWrapper]{}}
	gi := a.b.ConsumerGroup(group)
	for _, t := range topics {
		tc, ok := a.b.Topics().Get(t)
		if !ok {
			continue
		}
		if gi != nil && len(gi.Subscriptions) > 0 {
			if _, sub := gi.Subscriptions[t]; !sub {
				continue
			}
		}
		a.addConsumeStats(&cs, group, t, tc.ReadQueueNums)
		a.stats.mu.Lock()
		if sr, ok := a.stats.get(statsGroupGetNums, t+"@"+group); ok {
			_, tps := sr.window(time.Minute)
			cs.ConsumeTps += tps
		}
		a.stats.mu.Unlock()
	}
	return cs
}

func (a *API) addConsumeStats(cs *admin.ConsumeStats, group, topic string, queues int) {
	st := a.b.Store()
	for i := range int32(queues) {
		w := admin.OffsetWrapper{BrokerOffset: max(0, st.MaxOffsetInQueue(topic, i)),
			ConsumerOffset: max(0, a.b.Offsets().Query(group, topic, i))}
		if w.ConsumerOffset > 0 {
			w.LastTimestamp, _ = a.storeTimestamp(topic, i, w.ConsumerOffset-1)
		}
		cs.OffsetTable[admin.MessageQueue{Topic: topic, BrokerName: a.cfg.BrokerName, QueueID: i}] = w
	}
}

// getConsumeStats answers GET_CONSUME_STATS (208): header consumerGroup,
// topic (optional); ConsumeStats.
func (a *API) getConsumeStats(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	group := f.String("consumerGroup")
	topic := f.OptString("topic", "")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	return adminBody(req, a.ConsumeStats(group, topic))
}

// getBrokerConsumeStats answers GET_BROKER_CONSUME_STATS (317): header
// isOrder (optional); ConsumeStatsList over every subscription group.
func (a *API) getBrokerConsumeStats(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	isOrder := f.OptBool("isOrder", false)
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	all, _ := a.b.Groups().All()
	out := admin.ConsumeStatsList{BrokerAddr: a.host.BrokerAddr(), ConsumeStatsList: []map[string][]admin.ConsumeStats{}}
	for _, group := range slices.Sorted(maps.Keys(all)) {
		list := []admin.ConsumeStats{}
		for _, t := range a.topicsOfGroup(group) {
			tc, ok := a.b.Topics().Get(t)
			if !ok || (isOrder && !tc.Order) {
				continue
			}
			cs := a.ConsumeStats(group, t)
			out.TotalDiff += cs.Diff()
			list = append(list, cs)
		}
		out.ConsumeStatsList = append(out.ConsumeStatsList, map[string][]admin.ConsumeStats{group: list})
	}
	return adminBody(req, out)
}

// queryTopicConsumeByWho answers QUERY_TOPIC_CONSUME_BY_WHO (300): header
// topic; GroupList of the online groups subscribed to it and the groups
// with offsets for it.
func (a *API) queryTopicConsumeByWho(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	topic := f.String("topic")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	set := map[string]bool{}
	for _, g := range a.host.ConsumerGroupsOnline() {
		if gi := a.b.ConsumerGroup(g); gi != nil {
			if _, ok := gi.Subscriptions[topic]; ok {
				set[g] = true
			}
		}
	}
	for _, g := range a.groupsOfTopic(topic) {
		set[g] = true
	}
	return adminBody(req, admin.GroupList{GroupList: slices.Sorted(maps.Keys(set))})
}

// queryConsumeTimeSpan answers QUERY_CONSUME_TIME_SPAN (303): header
// topic, group; per write queue the oldest, newest and consumed store
// times and how far behind the group is.
func (a *API) queryConsumeTimeSpan(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	topic, group := f.String("topic"), f.String("group")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	tc, ok := a.b.Topics().Get(topic)
	if !ok {
		return req.NewResponse(remoting.CodeTopicNotExist, "topic["+topic+"] not exist"), nil
	}
	st := a.b.Store()
	now := a.cfg.Clock.Now().UnixMilli()
	body := admin.QueryConsumeTimeSpanBody{ConsumeTimeSpanSet: []admin.QueueTimeSpan{}}
	for i := range int32(tc.WriteQueueNums) {
		ts := admin.QueueTimeSpan{MessageQueue: admin.MessageQueue{Topic: topic, BrokerName: a.cfg.BrokerName, QueueID: i}}
		ts.MinTimeStamp, _ = a.storeTimestamp(topic, i, st.MinOffsetInQueue(topic, i))
		maxOff := st.MaxOffsetInQueue(topic, i)
		ts.MaxTimeStamp, _ = a.storeTimestamp(topic, i, maxOff-1)
		consumed := a.b.Offsets().Query(group, topic, i)
		if consumed > 0 {
			ts.ConsumeTimeStamp, _ = a.storeTimestamp(topic, i, consumed-1)
		} else {
			ts.ConsumeTimeStamp = ts.MinTimeStamp
		}
		if consumed < maxOff {
			if next, ok := a.storeTimestamp(topic, i, max(0, consumed)); ok {
				ts.DelayTime = now - next
			}
		}
		body.ConsumeTimeSpanSet = append(body.ConsumeTimeSpanSet, ts)
	}
	return adminBody(req, body)
}

// getAllConsumerOffset answers GET_ALL_CONSUMER_OFFSET (43):
// ConsumerOffsetSerializeWrapper, the table of consumerOffset.json.
func (a *API) getAllConsumerOffset(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	return adminBody(req, admin.ConsumerOffsetSerializeWrapper{OffsetTable: a.b.Offsets().Table()})
}

// getAllDelayOffset answers GET_ALL_DELAY_OFFSET (45): the delivery
// offset of each delay level, the table of delayOffset.json.
func (a *API) getAllDelayOffset(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	sched := a.b.Schedule()
	if sched == nil {
		return req.NewResponse(remoting.CodeSystemError, "No delay offset in this broker"), nil
	}
	out := admin.DelayOffsetSerializeWrapper{OffsetTable: map[int32]int64{}}
	for level, off := range sched.Offsets() {
		out.OffsetTable[int32(level)] = off
	}
	return adminBody(req, out)
}

// cloneGroupOffset answers CLONE_GROUP_OFFSET (314): header srcGroup,
// destGroup, topic (optional: every topic of srcGroup), offline.
func (a *API) cloneGroupOffset(_ context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	src, dst := f.String("srcGroup"), f.String("destGroup")
	topic := f.OptString("topic", "")
	offline := f.OptBool("offline", false)
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	if err := checkGroupName(dst); err != nil {
		return badRequest(req, err)
	}
	topics := []string{topic}
	if topic == "" {
		topics = a.topicsOfGroup(src)
	}
	gi := a.b.ConsumerGroup(src)
	for _, t := range topics {
		if _, ok := a.b.Topics().Get(t); !ok {
			continue
		}
		if !offline && gi != nil && len(gi.Subscriptions) > 0 {
			if _, sub := gi.Subscriptions[t]; !sub {
				continue
			}
		}
		for qid, off := range a.b.Offsets().QueryAll(src, t) {
			a.b.Offsets().Commit(c.RemoteAddrString(), dst, t, qid, off)
		}
	}
	return req.NewResponse(remoting.CodeSuccess, ""), nil
}

// queryCorrectionOffset answers QUERY_CORRECTION_OFFSET (308): header
// topic, compareGroup, filterGroups (comma separated); per queue the
// smallest offset of the other groups, or Long.MAX_VALUE where that is
// above compareGroup's.
func (a *API) queryCorrectionOffset(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	topic, compare := f.String("topic"), f.String("compareGroup")
	filterGroups := f.OptString("filterGroups", "")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	skip := map[string]bool{}
	for _, g := range strings.Split(filterGroups, ",") {
		skip[strings.TrimSpace(g)] = true
	}
	correction := map[int32]int64{}
	for _, g := range a.groupsOfTopic(topic) {
		if skip[g] {
			continue
		}
		for qid, off := range a.b.Offsets().QueryAll(g, topic) {
			if cur, ok := correction[qid]; !ok || off < cur {
				correction[qid] = off
			}
		}
	}
	for qid, off := range a.b.Offsets().QueryAll(compare, topic) {
		if cur, ok := correction[qid]; ok && cur > off {
			correction[qid] = 1<<63 - 1
		}
	}
	return adminBody(req, admin.QueryCorrectionOffsetBody{CorrectionOffsets: correction})
}

// queryConsumeQueue answers QUERY_CONSUME_QUEUE (321): header topic,
// queueId, index, count, consumerGroup (optional); the units from index.
func (a *API) queryConsumeQueue(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	topic, qid := f.String("topic"), f.Int32("queueId")
	index, count := f.Int64("index"), f.Int32("count")
	group := f.OptString("consumerGroup", "")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	st := a.b.Store()
	if !slices.Contains(st.Topics()[topic], qid) {
		return req.NewResponse(remoting.CodeSystemError, fmt.Sprintf("%d@%s is not exist!", qid, topic)), nil
	}
	body := admin.QueryConsumeQueueResponseBody{MinQueueIndex: st.MinOffsetInQueue(topic, qid),
		MaxQueueIndex: st.MaxOffsetInQueue(topic, qid), QueueData: []admin.ConsumeQueueData{}}
	if group != "" {
		if gi := a.b.ConsumerGroup(group); gi != nil && gi.Subscriptions[topic] != nil {
			sd := toAdminSubscription(gi.Subscriptions[topic])
			body.SubscriptionData = &sd
		} else {
			body.FilterData = fmt.Sprintf("%s@%s is not online!", group, topic)
		}
	}
	resp, err := a.consumeQueueUnits(req, &body, topic, qid, index, count)
	if resp != nil || err != nil {
		return resp, err
	}
	return adminBody(req, body)
}

// consumeQueueUnits fills body with up to count units from index (at most
// 256); an index outside the queue answers SUCCESS with a remark and no
// body, as RocketMQ does.
func (a *API) consumeQueueUnits(req *remoting.RemotingCommand, body *admin.QueryConsumeQueueResponseBody, topic string, qid int32, index int64, count int32) (*remoting.RemotingCommand, error) {
	if index < body.MinQueueIndex || index >= body.MaxQueueIndex || count <= 0 {
		return req.NewResponse(remoting.CodeSuccess, fmt.Sprintf("Index %d of %d@%s is not exist!", index, qid, topic)), nil
	}
	st := a.b.Store()
	for i := index; i < body.MaxQueueIndex && i < index+int64(min(count, 256)); i++ {
		phy, err := st.CommitLogOffsetInQueue(topic, qid, i)
		if err != nil {
			break
		}
		d := admin.ConsumeQueueData{PhysicOffset: phy}
		if m, err := st.LookMessageByOffset(phy); err == nil {
			d.PhysicSize = m.StoreSize
			d.TagsCode = tagsCodeOf(m)
		} else {
			d.Msg = err.Error()
		}
		body.QueueData = append(body.QueueData, d)
	}
	return nil, nil
}

// tagsCodeOf is the ConsumeQueue tags code of a message.
func tagsCodeOf(m *record.MessageExt) int64 { return record.TagsCode(m.Tags()) }
