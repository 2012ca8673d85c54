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

// localBroker shows the in-process broker to the name server's handlers
// in the single-node default (Server.isLocalBroker).
type localBroker struct{ s *Server }

var _ namesrv.Local = localBroker{}

func (l localBroker) Route(topic string) (namesrv.TopicRouteData, bool) { return l.s.localRoute(topic) }

func (l localBroker) BrokerData() namesrv.BrokerData { return l.s.brokerData() }

// TopicNames returns the broker's topics, sorted.
func (l localBroker) TopicNames() []string {
	all, _ := l.s.b.Topics().All()
	return slices.Sorted(maps.Keys(all))
}

func (l localBroker) DataVersion() config.DataVersion {
	_, v := l.s.b.Topics().All()
	return v
}

// SetWritePerm adds or removes the write permission of every topic of
// the in-process broker but the system ones, and returns how many
// changed: in the single-node default the route is its topic table.
func (l localBroker) SetWritePerm(add bool) (int, error) {
	all, _ := l.s.b.Topics().All()
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
		if err := l.s.b.Topics().Update(tc); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func (l localBroker) DeleteTopic(ctx context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	return l.s.deleteTopicInBroker(ctx, c, req)
}

// namesrvHost decodes the name server's bodies with the server's lenient
// decoder (lenient.go), which the broker front shares.
type namesrvHost struct{ s *Server }

var _ namesrv.Host = namesrvHost{}

func (h namesrvHost) ParseRegisterBody(body []byte, compressed bool) (map[string]config.TopicConfig, config.DataVersion, error) {
	parse := parseRegisterBody
	if compressed {
		parse = parseCompressedRegisterBody
	}
	rb, err := parse(body)
	return rb.topics, rb.dataVersion, err
}

func (h namesrvHost) ParseDataVersion(body []byte) (config.DataVersion, error) {
	return parseDataVersionBody(body)
}

func (h namesrvHost) Refuse(req *remoting.RemotingCommand, c *remoting.Conn, err error) (*remoting.RemotingCommand, error) {
	return h.s.refuse(req, c, err)
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
