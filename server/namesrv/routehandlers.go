package namesrv

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/rocketstore/rocketstore/remoting"
)

// route returns the route of topic: the queue data of every registered
// broker group holding it and, in the single-node default, the local
// broker's; false when no group holds it.
func (h *Handlers) route(topic string) (TopicRouteData, bool) {
	rd := h.routes.Route(topic)
	if h.local != nil {
		if local, ok := h.local.Route(topic); ok {
			rd = mergeRoute(rd, local)
		}
	}
	return rd, len(rd.QueueDatas) > 0 && len(rd.BrokerDatas) > 0
}

// mergeRoute adds the local broker's single-group route to rd: its queue
// data replaces a registered group's of the same name, and its address
// joins that group's members.
func mergeRoute(rd, local TopicRouteData) TopicRouteData {
	lq, lb := local.QueueDatas[0], local.BrokerDatas[0]
	rd.QueueDatas = slices.DeleteFunc(rd.QueueDatas, func(q QueueData) bool { return q.BrokerName == lq.BrokerName })
	rd.QueueDatas = append(rd.QueueDatas, lq)
	slices.SortFunc(rd.QueueDatas, func(a, b QueueData) int { return strings.Compare(a.BrokerName, b.BrokerName) })
	found := false
	for i := range rd.BrokerDatas {
		if rd.BrokerDatas[i].BrokerName == lb.BrokerName {
			maps.Copy(rd.BrokerDatas[i].BrokerAddrs, lb.BrokerAddrs)
			found = true
		}
	}
	if !found {
		rd.BrokerDatas = append(rd.BrokerDatas, lb)
		slices.SortFunc(rd.BrokerDatas, func(a, b BrokerData) int { return strings.Compare(a.BrokerName, b.BrokerName) })
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
func (h *Handlers) getRouteInfo(_ context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	topic := f.String("topic")
	if err := f.Err(); err != nil {
		return h.host.Refuse(req, c, err)
	}
	rd, ok := h.route(topic)
	if !ok {
		return req.NewResponse(remoting.CodeTopicNotExist, "No topic route info in name server for the topic: "+topic), nil
	}
	return jsonBody(req, rd)
}

// getClusterInfo answers GET_BROKER_CLUSTER_INFO (106): every registered
// broker group and cluster (and the local broker in the single-node
// default).
func (h *Handlers) getClusterInfo(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	ci := h.routes.ClusterInfo()
	if h.local != nil {
		lb := h.local.BrokerData()
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
func (h *Handlers) getAllTopicList(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	names := h.routes.TopicNames()
	if h.local != nil {
		names = append(names, h.local.TopicNames()...)
	}
	slices.Sort(names)
	return jsonBody(req, TopicList{TopicList: slices.Compact(names)})
}

// deleteTopicInNamesrv answers DELETE_TOPIC_IN_NAMESRV (216): the topic
// leaves the registered routes. In the single-node default the routes are
// the local broker's topic table, so the topic is deleted there too if
// DELETE_TOPIC_IN_BROKER has not already.
func (h *Handlers) deleteTopicInNamesrv(ctx context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	if h.local != nil {
		h.routes.DeleteTopic(req.ExtFields["topic"])
		return h.local.DeleteTopic(ctx, c, req)
	}
	f := req.Fields()
	topic := f.String("topic")
	if err := f.Err(); err != nil {
		return h.host.Refuse(req, c, err)
	}
	h.routes.DeleteTopic(topic)
	return req.NewResponse(remoting.CodeSuccess, ""), nil
}
