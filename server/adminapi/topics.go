package adminapi

import (
	"context"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
)

func toAdminTopic(tc config.TopicConfig) admin.TopicConfig {
	return admin.TopicConfig{TopicName: tc.TopicName, ReadQueueNums: tc.ReadQueueNums, WriteQueueNums: tc.WriteQueueNums,
		Perm: tc.Perm, TopicFilterType: tc.TopicFilterType, TopicSysFlag: tc.TopicSysFlag, Order: tc.Order}
}

// getAllTopicConfig answers GET_ALL_TOPIC_CONFIG (21):
// TopicConfigSerializeWrapper.
func (a *API) getAllTopicConfig(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	all, v := a.b.Topics().All()
	w := admin.TopicConfigSerializeWrapper{TopicConfigTable: make(map[string]admin.TopicConfig, len(all)),
		DataVersion: admin.DataVersion{Timestamp: v.Timestamp, Counter: v.Counter}}
	for n, tc := range all {
		w.TopicConfigTable[n] = toAdminTopic(tc)
	}
	return adminBody(req, w)
}

// TopicStats returns the offsets of each write queue of topic, or false
// when the broker has no such topic (GET_TOPIC_STATS_INFO).
func (a *API) TopicStats(topic string) (admin.TopicStatsTable, bool) {
	tc, ok := a.b.Topics().Get(topic)
	if !ok {
		return admin.TopicStatsTable{}, false
	}
	st := a.b.Store()
	t := admin.TopicStatsTable{OffsetTable: admin.MQMap[admin.TopicOffset]{}}
	for i := range int32(tc.WriteQueueNums) {
		mq := admin.MessageQueue{Topic: topic, BrokerName: a.cfg.BrokerName, QueueID: i}
		minOff, maxOff := max(0, st.MinOffsetInQueue(topic, i)), max(0, st.MaxOffsetInQueue(topic, i))
		var ts int64
		if maxOff > 0 {
			ts, _ = a.storeTimestamp(topic, i, maxOff-1)
		}
		t.OffsetTable[mq] = admin.TopicOffset{MinOffset: minOff, MaxOffset: maxOff, LastUpdateTimestamp: ts}
	}
	return t, true
}

// storeTimestamp is the store time of the message at a queue offset.
func (a *API) storeTimestamp(topic string, qid int32, off int64) (int64, bool) {
	st := a.b.Store()
	phy, err := st.CommitLogOffsetInQueue(topic, qid, off)
	if err != nil {
		return 0, false
	}
	m, err := st.LookMessageByOffset(phy)
	if err != nil {
		return 0, false
	}
	return m.StoreTimestamp, true
}

// getTopicStatsInfo answers GET_TOPIC_STATS_INFO (202): header topic;
// TopicStatsTable, or TOPIC_NOT_EXIST.
func (a *API) getTopicStatsInfo(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	topic := f.String("topic")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	t, ok := a.TopicStats(topic)
	if !ok {
		return req.NewResponse(remoting.CodeTopicNotExist, "topic["+topic+"] not exist"), nil
	}
	return adminBody(req, t)
}

// systemTopics is TopicValidator.getSystemTopicSet() of RocketMQ 4.9.4.
func systemTopicList() []string {
	return []string{record.DefaultTopic, record.SelfTestTopic, record.OffsetMovedEventTopic, record.ScheduleTopic,
		record.BenchmarkTopic, record.TransHalfTopic, record.TransOpHalfTopic, record.TransCheckMaxTimeTopic,
		record.TraceTopic}
}

// getSystemTopicListFromBroker answers GET_SYSTEM_TOPIC_LIST_FROM_BROKER (305).
func (a *API) getSystemTopicListFromBroker(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	return adminBody(req, admin.TopicList{TopicList: systemTopicList()})
}
