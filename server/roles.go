package server

import (
	"context"

	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server/namesrv"
)

// This file wires the roles of Config.Role: the name-server registry, the
// broker's registration with its name servers, and which request codes
// the server answers.

// Name-server request codes of the broker registry (Java RequestCode).
const (
	codeRegisterBroker   int32 = 103
	codeUnregisterBroker int32 = 104
)

// nameServerCodes are the request codes the name-server role answers;
// every other registered code belongs to the broker role.
var nameServerCodes = map[int32]bool{
	remoting.CodeGetRouteInfoByTopic:        true,
	remoting.CodeGetBrokerClusterInfo:       true,
	remoting.CodeGetAllTopicListFromNamesrv: true,
	remoting.CodeDeleteTopicInNamesrv:       true,
	codeRegisterBroker:                      true,
	codeUnregisterBroker:                    true,
}

func (s *Server) initRoles() {
	s.brokerID.Store(s.cfg.BrokerID)
	if s.cfg.Role.hasNameServer() {
		s.routes = namesrv.NewRouteTable(s.cfg.Now, s.cfg.BrokerExpiry)
	}
	if s.cfg.Role.hasBroker() && len(s.cfg.NamesrvAddr) > 0 {
		s.reg = newRegistrar(s, s.cfg.NamesrvAddr)
	}
}

// plays reports whether the server answers request code.
func (s *Server) plays(code int32) bool {
	if nameServerCodes[code] {
		return s.cfg.Role.hasNameServer()
	}
	return s.cfg.Role.hasBroker()
}

// localBroker reports whether the name-server role shows the in-process
// broker without a registration: both roles and no name server to
// register with, the single-node default.
func (s *Server) localBroker() bool {
	return s.cfg.Role == RoleBoth && len(s.cfg.NamesrvAddr) == 0
}

func (s *Server) startRegistrar() {
	if s.reg != nil {
		go s.reg.run()
	}
}

func (s *Server) stopRegistrar(ctx context.Context, unregister bool) {
	if s.reg != nil {
		s.reg.close(ctx, unregister)
	}
}

// brokerConnClosed logs the brokers that registered on c; they stay
// routed until they stop registering for BrokerExpiry
// (namesrv.RouteTable.ConnClosed says why).
func (s *Server) brokerConnClosed(c *remoting.Conn) {
	if s.routes == nil {
		return
	}
	for _, b := range s.routes.ConnClosed(c) {
		s.log.Info("broker connection closed; routed until it stops registering for brokerExpiry", "cluster", b.Cluster,
			"brokerName", b.Name, "brokerAddr", b.Addr, "expiry", s.cfg.BrokerExpiry)
	}
}

// expireBrokers forgets brokers silent for longer than BrokerExpiry.
func (s *Server) expireBrokers() {
	if s.routes == nil {
		return
	}
	for _, b := range s.routes.Expire() {
		s.log.Warn("broker expired: no registration within brokerExpiry", "cluster", b.Cluster, "brokerName", b.Name,
			"brokerAddr", b.Addr, "expiry", s.cfg.BrokerExpiry)
	}
}

// topicUsed is called after a successful send: a topic the name servers
// do not know yet (created by this send) is registered before the answer,
// as RocketMQ's broker does, so that a consumer started right after the
// producer finds its route.
func (s *Server) topicUsed(topic string) {
	if s.reg != nil {
		s.reg.topicUsed(topic)
	}
}
