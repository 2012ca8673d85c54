package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/server"
)

// newClusterDemoCmd is `rocketstore cluster-demo`: a 3-replica broker
// group in one process, on 127.0.0.1, for trying clients against.
func newClusterDemoCmd() *cobra.Command {
	var dir string
	var port int
	cmd := &cobra.Command{
		Use:   "cluster-demo [--dir DIR] [--port 9876]",
		Short: "Run a 3-replica broker group on 127.0.0.1 and print the addresses for clients",
		Long: `cluster-demo starts three replicas of broker group "broker-a" in this process,
each with its own store directory (DIR/n1, DIR/n2, DIR/n3; DIR defaults to a new
temporary directory) and, all on 127.0.0.1 and derived from --port, a name server
(--port, +1, +2), a broker port (--port+1035, +1045, +1055: RocketMQ's 10911,
10921, 10931 with the default 9876), a Raft port (--port+1000, +1001, +1002) and
a RocketMQ 5.x gRPC endpoint (--port+2000, +2001, +2002; routes name the
leader's), with SYNC_FLUSH and small files (64 MiB CommitLog files, 4.2 MB index
files, 16 MiB Raft log segments): about 98 MB of disk a replica after a first
message, 294 MB for the three, instead of 1.6 GB a replica. Every
replica registers with the three name servers; the leader as brokerId 0, the others
as their place in the group (n2 is 2, n3 is 3; n1 is 1 while it follows). It
prints the name-server list to give clients and runs until SIGINT or SIGTERM.
The same group as three processes is three 'rocketstore serve --config nI.yaml';
the files are written into DIR.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := newLogger(cmd, "info", "text")
			if err != nil {
				return err
			}
			if dir == "" {
				if dir, err = os.MkdirTemp("", "rocketstore-cluster-*"); err != nil {
					return err
				}
			}
			if port < 1 || port+demoPortSpan > 65535 {
				return fmt.Errorf("--port %d: the demo's ports run from it to port+%d, which must stay within 1-65535", port, demoPortSpan)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			replicaLog, _ := newLogger(&cobra.Command{}, "warn", "text")
			nodes, nsList, err := startDemoGroup(dir, port, replicaLog)
			if err != nil {
				return &exitCodeError{code: exitError, err: err}
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "broker group broker-a: 3 replicas, data in %s\n", dir)
			for i, cn := range nodes {
				fmt.Fprintf(out, "  n%d: name server %s, broker %s, gRPC %s, raft 127.0.0.1:%d, config %s\n", i+1, cn.addr, cn.brokerAddr,
					cn.grpcAddr, port+1000+i, filepath.Join(dir, fmt.Sprintf("n%d.yaml", i+1)))
			}
			fmt.Fprintf(out, "clients: name server %s (e.g. cd e2e && go run ./example -namesrv %s)\n", nsList, nodes[0].addr)
			var grpcs []string
			for _, cn := range nodes {
				grpcs = append(grpcs, cn.grpcAddr)
			}
			fmt.Fprintf(out, "5.x clients: endpoints %s\n", strings.Join(grpcs, ";"))
			t := time.NewTicker(time.Second)
			defer t.Stop()
			leader := ""
		loop:
			for {
				select {
				case <-ctx.Done():
					break loop
				case <-t.C:
					for i, cn := range nodes {
						if cn.node.Writable() && leader != cn.brokerAddr {
							leader = cn.brokerAddr
							fmt.Fprintf(out, "leader: n%d (broker %s)\n", i+1, leader)
						}
					}
				}
			}
			var errs []error
			sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			// All at once: each replica unregisters from the three name
			// servers before it closes its own, so stopping them one
			// after the other had the later ones unregister from closed
			// name servers (a "connection refused" warning each).
			errc := make(chan error, len(nodes))
			for _, cn := range nodes {
				go func() { errc <- cn.shutdown(sctx) }()
			}
			for range nodes {
				errs = append(errs, <-errc)
			}
			_ = logger
			return errors.Join(errs...)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "parent `DIR` of the replicas' store directories (default: a new temporary directory)")
	cmd.Flags().IntVar(&port, "port", 9876, "first name-server port; the others follow; brokers at port+1035 (+10 each), Raft at port+1000, gRPC at port+2000")
	return cmd
}

// demoPortSpan is how far above --port the demo's ports reach (the third
// gRPC endpoint).
const demoPortSpan = 2002

// demoBrokerPort is replica i's (1-based) broker port: RocketMQ's 10911,
// 10921, 10931 beside name servers from 9876, and as far from any other
// --port. Ten apart, as RocketMQ's brokers on one host are (each also
// takes its port-2 and port+1 there).
func demoBrokerPort(port, i int) int { return port + 1035 + 10*(i-1) }

// smallFootprint are the file sizes of a trial or a demo: about 70 MB of
// disk for a fresh store instead of 1.5 GB (docs/configuration.md).
const smallFootprint = `mapedFileSizeCommitLog: 67108864   # 64 MiB CommitLog files (1 GiB by default)
mapedFileSizeConsumeQueue: 600000  # 30,000 units a ConsumeQueue file (300,000)
maxHashSlotNum: 50000              # index files of 4.2 MB (420 MB)
maxIndexNum: 200000
`

// demoConfig is replica i's config file (1-based), as serve reads it.
func demoConfig(i, port int) string {
	var peers, grpcs []string
	for j := 1; j <= 3; j++ {
		peers = append(peers, fmt.Sprintf("n%d@127.0.0.1:%d", j, port+1000+j-1))
		grpcs = append(grpcs, fmt.Sprintf("n%d@127.0.0.1:%d", j, port+2000+j-1))
	}
	var ns []string
	for j := 0; j < 3; j++ {
		ns = append(ns, fmt.Sprintf("127.0.0.1:%d", port+j))
	}
	return fmt.Sprintf(`brokerName: broker-a
listenPort: %d
namesrvListen: 127.0.0.1:%d
flushDiskType: SYNC_FLUSH
%s%sraft:
  nodeId: n%d
  bind: 127.0.0.1:%d
  peers: [%s]
  grpcEndpoints: [%s]
  logSegmentSize: 16777216
`, demoBrokerPort(port, i), port+i-1, namesrvLine(strings.Join(ns, ";")), smallFootprint, i, port+1000+i-1, strings.Join(peers, ", "),
		strings.Join(grpcs, ", "))
}

// startDemoGroup writes the three config files into dir and starts the
// replicas from them. The three name-server ports are bound first: each
// replica registers with all three at start, and a port already bound
// accepts the connection (the registration is answered once its node
// serves, a moment later) where a missing one refused it with a warning.
func startDemoGroup(dir string, port int, logger *slog.Logger) ([]*clusterNode, string, error) {
	var nodes []*clusterNode
	var ns []string
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	lns := make([]net.Listener, 3)
	closeRest := func(from int) {
		for _, l := range lns[from:] {
			if l != nil {
				_ = l.Close()
			}
		}
	}
	for i := range lns {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port+i))
		if err != nil {
			closeRest(0)
			return nil, "", err
		}
		lns[i] = ln
	}
	for i := 1; i <= 3; i++ {
		cn, err := startDemoNode(dir, port, i, lns[i-1], logger)
		if err != nil {
			closeRest(i)
			return nodes, "", err
		}
		nodes = append(nodes, cn)
		ns = append(ns, cn.addr)
	}
	return nodes, strings.Join(ns, ";"), nil
}

// startDemoNode writes replica i's config file and starts it on ln, its
// name-server listener (closed on failure), logging to logger.
func startDemoNode(dir string, port, i int, ln net.Listener, logger *slog.Logger) (*clusterNode, error) {
	name := filepath.Join(dir, fmt.Sprintf("n%d.yaml", i))
	fail := func(err error) (*clusterNode, error) { _ = ln.Close(); return nil, err }
	if err := os.WriteFile(name, []byte(demoConfig(i, port)), 0o644); err != nil {
		return fail(err)
	}
	fc, rc, err := loadServeConfig(name)
	if err != nil {
		return fail(err)
	}
	nc := server.NodeConfig{Dir: filepath.Join(dir, fmt.Sprintf("n%d", i))}
	if err := fc.Apply(&nc); err != nil {
		return fail(err)
	}
	nc.Broker.Store.FlushDiskType = engine.SyncFlush
	nc.Server.Logger, nc.Broker.Store.Logger = logger, logger
	listen, eps, err := rc.grpcListen(defaultGRPCListen, false)
	if err != nil {
		return fail(err)
	}
	cn, err := startClusterNodeOn(ln, nc, rc, logger)
	if err != nil {
		return nil, err
	}
	if err := cn.serveGRPC(clusterGRPC{addr: listen, endpoints: eps}, nc.Server.Security, logger); err != nil {
		return nil, errors.Join(err, cn.shutdown(context.Background()))
	}
	return cn, nil
}
