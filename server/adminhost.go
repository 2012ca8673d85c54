package server

import (
	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server/adminapi"
)

// adminHost hands package adminapi what only the server knows: the
// clients' registrations, the advertised address and the lenient body
// decoding. A type of its own, so that Server's methods do not grow by
// the interface's.
type adminHost struct{ s *Server }

var _ adminapi.Host = adminHost{}

func (h adminHost) BrokerAddr() string { return h.s.BrokerAddr() }

func (h adminHost) StoreDir() string { return h.s.storeDir }

func (h adminHost) Consumers(group string) []adminapi.Consumer { return h.s.consumerMembers(group) }

func (h adminHost) ConsumerGroupsOnline() []string { return h.s.ConsumerGroupsOnline() }

func (h adminHost) ProducerConnections(group string) ([]admin.Connection, bool) {
	return h.s.producers.connections(group)
}

func (h adminHost) ParseSubscriptionGroup(body []byte) (config.SubscriptionGroupConfig, error) {
	return parseSubscriptionGroup(body)
}

func (h adminHost) Refuse(req *remoting.RemotingCommand, c *remoting.Conn, err error) (*remoting.RemotingCommand, error) {
	return h.s.refuse(req, c, err)
}

// initAdmin builds the admin API and the tables of admin state; New
// routes the API's codes, startAdmin starts its sampler.
func (s *Server) initAdmin() {
	s.clientTable = newClientTable()
	s.admin = adminapi.New(adminapi.Config{Broker: s.b, ClusterName: s.cfg.ClusterName, BrokerName: s.cfg.BrokerName,
		Now: s.cfg.Now, Logger: s.log}, adminHost{s})
}

func (s *Server) startAdmin() { s.admin.Start() }

// stopAdmin waits for the admin API's sampler.
func (s *Server) stopAdmin() { s.admin.Close() }
