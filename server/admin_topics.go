package server

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/remoting"
)

func toAdminTopic(tc config.TopicConfig) admin.TopicConfig {
	return admin.TopicConfig{TopicName: tc.TopicName, ReadQueueNums: tc.ReadQueueNums, WriteQueueNums: tc.WriteQueueNums,
		Perm: tc.Perm, TopicFilterType: tc.TopicFilterType, TopicSysFlag: tc.TopicSysFlag, Order: tc.Order}
}

// getAllTopicConfig answers GET_ALL_TOPIC_CONFIG (21):
// TopicConfigSerializeWrapper.
func (s *Server) getAllTopicConfig(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	all, v := s.b.Topics().All()
	w := admin.TopicConfigSerializeWrapper{TopicConfigTable: make(map[string]admin.TopicConfig, len(all)),
		DataVersion: admin.DataVersion{Timestamp: v.Timestamp, Counter: v.Counter}}
	for n, tc := range all {
		w.TopicConfigTable[n] = toAdminTopic(tc)
	}
	return adminBody(req, w)
}

// TopicStats returns the offsets of each write queue of topic, or false
// when the broker has no such topic (GET_TOPIC_STATS_INFO).
func (s *Server) TopicStats(topic string) (admin.TopicStatsTable, bool) {
	tc, ok := s.b.Topics().Get(topic)
	if !ok {
		return admin.TopicStatsTable{}, false
	}
	st := s.b.Store()
	t := admin.TopicStatsTable{OffsetTable: admin.MQMap[admin.TopicOffset]{}}
	for i := range int32(tc.WriteQueueNums) {
		mq := admin.MessageQueue{Topic: topic, BrokerName: s.cfg.BrokerName, QueueID: i}
		minOff, maxOff := max(0, st.MinOffsetInQueue(topic, i)), max(0, st.MaxOffsetInQueue(topic, i))
		var ts int64
		if maxOff > 0 {
			ts, _ = s.storeTimestamp(topic, i, maxOff-1)
		}
		t.OffsetTable[mq] = admin.TopicOffset{MinOffset: minOff, MaxOffset: maxOff, LastUpdateTimestamp: ts}
	}
	return t, true
}

// storeTimestamp is the store time of the message at a queue offset.
func (s *Server) storeTimestamp(topic string, qid int32, off int64) (int64, bool) {
	st := s.b.Store()
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
func (s *Server) getTopicStatsInfo(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	topic := f.String("topic")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	t, ok := s.TopicStats(topic)
	if !ok {
		return req.NewResponse(remoting.CodeTopicNotExist, "topic["+topic+"] not exist"), nil
	}
	return adminBody(req, t)
}

// topicNames returns the broker's topics, sorted.
func (s *Server) topicNames() []string {
	all, _ := s.b.Topics().All()
	return slices.Sorted(maps.Keys(all))
}

// getTopicsByCluster answers GET_TOPICS_BY_CLUSTER (224): header
// cluster; the topics of the cluster's brokers (none for another cluster).
func (s *Server) getTopicsByCluster(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	cluster := f.String("cluster")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	topics := []string{}
	if cluster == s.cfg.ClusterName {
		topics = s.topicNames()
	}
	return adminBody(req, admin.TopicList{TopicList: topics})
}

// systemTopics is TopicValidator.getSystemTopicSet() of RocketMQ 4.9.4.
func systemTopicList() []string {
	return []string{config.DefaultTopic, config.SelfTestTopic, config.OffsetMovedEventTopic, config.ScheduleTopic,
		"BenchmarkTest", config.TransHalfTopic, "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC",
		"RMQ_SYS_TRACE_TOPIC"}
}

// getSystemTopicListFromBroker answers GET_SYSTEM_TOPIC_LIST_FROM_BROKER (305).
func (s *Server) getSystemTopicListFromBroker(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	return adminBody(req, admin.TopicList{TopicList: systemTopicList()})
}

// getSystemTopicListFromNs answers GET_SYSTEM_TOPIC_LIST_FROM_NS (304): as
// RouteInfoManager.getSystemTopicList, the cluster and broker names, with
// the broker's address.
func (s *Server) getSystemTopicListFromNs(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	return adminBody(req, admin.TopicList{TopicList: []string{s.cfg.BrokerName, s.cfg.ClusterName}, BrokerAddr: s.BrokerAddr()})
}

// setWritePerm adds or removes the write permission of every topic but
// the system ones, and returns how many changed (the name server's
// wipe/addWritePermOfBroker: here the route is the topic table).
func (s *Server) setWritePerm(add bool) (int, error) {
	all, _ := s.b.Topics().All()
	n := 0
	for _, name := range slices.Sorted(maps.Keys(all)) {
		tc := all[name]
		if systemTopics[name] || strings.HasPrefix(name, "rmq_sys_") {
			continue
		}
		perm := tc.Perm &^ config.PermWrite
		if add {
			perm = tc.Perm | config.PermWrite
		}
		if perm == tc.Perm {
			continue
		}
		tc.Perm = perm
		if err := s.b.Topics().Update(tc); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// wipeWritePerm answers WIPE_WRITE_PERM_OF_BROKER (205) and
// ADD_WRITE_PERM_OF_BROKER (327): header brokerName; ext wipeTopicCount
// or addTopicCount. Another broker name changes nothing (count 0).
func (s *Server) writePermHandler(add bool) handlerFunc {
	return func(_ context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
		f := req.Fields()
		name := f.String("brokerName")
		if err := f.Err(); err != nil {
			return badRequest(req, err)
		}
		n := 0
		if name == s.cfg.BrokerName {
			var err error
			if n, err = s.setWritePerm(add); err != nil {
				return req.NewResponse(remoting.CodeSystemError, err.Error()), nil
			}
			s.log.Info("broker write permission changed", "add", add, "topics", n, "remote", peerString(c))
		}
		resp := req.NewResponse(remoting.CodeSuccess, "")
		if add {
			resp.SetExtInt("addTopicCount", int64(n))
		} else {
			resp.SetExtInt("wipeTopicCount", int64(n))
		}
		return resp, nil
	}
}

// queryDataVersion answers QUERY_DATA_VERSION (322): body a DataVersion;
// ext changed tells whether it differs from the topic table's, and the
// body is the table's version.
func (s *Server) queryDataVersion(_ context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	var got admin.DataVersion
	if len(req.Body) > 0 {
		dv, err := parseDataVersionBody(req.Body)
		if err != nil {
			return s.refuse(req, c, err)
		}
		got = admin.DataVersion{Timestamp: dv.Timestamp, Counter: dv.Counter}
	}
	_, v := s.b.Topics().All()
	have := admin.DataVersion{Timestamp: v.Timestamp, Counter: v.Counter}
	resp, err := adminBody(req, have)
	if err != nil {
		return nil, err
	}
	resp.SetExtBool("changed", got != have)
	return resp, nil
}
