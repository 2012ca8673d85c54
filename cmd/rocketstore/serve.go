package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rocketstore/rocketstore/metrics/prom"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/rocketstore/rocketstore/server"
)

// newServeCmd is `rocketstore serve`: a RocketMQ-compatible name server
// and broker in one process.
func newServeCmd() *cobra.Command {
	var (
		dir, listen, configFile, metricsAddr, logLevel, logFormat, role string
		consoleFlag, grpcListen, pprofAddr                              string
		shutdownTimeout                                                 time.Duration
	)
	cmd := &cobra.Command{
		Use:   "serve [--dir DIR] [--listen ADDR] [--config FILE] [--metrics ADDR]",
		Short: "Run a RocketMQ-compatible name server and broker on a store directory",
		Long: `serve runs a RocketMQ 4.x name server and broker in one process, so that the
official RocketMQ clients produce to and consume from a rocketstore store. Point the
clients' name server at --listen (an IP literal such as 127.0.0.1:9876); the routes
it answers send them to the broker on the same address, or on listenPort when the
config file sets one.

The config file is YAML with RocketMQ's broker.conf names (brokerName,
brokerClusterName, brokerIP1, listenPort, storePathRootDir, flushDiskType,
mapedFileSizeCommitLog, maxMessageSize, messageDelayLevel, autoCreateTopicEnable,
...); unknown keys are errors. --dir and --listen override the file. Security keys
(aclEnable, aclFile, tlsServerMode, tlsServerCertPath, tlsServerKeyPath and the
limits) are described in docs/security.md.

--role broker runs the broker only and --role namesrv the name server only (no
store); a broker registers with every name server of the YAML key namesrvAddr
("host:port;host:port"), as RocketMQ's brokers do.

Everything binds to loopback unless told otherwise: --listen defaults to
127.0.0.1:9876, and --metrics given only a port (":9100" or "9100") binds
127.0.0.1; name 0.0.0.0 or an interface address to expose it (the metrics
endpoint has no authentication).

--pprof ADDR serves Go's profiler (net/http/pprof) at http://ADDR/debug/pprof/,
off by default and on loopback only (a bare port binds 127.0.0.1); e.g.
go tool pprof -top http://127.0.0.1:6060/debug/pprof/profile?seconds=10

The Go garbage collector runs with GOGC=400 unless the GOGC environment variable
is set (a broker's live heap is small; see BENCHMARKS.md), and a soft memory limit of
serverMaxReceiveBytes plus 128 MiB unless GOMEMLIMIT is set.

SIGINT or SIGTERM shuts down gracefully: held pulls are answered, running requests
finish, consumer offsets are persisted and the store is flushed and closed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			setServeGC() // GOGC=400 unless the environment sets it (serve_gc.go)
			logger, err := newLogger(cmd, logLevel, logFormat)
			if err != nil {
				return &exitCodeError{code: exitError, err: err}
			}
			nc := server.NodeConfig{Dir: "./rocketstore-data", Listen: "127.0.0.1:9876"}
			var rc *raftFileConfig // a replica of a broker group (cluster_serve.go)
			var grpcPort *int
			if configFile != "" {
				var fc *server.FileConfig
				fc, rc, err = loadServeConfig(configFile)
				if err != nil {
					return &exitCodeError{code: exitError, err: err}
				}
				grpcPort = fc.GrpcServerPort
				if err := fc.Apply(&nc); err != nil {
					return &exitCodeError{code: exitError, err: err}
				}
			}
			if cmd.Flags().Changed("dir") {
				nc.Dir = dir
			}
			if cmd.Flags().Changed("listen") {
				nc.Listen = listen
			}
			if nc.Server.Role, err = server.ParseRole(role); err != nil {
				return &exitCodeError{code: exitError, err: err}
			}
			nc.Server.Logger = logger
			if pprofAddr != "" {
				stopPprof, err := startPprof(pprofAddr, logger) // serve_pprof.go
				if err != nil {
					return &exitCodeError{code: exitError, err: err}
				}
				defer stopPprof()
			}
			applyOpenFileLimit(&nc, logger) // serve_fdlimit.go
			// The heap's soft limit follows the receive budget (serve_gc.go).
			setServeMemoryLimit(nc.Server.Remoting.MaxReceiveBytes)
			nc.Broker.Store.Logger = logger
			var metrics *prom.Metrics
			if metricsAddr != "" {
				metrics = prom.New(nc.Dir)
				nc.Server.Metrics = metrics
			}
			grpcAt, grpcExplicit := grpcAddr(cmd.Flags().Changed("grpc-listen"), grpcListen, grpcPort)
			if rc != nil {
				grpcAt, eps, err := rc.grpcListen(grpcAt, grpcExplicit)
				if err != nil {
					return &exitCodeError{code: exitError, err: err}
				}
				return runClusterServe(cmd.Context(), nc, rc, clusterGRPC{addr: grpcAt, endpoints: eps},
					metrics, metricsAddr, consoleFlag, shutdownTimeout, logger)
			}
			var extras []serveExtra
			if consoleFlag != "" {
				extras = append(extras, withConsole(consoleFlag))
			}
			if grpcAt != "" {
				extras = append(extras, withGRPC(grpcAt, grpcExplicit))
			}
			return runServe(cmd.Context(), nc, metrics, metricsAddr, shutdownTimeout, logger, extras...)
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "dir", "./rocketstore-data", "store directory (created if missing)")
	f.StringVar(&listen, "listen", "127.0.0.1:9876", "name-server (and broker) address")
	f.StringVar(&configFile, "config", "", "YAML config file with RocketMQ setting names")
	f.StringVar(&metricsAddr, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics; a bare port binds 127.0.0.1 (loopback)")
	f.StringVar(&role, "role", "both", "roles to run: both (name server and broker), broker (registers with namesrvAddr) or namesrv")
	f.StringVar(&grpcListen, "grpc-listen", defaultGRPCListen, "RocketMQ 5.x gRPC endpoint (MessagingService); \"\" turns it off")
	f.StringVar(&consoleFlag, "console", "", "serve the web console at http://ADDR/ (e.g. 127.0.0.1:8080; a bare port listens on loopback)")
	f.StringVar(&pprofAddr, "pprof", "", "serve Go's profiler at http://ADDR/debug/pprof/ (loopback only; a bare port binds 127.0.0.1)")
	f.StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	f.StringVar(&logFormat, "log-format", "text", "log format: text or json")
	f.DurationVar(&shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long a graceful shutdown may take")
	return cmd
}

func newLogger(cmd *cobra.Command, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(cmd.ErrOrStderr(), opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q is not text or json", format)
}

func runServe(parent context.Context, nc server.NodeConfig, metrics *prom.Metrics, metricsAddr string,
	shutdownTimeout time.Duration, log *slog.Logger, extras ...serveExtra) error {
	if parent == nil {
		parent = context.Background()
	}
	ctx, stop := signal.NotifyContext(parent, os.Interrupt, syscall.SIGTERM)
	defer stop()

	n, err := server.StartNode(nc)
	if err != nil {
		return &exitCodeError{code: exitError, err: err}
	}
	if n.Broker == nil {
		log.Info("rocketstore name server serving", "nameServer", n.Addr)
	} else {
		log.Info("rocketstore serving", "role", nc.Server.Role.String(), "nameServer", n.Addr, "broker", n.BrokerAddr,
			"namesrvAddr", strings.Join(nc.Server.NamesrvAddr, ";"), "dir", nc.Dir,
			"brokerName", n.Server.Config().BrokerName, "cluster", n.Server.Config().ClusterName,
			"flushDiskType", n.Broker.Store().Config().FlushDiskType.String(),
			"recovery", n.Broker.Store().Recovery(),
			"aclEnable", nc.Server.Security.ACLEnable, "tlsServerMode", nc.Server.Security.TLSMode.String())
	}

	var hs *http.Server
	if metrics != nil {
		metricsAddr = loopbackDefault(metricsAddr)
		ln, err := net.Listen("tcp", metricsAddr)
		if err != nil {
			return errors.Join(&exitCodeError{code: exitError, err: err}, n.Close())
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
		hs = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("metrics server", "err", err)
			}
		}()
		loopback := isLoopback(ln.Addr())
		log.Info("metrics", "url", "http://"+ln.Addr().String()+"/metrics", "loopbackOnly", loopback)
		if !loopback {
			log.Warn("the metrics endpoint is reachable from other hosts and has no authentication", "addr", ln.Addr().String())
		}
	}

	// The extras (console, gRPC front) stop before the broker closes, so
	// that their requests end while it still answers.
	var stops []func()
	stopExtras := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
		stops = nil
	}
	defer stopExtras()
	for _, x := range extras {
		stopExtra, err := x(ctx, n, nc, log)
		if err != nil {
			stopExtras()
			return errors.Join(&exitCodeError{code: exitError, err: err}, n.Close())
		}
		stops = append(stops, stopExtra)
	}

	<-ctx.Done()
	stop() // a second signal kills the process
	log.Info("shutting down")
	stopExtras()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if hs != nil {
		_ = hs.Shutdown(sctx)
	}
	if err := n.Shutdown(sctx); err != nil {
		log.Error("shutdown", "err", err)
		return &exitCodeError{code: exitError, err: err}
	}
	log.Info("stopped")
	return nil
}

// loopbackDefault gives a host-less address (":9100", "9100") the
// loopback host, so that nothing is exposed unless asked for.
func loopbackDefault(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return net.JoinHostPort("127.0.0.1", addr)
	}
	if host == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// isLoopback reports whether a listener address is a loopback one.
func isLoopback(a net.Addr) bool {
	ta, ok := a.(*net.TCPAddr)
	return ok && ta.IP.IsLoopback()
}
