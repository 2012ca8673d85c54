package server

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
)

// The name server's admin codes (DefaultRequestProcessor's): they answer
// from the route table of registered brokers and, in the single-node
// default (localBroker), from the in-process broker too.

func init() {
	for _, c := range []int32{codePutKVConfig, codeGetKVConfig, codeDeleteKVConfig, codeGetKVListByNamespace,
		codeWipeWritePermOfBroker, codeAddWritePermOfBroker, codeGetTopicsByCluster, codeGetSystemTopicListFromNs,
		codeUpdateNamesrvConfig, codeGetNamesrvConfig, codeQueryDataVersion} {
		nameServerCodes[c] = true
	}
}

// adminBody answers SUCCESS with v in fastjson form, as the Java name
// server writes its bodies.
func adminBody(req *remoting.RemotingCommand, v any) (*remoting.RemotingCommand, error) {
	body, err := admin.Marshal(v)
	if err != nil {
		return nil, err
	}
	resp := req.NewResponse(remoting.CodeSuccess, "")
	resp.Body = body
	return resp, nil
}

// topicNames returns the in-process broker's topics, sorted.
func (s *Server) topicNames() []string {
	all, _ := s.b.Topics().All()
	return slices.Sorted(maps.Keys(all))
}

// getTopicsByCluster answers GET_TOPICS_BY_CLUSTER (224): header
// cluster; the topics of the cluster's brokers.
func (s *Server) getTopicsByCluster(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	cluster := f.String("cluster")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	topics := s.routes.TopicsOfCluster(cluster)
	if s.localBroker() && cluster == s.cfg.ClusterName {
		topics = append(topics, s.topicNames()...)
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
func (s *Server) getSystemTopicListFromNs(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	ci := s.routes.ClusterInfo()
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
	if s.localBroker() {
		set[s.cfg.ClusterName], set[s.cfg.BrokerName] = true, true
		addr = s.BrokerAddr()
	}
	return adminBody(req, admin.TopicList{TopicList: slices.Sorted(maps.Keys(set)), BrokerAddr: addr})
}

// setLocalWritePerm adds or removes the write permission of every topic of
// the in-process broker but the system ones, and returns how many
// changed: in the single-node default the route is its topic table.
func (s *Server) setLocalWritePerm(add bool) (int, error) {
	all, _ := s.b.Topics().All()
	n := 0
	for _, name := range slices.Sorted(maps.Keys(all)) {
		tc := all[name]
		if systemTopics[name] || strings.HasPrefix(name, "rmq_sys_") {
			continue
		}
		perm := tc.Perm &^ record.PermWrite
		if add {
			perm = tc.Perm | record.PermWrite
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

// writePermHandler answers WIPE_WRITE_PERM_OF_BROKER (205) and
// ADD_WRITE_PERM_OF_BROKER (327): header brokerName; ext wipeTopicCount
// or addTopicCount. Producers stop (or resume) sending to the broker
// group, whose routes lose (or regain) the write permission.
func (s *Server) writePermHandler(add bool) handlerFunc {
	return func(_ context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
		f := req.Fields()
		name := f.String("brokerName")
		if err := f.Err(); err != nil {
			return badRequest(req, err)
		}
		n := s.routes.SetWritePerm(name, add)
		if s.localBroker() && name == s.cfg.BrokerName {
			local, err := s.setLocalWritePerm(add)
			if err != nil {
				return req.NewResponse(remoting.CodeSystemError, err.Error()), nil
			}
			n += local
		}
		s.log.Info("broker write permission changed", "brokerName", name, "add", add, "topics", n, "remote", peerString(c))
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
func (s *Server) queryDataVersion(_ context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	f := req.Fields()
	addr := f.OptString("brokerAddr", "")
	if err := f.Err(); err != nil {
		return badRequest(req, err)
	}
	var got admin.DataVersion
	if len(req.Body) > 0 {
		dv, err := parseDataVersionBody(req.Body)
		if err != nil {
			return s.refuse(req, c, err)
		}
		got = admin.DataVersion{Timestamp: dv.Timestamp, Counter: dv.Counter}
	}
	have, ok := s.routes.DataVersion(addr)
	if !ok && s.localBroker() && (addr == "" || addr == s.BrokerAddr()) {
		_, have = s.b.Topics().All()
		ok = true
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
