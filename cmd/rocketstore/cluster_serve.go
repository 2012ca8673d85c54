package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/rocketstore/rocketstore/metrics/prom"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/rocketstore/rocketstore/cluster"
	"github.com/rocketstore/rocketstore/console"
	"github.com/rocketstore/rocketstore/server"
)

func ms(v int) time.Duration { return time.Duration(v) * time.Millisecond }

// clusterNode is a served replica: its listeners, the replica and the
// server in front of its broker.
type clusterNode struct {
	lns              []net.Listener
	node             *cluster.Node
	srv              *server.Server
	addr, brokerAddr string
	wg               sync.WaitGroup
	grpcAddr         string // the gRPC endpoint ("": none)
	stopGRPC         func() // stops it (nil: none)
}

// startClusterNode is server.StartNode for a replica of a broker group.
func startClusterNode(nc server.NodeConfig, rc *raftFileConfig, log *slog.Logger) (*clusterNode, error) {
	if nc.Listen == "" {
		nc.Listen = "127.0.0.1:9876"
	}
	ln, err := net.Listen("tcp", nc.Listen)
	if err != nil {
		return nil, err
	}
	return startClusterNodeOn(ln, nc, rc, log)
}

// startClusterNodeOn is startClusterNode on a name-server listener
// already open (nc.Listen unused), which it owns from then on.
func startClusterNodeOn(ln net.Listener, nc server.NodeConfig, rc *raftFileConfig, log *slog.Logger) (*clusterNode, error) {
	ccfg, advertise, err := rc.clusterConfig()
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	ccfg.Logger = log
	cn := &clusterNode{}
	closeAll := func() {
		for _, l := range cn.lns {
			_ = l.Close()
		}
	}
	cn.lns = append(cn.lns, ln)
	brokerLn := ln
	if nc.BrokerListen != "" {
		if brokerLn, err = net.Listen("tcp", nc.BrokerListen); err != nil {
			closeAll()
			return nil, err
		}
		cn.lns = append(cn.lns, brokerLn)
	}
	adv := nc.Server.BrokerAddr
	if adv == "" {
		adv = server.AdvertisedAddr(brokerLn.Addr())
	}
	ap, err := netip.ParseAddrPort(adv)
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("%w: broker address %q must be an IP literal and port: %v", server.ErrConfig, adv, err)
	}
	nc.Server.BrokerAddr = adv
	if nc.Server.BrokerName == "" {
		nc.Server.BrokerName = server.DefaultBrokerName
	}
	if ccfg.Transport, err = rc.transport(advertise, log); err != nil {
		closeAll()
		return nil, err
	}
	if err := os.MkdirAll(nc.Dir, 0o755); err != nil {
		closeAll()
		return nil, err
	}
	// Role changes before the server exists are picked up below.
	var mu sync.Mutex
	cn.node, err = cluster.Open(cluster.NodeConfig{Dir: nc.Dir, Broker: nc.Broker, BrokerName: nc.Server.BrokerName,
		StoreHost: ap, Cluster: ccfg, OnRoleChange: func(id int64) {
			mu.Lock()
			defer mu.Unlock()
			if cn.srv != nil {
				setBrokerID(cn.srv, id)
			}
			log.Info("broker id", "brokerId", id)
		}})
	if err != nil {
		closeAll()
		return nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	nc.Server.BrokerID = cn.node.BrokerID()
	if cn.srv, err = server.New(cn.node.Broker(), nc.Server); err != nil {
		closeAll()
		return nil, errors.Join(err, cn.node.Close())
	}
	cn.addr, cn.brokerAddr = server.AdvertisedAddr(ln.Addr()), adv
	for _, l := range cn.lns {
		cn.wg.Add(1)
		go func() {
			defer cn.wg.Done()
			_ = cn.srv.Serve(l)
		}()
	}
	// Serve first: the registration below waits for every name server
	// of namesrvAddr, this process's own among them, which answers only
	// once it serves (before, a restart waited RegisterTimeout, 6 s).
	if id := cn.node.BrokerID(); id != nc.Server.BrokerID {
		setBrokerID(cn.srv, id) // the role changed while the server was made
	}
	return cn, nil
}

// setBrokerID tells the server its broker id: it re-registers with every
// name server of namesrvAddr at once, so that routes name the new leader
// as brokerId 0.
func setBrokerID(s *server.Server, id int64) { s.SetBrokerID(id) }

// shutdown stops the gRPC endpoint (its requests use the replica's
// broker), then the server and the replica.
func (cn *clusterNode) shutdown(ctx context.Context) error {
	if cn.stopGRPC != nil {
		cn.stopGRPC()
		cn.stopGRPC = nil
	}
	err := cn.srv.Shutdown(ctx)
	cn.wg.Wait()
	return errors.Join(err, cn.node.Close())
}

// serveGRPC serves the replica's gRPC endpoint at g.addr until shutdown,
// its routes naming the leader's endpoint (from g.endpoints by the
// leader's node id; its own while no leader is known).
func (cn *clusterNode) serveGRPC(g clusterGRPC, sec server.Security, log *slog.Logger) error {
	stop, err := startGRPC(grpcFront{addr: g.addr, explicit: true, broker: cn.node.Broker(), srv: cn.srv, security: sec,
		leader: func() string { return g.endpoints[cn.node.LeaderID()] }}, log)
	if err != nil {
		return err
	}
	cn.grpcAddr, cn.stopGRPC = g.addr, stop
	return nil
}

// clusterGRPC is a replica's gRPC endpoint: where it listens ("": off)
// and every replica's endpoint by node id (raft.grpcEndpoints).
type clusterGRPC struct {
	addr      string
	endpoints map[string]string
}

// runClusterServe is runServe for a replica: it also stops, with an
// error, when the replica stops applying the group's log. Every replica
// serves gRPC (g), its routes naming the leader's endpoint, and with
// consoleFlag the console with its replication page.
func runClusterServe(parent context.Context, nc server.NodeConfig, rc *raftFileConfig, g clusterGRPC, metrics *prom.Metrics,
	metricsAddr, consoleFlag string,
	shutdownTimeout time.Duration, log *slog.Logger) error {
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cn, err := startClusterNode(nc, rc, log)
	if err != nil {
		return &exitCodeError{code: exitError, err: err}
	}
	log.Info("rocketstore replica serving", "nameServer", cn.addr, "broker", cn.brokerAddr, "dir", nc.Dir,
		"brokerName", cn.srv.Config().BrokerName, "nodeId", rc.NodeID, "raft", rc.Bind,
		"recovery", cn.node.Broker().Store().Recovery())
	if g.addr != "" {
		if err := cn.serveGRPC(g, nc.Server.Security, log); err != nil {
			return errors.Join(&exitCodeError{code: exitError, err: err}, cn.shutdown(context.Background()))
		}
	}
	if metrics != nil {
		metrics.AttachCluster(cn.node.Status)
		ln, err := net.Listen("tcp", metricsAddr)
		if err != nil {
			return errors.Join(&exitCodeError{code: exitError, err: err}, cn.shutdown(context.Background()))
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
		hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics server", "err", err)
			}
		}()
		defer hs.Close()
		log.Info("metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	}
	if consoleFlag != "" {
		stopConsole, err := startClusterConsole(ctx, consoleFlag, nc, rc, cn, log)
		if err != nil {
			return errors.Join(&exitCodeError{code: exitError, err: err}, cn.shutdown(context.Background()))
		}
		defer stopConsole()
	}
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	var failed error
wait:
	for {
		select {
		case <-ctx.Done():
			break wait
		case <-t.C:
			if failed = cn.node.Err(); failed != nil {
				break wait
			}
		}
	}
	stop()
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err = cn.shutdown(sctx)
	if failed != nil {
		log.Error("the replica stopped applying the group's log", "err", failed)
		return &exitCodeError{code: exitError, err: errors.Join(failed, err)}
	}
	if err != nil {
		log.Error("shutdown", "err", err)
		return &exitCodeError{code: exitError, err: err}
	}
	log.Info("stopped")
	return nil
}

// startClusterConsole serves the console of a replica: the console of
// serve, plus its replication page, which asks the group's members over
// their Raft ports (with raft.tls, with this node's certificate).
func startClusterConsole(ctx context.Context, flag string, nc server.NodeConfig, rc *raftFileConfig, cn *clusterNode,
	log *slog.Logger) (func(), error) {
	_, advertise, err := rc.clusterConfig()
	if err != nil {
		return nil, err
	}
	var d cluster.Dialer
	if rc.TLS != nil {
		if d.TLS, err = cluster.LoadPeerTLS(rc.TLS.CertFile, rc.TLS.KeyFile, rc.TLS.CAFile); err != nil {
			return nil, err
		}
	}
	namesrv := nc.Server.NamesrvAddr
	if len(namesrv) == 0 {
		namesrv = []string{cn.addr}
	}
	return startConsole(ctx, flag, console.Config{NameServers: namesrv, Logger: log, ACL: cn.srv.ACLValidator(),
		Replication: func(ctx context.Context) (cluster.GroupInfo, []cluster.MemberStatus, error) {
			return d.Members(ctx, advertise)
		}}, log)
}

// namesrvLine is the namesrvAddr line of a generated config file.
func namesrvLine(list string) string { return "namesrvAddr: " + list + "\n" }
