package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// ErrConfig reports an unusable Config.
var ErrConfig = errors.New("cluster: bad config")

// Peer is one voting member of the group: its Raft id and address.
type Peer struct {
	ID   string
	Addr string
}

// String is the "nodeId@host:port" form of the config file.
func (p Peer) String() string { return p.ID + "@" + p.Addr }

// ParsePeer parses "nodeId@host:port".
func ParsePeer(s string) (Peer, error) {
	id, addr, ok := strings.Cut(strings.TrimSpace(s), "@")
	if !ok || id == "" || addr == "" {
		return Peer{}, fmt.Errorf("%w: peer %q is not nodeId@host:port", ErrConfig, s)
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		return Peer{}, fmt.Errorf("%w: peer %q: %v", ErrConfig, s, err)
	}
	return Peer{ID: id, Addr: addr}, nil
}

// Config configures a Node's replication. The zero value of a duration
// means the default given in its comment.
type Config struct {
	// NodeID is this node's Raft id; it must be one of Peers.
	NodeID string
	// Peers is the group's initial membership, this node included; every
	// node must be given the same list (a node whose list differs from
	// the group's is refused).
	Peers []Peer
	// Join starts a node that is not in Peers' bootstrap: it waits to be
	// added by the leader (Node.AddVoter) and is caught up by a snapshot.
	Join bool
	// Transport carries Raft's RPCs (NewTCPTransport, which the Node
	// then owns and closes and which also carries repairs; or an
	// InmemTransport in tests). Required.
	Transport raft.Transport
	// HeartbeatTimeout and ElectionTimeout are Raft's (2 s each; the
	// election timeout's default is never below HeartbeatTimeout): a
	// leader is replaced 2 to 4 s after it fails. Raft's own 1 s made
	// leaders step down on a loaded 2-core machine.
	HeartbeatTimeout time.Duration
	ElectionTimeout  time.Duration
	// LeaderLeaseTimeout is Raft's: a leader that has not heard from a
	// majority for this long steps down (half HeartbeatTimeout, so 1 s
	// by default). It must not exceed HeartbeatTimeout.
	LeaderLeaseTimeout time.Duration
	// CommitTimeout is Raft's (10 ms).
	CommitTimeout time.Duration
	// MaxAppendEntries bounds the entries sent in one AppendEntries and
	// written to the log at once (256). The sends of one round are one
	// entry (see proposer.go), however many they are.
	MaxAppendEntries int
	// SnapshotInterval and SnapshotThreshold decide when a snapshot is
	// taken and the log compacted (30 s; 4096 entries). TrailingLogs is
	// how many entries stay after compaction (4096).
	SnapshotInterval  time.Duration
	SnapshotThreshold uint64
	TrailingLogs      uint64
	// LogSegmentSize is the size of the Raft log's segment files
	// (raft-wal's, 64 MiB). Compaction removes whole segments, so the
	// log on disk is about TrailingLogs entries plus one segment.
	LogSegmentSize int
	// LogStore is the Raft log's store (LogStoreWAL, the default,
	// LogStoreRaftLog or LogStoreRecords). A node keeps the store its log was created
	// with: opening a log of the other kind is refused.
	LogStore string
	// StateInterval is how often the leader replicates changed consumer
	// offsets, delay offsets and topics (1 s).
	StateInterval time.Duration
	// ApplyTimeout bounds how long a round of sends waits to be enqueued
	// for replication (10 s).
	ApplyTimeout time.Duration
	// ScrubInterval, when positive, turns on the background scrub:
	// every interval, the committed CommitLog range last checked is
	// compared with the leader's by CRC, ScrubBytes at a time (off).
	ScrubInterval time.Duration
	// ScrubBytes is the scrub's rate: bytes compared per interval (4 MiB).
	ScrubBytes int64
	// Logger receives the node's logs (slog.Default()).
	Logger *slog.Logger
}

// Raft log stores (Config.LogStore).
const (
	// LogStoreWAL is hashicorp/raft-wal in DIR/raft/wal, with its
	// metadata (term, vote, segment list) in a bolt file.
	LogStoreWAL = "wal"
	// LogStoreRaftLog is package raftlog in DIR/raft/log: CRC-checked
	// frames in fixed-size segments on the store's file system, with
	// the term and vote in a small file beside them. Every entry is
	// whole in its frame: the messages are written twice, as with
	// raft-wal (LogStoreRecords writes them once).
	LogStoreRaftLog = "raftlog"
	// LogStoreRecords is package raftlog in DIR/raft/records with the
	// message entries' bytes kept in the CommitLog (package logrecords):
	// the leader builds each round's CommitLog records and proposes them
	// as one records entry, every replica's log store writes them once,
	// at their CommitLog offset, and applying the entry makes them
	// visible (moves the store's commit point). Each message reaches a
	// replica's disk once.
	LogStoreRecords = "records"
)

// Defaults of Config.
const (
	DefaultHeartbeatTimeout = 2 * time.Second
	DefaultElectionTimeout  = 2 * time.Second
	// DefaultLeaderLeaseTimeout is the lease with the default heartbeat
	// timeout: the lease defaults to half the heartbeat timeout.
	DefaultLeaderLeaseTimeout = DefaultHeartbeatTimeout / 2
	DefaultCommitTimeout      = 10 * time.Millisecond
	DefaultMaxAppendEntries   = 256
	DefaultSnapshotInterval   = 30 * time.Second
	DefaultSnapshotThreshold  = 4096
	DefaultTrailingLogs       = 4096
	DefaultStateInterval      = time.Second
	DefaultApplyTimeout       = 10 * time.Second
	DefaultScrubBytes         = 4 << 20
	DefaultLogSegmentSize     = 64 << 20
)

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.HeartbeatTimeout, DefaultHeartbeatTimeout)
	// A heartbeat timeout raised alone raises the election timeout with it.
	def(&c.ElectionTimeout, max(DefaultElectionTimeout, c.HeartbeatTimeout))
	def(&c.LeaderLeaseTimeout, max(c.HeartbeatTimeout/2, 5*time.Millisecond))
	def(&c.CommitTimeout, DefaultCommitTimeout)
	def(&c.SnapshotInterval, DefaultSnapshotInterval)
	def(&c.StateInterval, DefaultStateInterval)
	def(&c.ApplyTimeout, DefaultApplyTimeout)
	if c.MaxAppendEntries == 0 {
		c.MaxAppendEntries = DefaultMaxAppendEntries
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = DefaultSnapshotThreshold
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = DefaultTrailingLogs
	}
	if c.LogSegmentSize == 0 {
		c.LogSegmentSize = DefaultLogSegmentSize
	}
	if c.LogStore == "" {
		c.LogStore = LogStoreWAL
	}
	if c.ScrubBytes == 0 {
		c.ScrubBytes = DefaultScrubBytes
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	switch {
	case c.NodeID == "":
		return fmt.Errorf("%w: no node id", ErrConfig)
	case c.Transport == nil:
		return fmt.Errorf("%w: no transport", ErrConfig)
	case len(c.Peers) == 0 && !c.Join:
		return fmt.Errorf("%w: no peers", ErrConfig)
	case c.MaxAppendEntries < 0 || c.MaxAppendEntries > 1024:
		return fmt.Errorf("%w: MaxAppendEntries %d not in [1, 1024]", ErrConfig, c.MaxAppendEntries)
	case c.LogStore != "" && c.LogStore != LogStoreWAL && c.LogStore != LogStoreRaftLog && c.LogStore != LogStoreRecords:
		return fmt.Errorf("%w: log store %q: want %q, %q or %q", ErrConfig, c.LogStore, LogStoreWAL, LogStoreRaftLog, LogStoreRecords)
	}
	if err := c.validateTimeouts(); err != nil {
		return err
	}
	ids, addrs := map[string]bool{}, map[string]bool{}
	self := false
	for _, p := range c.Peers {
		if ids[p.ID] || addrs[p.Addr] {
			return fmt.Errorf("%w: peer %s listed twice", ErrConfig, p)
		}
		ids[p.ID], addrs[p.Addr] = true, true
		self = self || p.ID == c.NodeID
	}
	if !self && !c.Join {
		return fmt.Errorf("%w: node id %q is not in the peer list %v", ErrConfig, c.NodeID, c.Peers)
	}
	return nil
}

// peerList is the canonical form of a peer list: sorted "id@addr".
func peerList(ps []Peer) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	slices.Sort(out)
	return out
}

// configuration is the Raft bootstrap configuration of ps.
func configuration(ps []Peer) raft.Configuration {
	var c raft.Configuration
	for _, p := range ps {
		c.Servers = append(c.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.Addr)})
	}
	return c
}

// validateTimeouts checks Raft's timeouts as they will be used (zero
// means the default) against the bounds hashicorp/raft enforces, so that
// a bad raft: section is refused with the values named before Raft
// starts.
func (c Config) validateTimeouts() error {
	if c.HeartbeatTimeout < 0 || c.ElectionTimeout < 0 || c.LeaderLeaseTimeout < 0 || c.CommitTimeout < 0 {
		return fmt.Errorf("%w: negative Raft timeout", ErrConfig)
	}
	d := c.withDefaults()
	switch {
	case d.ElectionTimeout < d.HeartbeatTimeout:
		return fmt.Errorf("%w: election timeout %v is shorter than the heartbeat timeout %v", ErrConfig,
			d.ElectionTimeout, d.HeartbeatTimeout)
	case d.LeaderLeaseTimeout > d.HeartbeatTimeout:
		return fmt.Errorf("%w: leader lease timeout %v is longer than the heartbeat timeout %v", ErrConfig,
			d.LeaderLeaseTimeout, d.HeartbeatTimeout)
	case d.HeartbeatTimeout < 5*time.Millisecond || d.LeaderLeaseTimeout < 5*time.Millisecond || d.CommitTimeout < time.Millisecond:
		return fmt.Errorf("%w: Raft timeouts below Raft's minimums (heartbeat and lease 5 ms, commit 1 ms)", ErrConfig)
	}
	return nil
}
