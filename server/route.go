package server

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server/namesrv"
)

func (s *Server) brokerData() namesrv.BrokerData {
	return namesrv.BrokerData{Cluster: s.cfg.ClusterName, BrokerName: s.cfg.BrokerName,
		BrokerAddrs: map[string]string{strconv.FormatInt(s.BrokerID(), 10): s.BrokerAddr()}}
}

// localRoute returns the in-process broker's route of topic, or false when
// its topic table has no such topic. Retry and dead-letter topics always
// have a route (one queue, read and write), because the push consumer asks
// for its retry topic's route before its first heartbeat creates the
// topic, and gives up pulling retries for 30 s if it gets none.
func (s *Server) localRoute(topic string) (namesrv.TopicRouteData, bool) {
	tc, ok := s.b.Topics().Get(topic)
	if !ok {
		if !strings.HasPrefix(topic, record.RetryGroupTopicPrefix) && !strings.HasPrefix(topic, record.DLQGroupTopicPrefix) {
			return namesrv.TopicRouteData{}, false
		}
		tc = config.NewTopicConfig(topic)
		tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm = 1, 1, record.PermRead|record.PermWrite
	}
	return namesrv.TopicRouteData{
		QueueDatas: []namesrv.QueueData{{BrokerName: s.cfg.BrokerName, ReadQueueNums: tc.ReadQueueNums,
			WriteQueueNums: tc.WriteQueueNums, Perm: s.routePerm(tc.Perm), TopicSynFlag: tc.TopicSysFlag}},
		BrokerDatas:  []namesrv.BrokerData{s.brokerData()},
		FilterServer: map[string]any{},
	}, true
}

// route returns the route of topic: the queue data of every registered
// broker group holding it and, in the single-node default, the local
// broker's; false when no group holds it.
func (s *Server) route(topic string) (namesrv.TopicRouteData, bool) {
	rd := s.routes.Route(topic)
	if s.localBroker() {
		if local, ok := s.localRoute(topic); ok {
			rd = mergeRoute(rd, local)
		}
	}
	return rd, len(rd.QueueDatas) > 0 && len(rd.BrokerDatas) > 0
}

// mergeRoute adds the local broker's single-group route to rd: its queue
// data replaces a registered group's of the same name, and its address
// joins that group's members.
func mergeRoute(rd, local namesrv.TopicRouteData) namesrv.TopicRouteData {
	lq, lb := local.QueueDatas[0], local.BrokerDatas[0]
	rd.QueueDatas = slices.DeleteFunc(rd.QueueDatas, func(q namesrv.QueueData) bool { return q.BrokerName == lq.BrokerName })
	rd.QueueDatas = append(rd.QueueDatas, lq)
	slices.SortFunc(rd.QueueDatas, func(a, b namesrv.QueueData) int { return strings.Compare(a.BrokerName, b.BrokerName) })
	found := false
	for i := range rd.BrokerDatas {
		if rd.BrokerDatas[i].BrokerName == lb.BrokerName {
			maps.Copy(rd.BrokerDatas[i].BrokerAddrs, lb.BrokerAddrs)
			found = true
		}
	}
	if !found {
		rd.BrokerDatas = append(rd.BrokerDatas, lb)
		slices.SortFunc(rd.BrokerDatas, func(a, b namesrv.BrokerData) int { return strings.Compare(a.BrokerName, b.BrokerName) })
	}
	if rd.FilterServer == nil {
		rd.FilterServer = map[string]any{}
	}
	return rd
}

// getRouteInfo answers GET_ROUTEINFO_BY_TOPIC (105). Unknown topics get
// TOPIC_NOT_EXIST; the producer then asks for TBW102, which exists while
// autoCreateTopicEnable is on, and the broker creates the topic from it on
// the first send.
func (s *Server) getRouteInfo(_ context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	topic := f.String("topic")
	if err := f.Err(); err != nil {
		return s.refuse(req, c, err)
	}
	rd, ok := s.route(topic)
	if !ok {
		return req.NewResponse(remoting.CodeTopicNotExist, "No topic route info in name server for the topic: "+topic), nil
	}
	return jsonBody(req, rd)
}

// getClusterInfo answers GET_BROKER_CLUSTER_INFO (106): every registered
// broker group and cluster (and the local broker in the single-node
// default).
func (s *Server) getClusterInfo(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	ci := s.routes.ClusterInfo()
	if s.localBroker() {
		lb := s.brokerData()
		if bd, ok := ci.BrokerAddrTable[lb.BrokerName]; ok {
			maps.Copy(bd.BrokerAddrs, lb.BrokerAddrs)
		} else {
			ci.BrokerAddrTable[lb.BrokerName] = lb
		}
		if !slices.Contains(ci.ClusterAddrTable[lb.Cluster], lb.BrokerName) {
			ci.ClusterAddrTable[lb.Cluster] = append(ci.ClusterAddrTable[lb.Cluster], lb.BrokerName)
			slices.Sort(ci.ClusterAddrTable[lb.Cluster])
		}
	}
	return jsonBody(req, ci)
}

// getAllTopicList answers GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206): every
// registered topic (and the local broker's), sorted.
func (s *Server) getAllTopicList(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	names := s.routes.TopicNames()
	if s.localBroker() {
		all, _ := s.b.Topics().All()
		for n := range all {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return jsonBody(req, namesrv.TopicList{TopicList: slices.Compact(names)})
}

// deleteTopicInNamesrv answers DELETE_TOPIC_IN_NAMESRV (216): the topic
// leaves the registered routes. In the single-node default the routes are
// the local broker's topic table, so the topic is deleted there too if
// DELETE_TOPIC_IN_BROKER has not already.
func (s *Server) deleteTopicInNamesrv(ctx context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	if s.localBroker() {
		s.routes.DeleteTopic(req.ExtFields["topic"])
		return s.deleteTopicInBroker(ctx, c, req)
	}
	f := req.Fields()
	topic := f.String("topic")
	if err := f.Err(); err != nil {
		return s.refuse(req, c, err)
	}
	s.routes.DeleteTopic(topic)
	return req.NewResponse(remoting.CodeSuccess, ""), nil
}
