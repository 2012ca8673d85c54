package server

import (
	"context"

	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server/namesrv"
)

// This file wires the roles of Config.Role: the name-server registry, the
// broker's registration with its name servers, and which request codes
// the server answers.

// nameServerConfigCodes are the name server's config codes
// (UPDATE_NAMESRV_CONFIG 318, GET_NAMESRV_CONFIG 319), answered by package
// adminapi as the broker's config codes are; the name-server role routes
// them and every code of namesrv.Handlers, the broker role the others.
var nameServerConfigCodes = map[int32]bool{318: true, 319: true}

func (s *Server) initRoles() {
	s.brokerID.Store(s.cfg.BrokerID)
	if s.cfg.Role.hasNameServer() {
		s.routes = namesrv.NewRouteTable(s.cfg.Clock, s.cfg.BrokerExpiry)
		nc := namesrv.Config{Routes: s.routes, Logger: s.log}
		if s.isLocalBroker() {
			nc.Local = s.localBroker()
		}
		s.ns = namesrv.NewHandlers(nc, s.namesrvHost())
	}
	if s.cfg.Role.hasBroker() && len(s.cfg.NamesrvAddr) > 0 {
		s.reg = newRegistrar(s, s.cfg.NamesrvAddr)
	}
}

// plays reports whether the server answers request code of the broker
// role or of package adminapi.
func (s *Server) plays(code int32) bool {
	if nameServerConfigCodes[code] {
		return s.cfg.Role.hasNameServer()
	}
	return s.cfg.Role.hasBroker()
}

// isLocalBroker reports whether the name-server role shows the in-process
// broker without a registration: both roles and no name server to
// register with, the single-node default.
func (s *Server) isLocalBroker() bool {
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
