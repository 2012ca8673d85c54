package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/proxy"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

// defaultGRPCListen is RocketMQ 5.x proxy's gRPC port, on loopback.
const defaultGRPCListen = "127.0.0.1:8081"

// grpcAddr resolves where the 5.x endpoint listens: --grpc-listen when
// given ("" turns it off), else the YAML key grpcServerPort on loopback,
// else the default. explicit reports whether the user asked for it (a
// failure to listen is then an error, not a warning).
func grpcAddr(flagSet bool, flag string, yamlPort *int) (addr string, explicit bool) {
	switch {
	case flagSet:
		return flag, flag != ""
	case yamlPort != nil:
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(*yamlPort)), true
	}
	return defaultGRPCListen, false
}

// grpcTLS is the remoting TLS certificate for the gRPC port, offering
// HTTP/2 by ALPN (gRPC clients require it).
func grpcTLS(sc server.Security) (*tls.Config, error) {
	if sc.TLSMode == remoting.TLSDisabled {
		return nil, nil
	}
	cfg := sc.TLSConfig
	if cfg == nil {
		var err error
		if cfg, err = remoting.LoadServerTLS(sc.TLSCertPath, sc.TLSKeyPath); err != nil {
			return nil, err
		}
	}
	cfg = cfg.Clone()
	cfg.NextProtos = append([]string{"h2"}, cfg.NextProtos...)
	return cfg, nil
}

// withGRPC serves RocketMQ 5.x's MessagingService on addr beside the
// remoting server, over the same broker, ACL accounts and TLS settings.
func withGRPC(addr string, explicit bool) serveExtra {
	return func(_ context.Context, n *server.Node, nc server.NodeConfig, log *slog.Logger) (func(), error) {
		if n.Broker == nil {
			if explicit {
				return nil, errors.New("--grpc-listen needs the broker role (this node is a name server only)")
			}
			return func() {}, nil
		}
		return startGRPC(grpcFront{addr: addr, explicit: explicit, broker: n.Broker, srv: n.Server,
			security: nc.Server.Security}, log)
	}
}

// grpcFront is what the gRPC endpoint serves: a broker (a replica's, in
// a replicated group) with its remoting server's ACL, TLS and limits.
type grpcFront struct {
	addr     string
	explicit bool // a failure to listen is an error, not a warning
	broker   *broker.Broker
	srv      *server.Server
	security server.Security
	// leader returns the group's leader's gRPC endpoint (replicated
	// groups; nil otherwise).
	leader func() string
}

// startGRPC serves the 5.x endpoint until the returned stop is called.
func startGRPC(f grpcFront, log *slog.Logger) (func(), error) {
	tc, err := grpcTLS(f.security)
	if err != nil {
		return nil, err
	}
	cfg := f.srv.Config()
	p, err := proxy.New(proxy.Config{Broker: f.broker, BrokerName: cfg.BrokerName, ClusterName: cfg.ClusterName,
		Logger: log, ACL: f.srv.ACLValidator(), TLSMode: f.security.TLSMode, TLS: tc,
		MaxInFlight: f.security.Limits.MaxInFlight, FallbackChecker: f.srv.TransactionChecker(), LeaderEndpoint: f.leader})
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		if f.explicit {
			return nil, fmt.Errorf("--grpc-listen %s: %w", f.addr, err)
		}
		log.Warn("the RocketMQ 5.x gRPC endpoint is off: its default address is taken (set --grpc-listen)", "addr", f.addr, "err", err)
		return func() {}, nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := p.Serve(ln); err != nil {
			log.Error("gRPC server", "err", err)
		}
	}()
	log.Info("RocketMQ 5.x gRPC endpoint", "addr", ln.Addr().String(), "tlsServerMode", f.security.TLSMode.String(),
		"aclEnable", f.security.ACLEnable)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		p.Stop(ctx)
		<-done
	}, nil
}
