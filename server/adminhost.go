package server

import (
	"github.com/rocketstore/rocketstore/server/adminapi"
)

// adminHost hands package adminapi what only the server knows: the
// clients' registrations, the advertised address and the lenient body
// decoding.
func (s *Server) adminHost() adminapi.Host {
	return adminapi.Host{
		BrokerAddr:             s.BrokerAddr,
		StoreDir:               func() string { return s.storeDir },
		Consumers:              s.consumerMembers,
		ConsumerGroupsOnline:   s.ConsumerGroupsOnline,
		ProducerConnections:    s.producers.connections,
		ParseSubscriptionGroup: parseSubscriptionGroup,
		Refuse:                 s.refuse,
	}
}

// initAdmin builds the admin API and the tables of admin state; New
// routes the API's codes, startAdmin starts its sampler.
func (s *Server) initAdmin() {
	s.clientTable = newClientTable()
	s.admin = adminapi.New(adminapi.Config{Broker: s.b, ClusterName: s.cfg.ClusterName, BrokerName: s.cfg.BrokerName,
		Clock: s.cfg.Clock, Logger: s.log}, s.adminHost())
}

func (s *Server) startAdmin() { s.admin.Start() }

// stopAdmin waits for the admin API's sampler.
func (s *Server) stopAdmin() { s.admin.Close() }
