package server

import (
	"context"
	"slices"
	"strings"

	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/remoting"
)

// The name server's JSON bodies, with RocketMQ's field names as the
// clients parse them.
type (
	topicRouteData struct {
		OrderTopicConf string         `json:"orderTopicConf"`
		QueueDatas     []queueData    `json:"queueDatas"`
		BrokerDatas    []brokerData   `json:"brokerDatas"`
		FilterServer   map[string]any `json:"filterServerTable"`
	}
	queueData struct {
		BrokerName     string `json:"brokerName"`
		ReadQueueNums  int    `json:"readQueueNums"`
		WriteQueueNums int    `json:"writeQueueNums"`
		Perm           int    `json:"perm"`
		TopicSynFlag   int    `json:"topicSynFlag"`
	}
	brokerData struct {
		Cluster     string            `json:"cluster"`
		BrokerName  string            `json:"brokerName"`
		BrokerAddrs map[string]string `json:"brokerAddrs"` // broker id → "ip:port"; "0" is the master
	}
	clusterInfo struct {
		BrokerAddrTable  map[string]brokerData `json:"brokerAddrTable"`
		ClusterAddrTable map[string][]string   `json:"clusterAddrTable"`
	}
	topicList struct {
		TopicList  []string `json:"topicList"`
		BrokerAddr string   `json:"brokerAddr,omitempty"`
	}
)

func (s *Server) brokerData() brokerData {
	return brokerData{Cluster: s.cfg.ClusterName, BrokerName: s.cfg.BrokerName,
		BrokerAddrs: map[string]string{"0": s.BrokerAddr()}}
}

// route returns the route of topic, or false when the name server knows
// no such topic. Retry and dead-letter topics always have a route (one
// queue, read and write), because the push consumer asks for its retry
// topic's route before its first heartbeat creates the topic, and gives
// up pulling retries for 30 s if it gets none.
func (s *Server) route(topic string) (topicRouteData, bool) {
	tc, ok := s.b.Topics().Get(topic)
	if !ok {
		if !strings.HasPrefix(topic, config.RetryGroupTopicPrefix) && !strings.HasPrefix(topic, config.DLQGroupTopicPrefix) {
			return topicRouteData{}, false
		}
		tc = config.NewTopicConfig(topic)
		tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = 1, 1, config.PermRead|config.PermWrite
	}
	return topicRouteData{
		QueueDatas: []queueData{{BrokerName: s.cfg.BrokerName, ReadQueueNums: tc.ReadQueueNums,
			WriteQueueNums: tc.WriteQueueNums, Perm: tc.Perm, TopicSynFlag: tc.TopicSysFlag}},
		BrokerDatas:  []brokerData{s.brokerData()},
		FilterServer: map[string]any{},
	}, true
}

// getRouteInfo answers GET_ROUTEINFO_BY_TOPIC (105). Unknown topics get
// TOPIC_NOT_EXIST; the producer then asks for TBW102, which exists while
// autoCreateTopicEnable is on, and the broker creates the topic from it on
// the first send.
func (s *Server) getRouteInfo(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	topic := f.String("topic")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	rd, ok := s.route(topic)
	if !ok {
		return req.NewResponse(remoting.CodeTopicNotExist, "No topic route info in name server for the topic: "+topic), nil
	}
	return jsonBody(req, rd)
}

// getClusterInfo answers GET_BROKER_CLUSTER_INFO (106).
func (s *Server) getClusterInfo(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	return jsonBody(req, clusterInfo{
		BrokerAddrTable:  map[string]brokerData{s.cfg.BrokerName: s.brokerData()},
		ClusterAddrTable: map[string][]string{s.cfg.ClusterName: {s.cfg.BrokerName}},
	})
}

// getAllTopicList answers GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206): every
// topic of the broker's table, sorted.
func (s *Server) getAllTopicList(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	all, _ := s.b.Topics().All()
	names := make([]string, 0, len(all))
	for n := range all {
		names = append(names, n)
	}
	slices.Sort(names)
	return jsonBody(req, topicList{TopicList: names})
}

// deleteTopicInNamesrv answers DELETE_TOPIC_IN_NAMESRV (216). The name
// server's routes are the broker's topic table, so this deletes the topic
// there if DELETE_TOPIC_IN_BROKER has not already.
func (s *Server) deleteTopicInNamesrv(ctx context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	return s.deleteTopicInBroker(ctx, c, req)
}
