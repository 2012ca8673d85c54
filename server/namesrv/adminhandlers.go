package namesrv

import (
	"context"
	"maps"
	"slices"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/remoting"
)

// The name server's admin codes (DefaultRequestProcessor's): they answer
// from the route table of registered brokers and, in the single-node
// default, from the in-process broker too (Local).

// getTopicsByCluster answers GET_TOPICS_BY_CLUSTER (224): header
// cluster; the topics of the cluster's brokers.
func (h *Handlers) getTopicsByCluster(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	cluster := f.String("cluster")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	topics := h.routes.TopicsOfCluster(cluster)
	if h.local != nil && cluster == h.local.BrokerData().Cluster {
		topics = append(topics, h.local.TopicNames()...)
	}
	slices.Sort(topics)
	topics = slices.Compact(topics)
	if topics == nil {
		topics = []string{}
	}
	return adminBody(req, admin.TopicList{TopicList: topics})
}

// getSystemTopicListFromNs answers GET_SYSTEM_TOPIC_LIST_FROM_NS (304): as
// RouteInfoManager.getSystemTopicList, the cluster and broker names (each
// is a topic of the brokers), with a broker address.
func (h *Handlers) getSystemTopicListFromNs(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	ci := h.routes.ClusterInfo()
	set := map[string]bool{}
	addr := ""
	for c, names := range ci.ClusterAddrTable {
		set[c] = true
		for _, n := range names {
			set[n] = true
			if a := ci.BrokerAddrTable[n].BrokerAddrs["0"]; a != "" && addr == "" {
				addr = a
			}
		}
	}
	if h.local != nil {
		bd := h.local.BrokerData()
		set[bd.Cluster], set[bd.BrokerName] = true, true
		addr = h.localAddr()
	}
	return adminBody(req, admin.TopicList{TopicList: slices.Sorted(maps.Keys(set)), BrokerAddr: addr})
}

// writePermHandler answers WIPE_WRITE_PERM_OF_BROKER (205) and
// ADD_WRITE_PERM_OF_BROKER (327): header brokerName; ext wipeTopicCount
// or addTopicCount. Producers stop (or resume) sending to the broker
// group, whose routes lose (or regain) the write permission.
func (h *Handlers) writePermHandler(add bool) HandlerFunc {
	return func(_ context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
		f := req.Fields()
		name := f.String("brokerName")
		if err := f.Err(); err != nil {
			return badRequest(req, err)
		}
		n := h.routes.SetWritePerm(name, add)
		if h.local != nil && name == h.local.BrokerData().BrokerName {
			local, err := h.local.SetWritePerm(add)
			if err != nil {
				return req.NewResponse(remoting.CodeSystemError, err.Error()), nil
			}
			n += local
		}
		h.log.Info("broker write permission changed", "brokerName", name, "add", add, "topics", n, "remote", c.RemoteAddrString())
		resp := req.NewResponse(remoting.CodeSuccess, "")
		if add {
			resp.SetExtInt("addTopicCount", int64(n))
		} else {
			resp.SetExtInt("wipeTopicCount", int64(n))
		}
		return resp, nil
	}
}

// queryDataVersion answers QUERY_DATA_VERSION (322): header brokerAddr,
// body the broker's DataVersion; ext changed tells whether it differs from
// the version the broker last registered (always true for an unknown
// broker), and the body is that registered version.
func (h *Handlers) queryDataVersion(_ context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	addr := f.OptString("brokerAddr", "")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	var got admin.DataVersion
	if len(req.Body) > 0 {
		dv, err := h.host.ParseDataVersion(req.Body)
		if err != nil {
			return h.host.Refuse(req, c, err)
		}
		got = admin.DataVersion{Timestamp: dv.Timestamp, Counter: dv.Counter}
	}
	have, ok := h.routes.DataVersion(addr)
	if !ok && h.local != nil && (addr == "" || addr == h.localAddr()) {
		have, ok = h.local.DataVersion(), true
	}
	resp := req.NewResponse(remoting.CodeSuccess, "")
	if ok {
		body, err := admin.Marshal(admin.DataVersion{Timestamp: have.Timestamp, Counter: have.Counter})
		if err != nil {
			return nil, err
		}
		resp.Body = body
	}
	resp.SetExtBool("changed", !ok || got != admin.DataVersion{Timestamp: have.Timestamp, Counter: have.Counter})
	return resp, nil
}

// localAddr is the in-process broker's address, the one member of its
// BrokerData.
func (h *Handlers) localAddr() string {
	for _, a := range h.local.BrokerData().BrokerAddrs {
		return a
	}
	return ""
}
