package server

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/server/namesrv"
)

// localBroker shows the in-process broker to the name server's handlers
// in the single-node default (Server.isLocalBroker).
func (s *Server) localBroker() *namesrv.Local {
	return &namesrv.Local{
		Route:      s.localRoute,
		BrokerData: s.brokerData,
		TopicNames: s.topicNames,
		DataVersion: func() config.DataVersion {
			_, v := s.b.Topics().All()
			return v
		},
		SetWritePerm: s.setLocalWritePerm,
		DeleteTopic:  s.deleteTopicInBroker,
	}
}

// topicNames returns the in-process broker's topics, sorted.
func (s *Server) topicNames() []string {
	all, _ := s.b.Topics().All()
	return slices.Sorted(maps.Keys(all))
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

// namesrvHost decodes the name server's bodies with the server's lenient
// decoder (lenient.go), which the broker front shares.
func (s *Server) namesrvHost() namesrv.Host {
	return namesrv.Host{
		ParseRegisterBody: func(body []byte, compressed bool) (map[string]config.TopicConfig, config.DataVersion, error) {
			parse := parseRegisterBody
			if compressed {
				parse = parseCompressedRegisterBody
			}
			rb, err := parse(body)
			return rb.topics, rb.dataVersion, err
		},
		ParseDataVersion: parseDataVersionBody,
		Refuse:           s.refuse,
	}
}

// brokerData is the in-process broker's group, with its one member.
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
