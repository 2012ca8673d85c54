package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/rocketstore/rocketstore/cluster"
	"github.com/rocketstore/rocketstore/server"
)

// raftFileConfig is the raft: section of serve's config file, which makes
// the node a replica of a broker group:
//
//	raft:
//	  nodeId: n1
//	  bind: 127.0.0.1:7001                  # Raft's listener
//	  peers: [n1@127.0.0.1:7001, n2@127.0.0.1:7002, n3@127.0.0.1:7003]
//	  join: false                           # true: an empty node added to a running group
//	  scrubIntervalMs: 1000                 # background scrub, scrubBytes a run (off: 0)
//	  tls:                                  # mutual TLS on the Raft port (off: see transport)
//	    certFile: /etc/rocketstore/n1.pem   # this node's certificate chain (PEM)
//	    keyFile: /etc/rocketstore/n1.key
//	    caFile: /etc/rocketstore/group-ca.pem # the CA that signs every member's certificate
type raftFileConfig struct {
	NodeID string   `yaml:"nodeId"`
	Bind   string   `yaml:"bind"`
	Peers  []string `yaml:"peers"`
	Join   bool     `yaml:"join"`
	// HeartbeatTimeoutMs and ElectionTimeoutMs tune failure detection
	// (2000 each; electionTimeoutMs defaults to heartbeatTimeoutMs when
	// that is larger).
	HeartbeatTimeoutMs int `yaml:"heartbeatTimeoutMs"`
	ElectionTimeoutMs  int `yaml:"electionTimeoutMs"`
	// LeaderLeaseTimeoutMs is how long a leader that hears from no
	// majority keeps leading (half heartbeatTimeoutMs; at most it).
	LeaderLeaseTimeoutMs int `yaml:"leaderLeaseTimeoutMs"`
	// CommitTimeoutMs is Raft's commit timeout (10).
	CommitTimeoutMs int `yaml:"commitTimeoutMs"`
	// SnapshotThreshold is the number of entries between snapshots (4096).
	SnapshotThreshold uint64 `yaml:"snapshotThreshold"`
	// SnapshotIntervalMs is how often the threshold is checked (30000).
	SnapshotIntervalMs int `yaml:"snapshotIntervalMs"`
	// TrailingLogs is how many entries a snapshot leaves in the log
	// (4096): a replica further behind is caught up from the leader's
	// CommitLog (InstallSnapshot) instead of the log.
	TrailingLogs uint64 `yaml:"trailingLogs"`
	// LogSegmentSize is the size of the Raft log's segment files
	// (67108864): the log takes at least one on disk.
	LogSegmentSize int `yaml:"logSegmentSize"`
	// LogStore is the Raft log's store: wal (hashicorp/raft-wal, the
	// default), raftlog, or records (the messages' records are the Raft
	// log's payload, written once per replica); see cluster.Config.LogStore.
	LogStore string `yaml:"logStore"`
	// ScrubIntervalMs turns on the background scrub (0: off): every
	// interval, the next ScrubBytes of the committed CommitLog are
	// checked against their CRCs and the other replicas' bytes, and
	// damage is rewritten from them (cluster.Config.ScrubInterval).
	ScrubIntervalMs int `yaml:"scrubIntervalMs"`
	// ScrubBytes is the bytes a scrub run compares (4194304): with
	// ScrubIntervalMs, the scrub's rate.
	ScrubBytes int64 `yaml:"scrubBytes"`
	// TLS turns on mutual TLS on the Raft port (cluster.LoadPeerTLS).
	TLS *raftTLSConfig `yaml:"tls"`
	// GRPCEndpoints is every replica's RocketMQ 5.x gRPC endpoint,
	// "nodeId@ip:port" (the same on every replica): each replica serves
	// gRPC on its own, and routes name the leader's.
	GRPCEndpoints []string `yaml:"grpcEndpoints"`
}

// grpcEndpoints parses raft.grpcEndpoints into node id → "ip:port".
func (rc *raftFileConfig) grpcEndpoints() (map[string]string, error) {
	eps := map[string]string{}
	for _, s := range rc.GRPCEndpoints {
		id, addr, ok := strings.Cut(s, "@")
		if _, err := netip.ParseAddrPort(addr); !ok || id == "" || err != nil {
			return nil, fmt.Errorf("%w: raft.grpcEndpoints: %q is not nodeId@ip:port", server.ErrConfig, s)
		}
		if _, dup := eps[id]; dup {
			return nil, fmt.Errorf("%w: raft.grpcEndpoints: node %q listed twice", server.ErrConfig, id)
		}
		eps[id] = addr
	}
	return eps, nil
}

// grpcListen decides where a replica serves gRPC: at --grpc-listen (or
// grpcServerPort) when given, else at its raft.grpcEndpoints entry; off
// when neither is there or --grpc-listen is "". Serving needs every
// replica's endpoint (raft.grpcEndpoints), so that routes can name the
// leader's.
func (rc *raftFileConfig) grpcListen(addr string, explicit bool) (listen string, eps map[string]string, err error) {
	if eps, err = rc.grpcEndpoints(); err != nil || addr == "" {
		return "", nil, err
	}
	own, listed := eps[rc.NodeID]
	switch {
	case explicit && !listed:
		return "", nil, fmt.Errorf("%w: a replica's gRPC endpoint (--grpc-listen / grpcServerPort) needs raft.grpcEndpoints "+
			"listing every replica's, this node %q included, so that routes name the leader's", server.ErrConfig, rc.NodeID)
	case explicit:
		return addr, eps, nil
	case listed:
		return own, eps, nil
	}
	return "", nil, nil
}

// raftTLSConfig is raft.tls: PEM files.
type raftTLSConfig struct {
	CertFile string `yaml:"certFile"`
	KeyFile  string `yaml:"keyFile"`
	CAFile   string `yaml:"caFile"`
}

// transport opens the node's Raft port: mutual TLS when raft.tls is set
// (bad or missing files are errors now, not at the first peer), else
// plain TCP with a warning that the port must be on a trusted network.
func (rc *raftFileConfig) transport(advertise string, log *slog.Logger) (*cluster.TCPTransport, error) {
	if rc.TLS == nil {
		log.Warn("the Raft port is not authenticated (no raft.tls): anyone who can reach it can write to the group or join it; "+
			"keep it on a network only the group's members reach", "raft", rc.Bind)
		return cluster.NewTCPTransport(rc.Bind, advertise, log)
	}
	cfg, err := cluster.LoadPeerTLS(rc.TLS.CertFile, rc.TLS.KeyFile, rc.TLS.CAFile)
	if err != nil {
		return nil, err
	}
	return cluster.NewTLSTransport(rc.Bind, advertise, cfg, log)
}

// loadServeConfig reads serve's config file: the raft: section here, the
// rest with server.ParseFileConfig (RocketMQ's names, unknown keys are
// errors). rc is nil when there is no raft: section.
func loadServeConfig(path string) (*server.FileConfig, *raftFileConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	rest, rc, err := splitRaftSection(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	fc, err := server.ParseFileConfig(rest)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return fc, rc, nil
}

// splitRaftSection takes the raft: key out of a YAML document.
func splitRaftSection(data []byte) ([]byte, *raftFileConfig, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", server.ErrConfig, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return data, nil, nil
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value != "raft" {
			continue
		}
		section, err := yaml.Marshal(m.Content[i+1])
		if err != nil {
			return nil, nil, err
		}
		var rc raftFileConfig
		dec := yaml.NewDecoder(bytes.NewReader(section))
		dec.KnownFields(true)
		if err := dec.Decode(&rc); err != nil && !errors.Is(err, io.EOF) {
			return nil, nil, fmt.Errorf("%w: raft: %v", server.ErrConfig, err)
		}
		m.Content = append(m.Content[:i:i], m.Content[i+2:]...)
		rest, err := yaml.Marshal(&doc)
		if err != nil {
			return nil, nil, err
		}
		return rest, &rc, nil
	}
	return data, nil, nil
}

// clusterConfig checks the raft: section and turns it into the node's
// replication config (without its transport). advertise is this node's
// address in the peer list.
func (rc *raftFileConfig) clusterConfig() (cfg cluster.Config, advertise string, err error) {
	if rc.NodeID == "" || rc.Bind == "" {
		return cfg, "", fmt.Errorf("%w: raft: nodeId and bind are required", server.ErrConfig)
	}
	cfg = cluster.Config{NodeID: rc.NodeID, Join: rc.Join, SnapshotThreshold: rc.SnapshotThreshold, TrailingLogs: rc.TrailingLogs}
	for _, s := range rc.Peers {
		p, err := cluster.ParsePeer(s)
		if err != nil {
			return cfg, "", err
		}
		cfg.Peers = append(cfg.Peers, p)
		if p.ID == rc.NodeID {
			advertise = p.Addr
		}
	}
	if advertise == "" {
		if !rc.Join {
			return cfg, "", fmt.Errorf("%w: raft: nodeId %q is not in peers %v", server.ErrConfig, rc.NodeID, rc.Peers)
		}
		advertise = rc.Bind
	}
	if rc.HeartbeatTimeoutMs < 0 || rc.ElectionTimeoutMs < 0 || rc.SnapshotIntervalMs < 0 ||
		rc.LeaderLeaseTimeoutMs < 0 || rc.CommitTimeoutMs < 0 {
		return cfg, "", fmt.Errorf("%w: raft: negative timeout", server.ErrConfig)
	}
	if rc.ScrubIntervalMs < 0 || rc.ScrubBytes < 0 {
		return cfg, "", fmt.Errorf("%w: raft: scrubIntervalMs %d and scrubBytes %d must not be negative",
			server.ErrConfig, rc.ScrubIntervalMs, rc.ScrubBytes)
	}
	if rc.LogSegmentSize < 0 {
		return cfg, "", fmt.Errorf("%w: raft: logSegmentSize %d must not be negative", server.ErrConfig, rc.LogSegmentSize)
	}
	cfg.LogSegmentSize = rc.LogSegmentSize
	switch rc.LogStore {
	case "", cluster.LogStoreWAL, cluster.LogStoreRaftLog, cluster.LogStoreRecords:
		cfg.LogStore = rc.LogStore
	default:
		return cfg, "", fmt.Errorf("%w: raft: logStore %q: want %s, %s or %s", server.ErrConfig, rc.LogStore,
			cluster.LogStoreWAL, cluster.LogStoreRaftLog, cluster.LogStoreRecords)
	}
	cfg.ScrubInterval = ms(rc.ScrubIntervalMs)
	cfg.ScrubBytes = rc.ScrubBytes
	cfg.SnapshotInterval = ms(rc.SnapshotIntervalMs)
	cfg.HeartbeatTimeout = ms(rc.HeartbeatTimeoutMs)
	cfg.ElectionTimeout = ms(rc.ElectionTimeoutMs)
	cfg.LeaderLeaseTimeout = ms(rc.LeaderLeaseTimeoutMs)
	cfg.CommitTimeout = ms(rc.CommitTimeoutMs)
	return cfg, advertise, nil
}

// peerTLSFlags are an operator command's --tls-cert, --tls-key and
// --tls-ca: a certificate the group's CA signed (a member's will do), for
// a group whose Raft port has raft.tls.
type peerTLSFlags struct{ cert, key, ca string }

func (f *peerTLSFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.cert, "tls-cert", "", "certificate (PEM) signed by the group's CA, for a Raft port with raft.tls")
	fs.StringVar(&f.key, "tls-key", "", "key (PEM) of --tls-cert")
	fs.StringVar(&f.ca, "tls-ca", "", "the group's CA (PEM), raft.tls.caFile")
}

// dialer is plain TCP without the flags, else mutual TLS.
func (f *peerTLSFlags) dialer() (cluster.Dialer, error) {
	if f.cert == "" && f.key == "" && f.ca == "" {
		return cluster.Dialer{}, nil
	}
	cfg, err := cluster.LoadPeerTLS(f.cert, f.key, f.ca)
	if err != nil {
		return cluster.Dialer{}, err
	}
	return cluster.Dialer{TLS: cfg}, nil
}

// hint adds to err, for a command run without the flags, that a group
// with raft.tls needs them: a TLS port just closes a plain connection.
func (f *peerTLSFlags) hint(err error) error {
	if err == nil || f.cert != "" || f.key != "" || f.ca != "" {
		return err
	}
	return fmt.Errorf("%w (if the group's Raft ports have raft.tls, pass --tls-cert, --tls-key and --tls-ca)", err)
}
