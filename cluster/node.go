package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	wal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	walmetrics "github.com/hashicorp/raft-wal/metrics"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/cluster/logrecords"
	"github.com/rocketstore/rocketstore/cluster/raftlog"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/clocks"
	"github.com/rocketstore/rocketstore/internal/engineops"
)

// NodeConfig configures a Node.
type NodeConfig struct {
	// Dir is the store directory; Raft's log, snapshots and the group's
	// identity are in Dir/raft.
	Dir string
	// Broker configures the broker on Dir. Open sets Writer, and the
	// store's FlushDiskType to ASYNC_FLUSH: whatever the configured flush
	// type, a send is answered once its entry is fsynced in the Raft logs
	// of a quorum (the leader's included) and applied on the leader; the
	// CommitLog is a copy rebuilt from the Raft log after a crash.
	Broker broker.Config
	// BrokerName is the group's name; every node of the group must have
	// the same.
	BrokerName string
	// StoreHost is this node's broker address, written as STOREHOST
	// into the records it accepts while it leads.
	StoreHost netip.AddrPort
	// Cluster configures the replication.
	Cluster Config
	// OnRoleChange, when set, is called from one goroutine, in order,
	// with the node's RocketMQ broker id each time it changes: 0 once
	// it leads and accepts writes, its follower id (1, 2, ...) when it
	// stops leading.
	OnRoleChange func(brokerID int64)

	// askPeer replaces the repair protocol's TCP client (tests on
	// in-memory transports set it through export_test.go).
	askPeer func(ctx context.Context, addr string, op byte, off, size int64) ([]byte, error)
	// askAdmin replaces the membership requests' TCP client (tests).
	askAdmin adminFunc
	// noWithdraw is the broken variant in which a send whose context
	// ends while it waits for its round stays queued (proposer.go).
	noWithdraw bool
	// onInstall, when set, is called as a received snapshot's install
	// on a store of replicated records begins (crash tests).
	onInstall func()
	// keepLogBeforeSnapshot is the broken variant in which a node keeps
	// a log that ends before its newest snapshot (recoverCursor).
	keepLogBeforeSnapshot bool
	// noTxnRebuild and noInstallDeletes are broken variants of the
	// tests: a new leader keeps its transaction state, a snapshot
	// install ignores the leader's topic deletions.
	noTxnRebuild, noInstallDeletes bool
	// applyOverDamage is the broken variant of the tests that shows the
	// state machine must wait for the repair of recovered damage.
	applyOverDamage bool
	// noDeleteOrder is the broken variant of the tests in which a
	// deletion does not wait for a state entry being captured (deletes.go).
	noDeleteOrder bool
	// noRecordsDeleteOrder is the broken variant in which a topic
	// deletion on a store of replicated records does not hold the
	// proposer's lock until it is applied (deletes.go).
	noRecordsDeleteOrder bool
	// noStateTerm is the broken variant in which replicas apply a state
	// entry committed in another term than the one it was captured in.
	noStateTerm bool
	// raftLog, when set, is the level of Raft's own log lines in place of
	// ROCKETSTORE_RAFT_LOG's (tests that read Raft's campaigns).
	raftLog hclog.Level
	// fsys replaces the store directory's file system (crash tests).
	fsys backend.FS
	// snapshotNoSync is the broken variant of the crash tests that shows
	// a snapshot must sync the CommitLog.
	snapshotNoSync bool
	// reinstallDropsTail is the broken variant of the crash tests in
	// which finishing an install at start truncates the records past the
	// snapshot (records.go).
	reinstallDropsTail bool
}

// ErrNotLeader reports a write to a replica that is not its group's
// leader. It wraps engine.ErrReadOnly, so that the broker answers
// SERVICE_NOT_AVAILABLE as a RocketMQ slave does.
var ErrNotLeader = fmt.Errorf("%w: not the broker group's leader", engine.ErrReadOnly)

// ErrClosed reports use of a closed Node.
var ErrClosed = errors.New("cluster: node closed")

// Node is one replica of a broker group: a broker whose writes go through
// the group's Raft log. It implements broker.Writer.
type Node struct {
	cfg  NodeConfig
	ccfg Config
	log  *slog.Logger
	b    *broker.Broker
	fsm  *fsm
	raft *raft.Raft
	// logs and stable are the Raft log and its term and vote: raft-wal
	// (wal, meta) or package raftlog (rlog, rstable); see Config.LogStore.
	logs    raft.LogStore
	stable  raft.StableStore
	wal     *wal.WAL
	meta    *metadb.BoltMetaDB
	rlog    *raftlog.Store
	rstable *raftlog.Stable
	snaps   *snapStore
	// walStats collects raft-wal's write counters (LogStats).
	walStats *walmetrics.AtomicCollector
	now      func() int64

	writable atomic.Bool
	brokerID atomic.Int64
	// proposeMu orders timestamp assignment with enqueueing, so that
	// store timestamps never go backwards along the log.
	proposeMu    sync.Mutex
	lastAssigned int64
	// props queues the sends that wait for a round (proposer.go).
	props proposals
	// leadTerm is the term in which this node last became writable; a
	// state entry carries it (see stateEntry.Term).
	leadTerm atomic.Uint64
	// stateMu orders state entries with deletions (deletes.go).
	stateMu sync.Mutex

	repaired atomic.Int64
	counters statusCounters
	// followers is the leader's view of its followers (followers.go),
	// kept when tracked: Raft's transport is wrapped to feed it.
	followers *followerTracker
	tracked   bool
	// ask sends one repair request to a replica (askPeer over TCP).
	ask func(ctx context.Context, addr string, op byte, off, size int64) ([]byte, error)
	// adminCall sends one membership request (membership.go).
	adminCall adminFunc
	// removed is set while this node knows it was removed from the
	// group (removed.go).
	removed atomic.Pointer[removedMark]
	// damageRepaired is closed once the damage recovery reported at
	// open is repaired (at once when there was none); see startrepair.go.
	damageRepaired chan struct{}

	notify chan bool
	stop   chan struct{}
	// down is closed once Raft has shut down (Close).
	down      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

var _ broker.Writer = (*Node)(nil)

// Open opens the broker on cfg.Dir and starts its Raft replica. A node
// whose Raft state is new and whose Cluster.Join is false bootstraps the
// group with Cluster.Peers.
func Open(cfg NodeConfig) (*Node, error) {
	if err := cfg.Cluster.Validate(); err != nil {
		return nil, err
	}
	if !cfg.StoreHost.IsValid() {
		return nil, fmt.Errorf("%w: no store host (the node's broker address)", ErrConfig)
	}
	n := &Node{cfg: cfg, ccfg: cfg.Cluster.withDefaults(), notify: make(chan bool, 16), stop: make(chan struct{}), down: make(chan struct{}),
		ask: askPeer, damageRepaired: make(chan struct{})}
	if cfg.askPeer != nil {
		n.ask = cfg.askPeer
	}
	n.adminCall = adminTCP
	if cfg.askAdmin != nil {
		n.adminCall = cfg.askAdmin
	}
	n.log = n.ccfg.Logger.With("node", n.ccfg.NodeID)
	if err := n.checkLogStore(); err != nil {
		return nil, err
	}
	// The broker takes the store's lock: nothing, the Raft directory
	// included, is created in a store another process holds.
	if err := n.openBroker(); err != nil {
		return nil, err
	}
	raftDir := filepath.Join(cfg.Dir, "raft")
	if err := os.MkdirAll(raftDir, 0o755); err != nil {
		return nil, errors.Join(err, n.b.Close())
	}
	n.fsm.noInstallDeletes = cfg.noInstallDeletes
	damaged := n.holdForDamage()
	if err := n.openRaft(raftDir); err != nil {
		return nil, errors.Join(err, n.b.Close())
	}
	n.brokerID.Store(n.followerID())
	if t, ok := n.ccfg.Transport.(*TCPTransport); ok {
		t.useFor(n, cfg) // serves repairs; repairs and joins dial as Raft does
	}
	n.checkRemoved()
	n.wg.Add(3)
	go n.watchLeadership()
	go n.replicateState()
	go n.watchRemoval()
	if damaged {
		n.wg.Add(1)
		go n.repairRecoveredDamage()
	}
	if n.ccfg.ScrubInterval > 0 {
		n.wg.Add(1)
		go n.scrubLoop()
	}
	if n.ccfg.Join {
		n.wg.Add(1)
		go n.askToJoin()
	}
	return n, nil
}

func (n *Node) openBroker() error {
	bc := n.cfg.Broker
	// A send is durable once its entry is fsynced in the Raft logs of a
	// quorum; the CommitLog, rebuilt from the Raft log after a crash, is
	// synced in the background and at snapshots (see fsm.ApplyBatch).
	bc.Store.FlushDiskType = engine.AsyncFlush
	bc.Store.StoreHost = n.cfg.StoreHost
	bc.Writer = n
	// The transaction service writes through the Writer (the group's
	// log) and is rebuilt from its queues when the node leads
	// (transaction.Service.Invalidate).
	if bc.Store.OnUndecidableDamage == engine.DamageRefuse {
		// Every record in a replica's CommitLog was committed before it
		// was applied, so the other replicas hold its bytes: damage that
		// recovery cannot tell from a torn write is skipped, kept
		// hidden and rewritten from a replica (startrepair.go) instead
		// of refusing to start.
		bc.Store.OnUndecidableDamage = engine.DamageSkip
	}
	if n.records() {
		commit, err := n.snapshotCommitPoint()
		if err != nil {
			return err
		}
		// The store's CommitLog is the Raft log's payload: records past
		// the commit point are Raft's uncommitted entries, kept
		// invisible. Records past what the log store synced belong to no
		// entry yet (raftlog truncates them at open), so damage recovery
		// cannot decide is cut rather than skipped.
		bc.Store = engineops.WithRecords(bc.Store, commit)
		bc.Store.OnUndecidableDamage = engine.DamageTruncate
	}
	n.now = clocks.Millis(bc.Store.Clock)
	fsys, err := n.storeFS()
	if err != nil {
		return err
	}
	if n.b, err = broker.Open(fsys, bc); err != nil {
		return err
	}
	n.fsm = &fsm{b: n.b, store: n.b.Store(), log: n.log, nodeID: n.ccfg.NodeID, brokerName: n.cfg.BrokerName,
		peers: peerList(n.ccfg.Peers), records: n.records(), onInstall: n.cfg.onInstall, reinstallDropsTail: n.cfg.reinstallDropsTail, snapshotNoSync: n.cfg.snapshotNoSync, noStateTerm: n.cfg.noStateTerm, joined: n.ccfg.Join,
		ident: &identityFile{path: filepath.Join(n.cfg.Dir, "raft", "group.json")}}
	return nil
}

// records reports whether the node keeps its message entries in the
// CommitLog (LogStoreRecords).
func (n *Node) records() bool { return n.ccfg.LogStore == LogStoreRecords }

// snapshotCommitPoint is the commit point a store of replicated records
// opens with: the CommitLog position of the newest snapshot taken here,
// an applied point the state machine can vouch for (Raft applies the
// entries after it again, moving the commit point on).
func (n *Node) snapshotCommitPoint() (int64, error) { return ownSnapshotEnd(n.cfg.Dir) }

// ownSnapshotEnd is the CommitLog position of the newest snapshot that
// the replica whose store directory is dir took itself (0: none).
func ownSnapshotEnd(dir string) (int64, error) {
	s := &snapStore{dir: filepath.Join(dir, "raft", "snapshots")}
	ms, err := s.metas()
	if err != nil {
		return 0, err
	}
	for _, m := range ms {
		// A snapshot received from the leader (its CommitLog range not
		// empty) may not be installed: the records below its end may
		// still be another leader's. Its install is finished at start
		// (recoverCursor), which moves the commit point.
		if m.Header.From == m.Header.To {
			return m.Header.To, nil
		}
		// Its data is removed (reap) only once the CommitLog reached
		// its end, which the install syncs before it moves the commit
		// point: without it, the snapshot is installed.
		if _, err := os.Stat(s.path(m.Meta.ID, ".data")); errors.Is(err, os.ErrNotExist) {
			return m.Header.To, nil
		}
	}
	return 0, nil
}

// storeFS is the store directory's file system.
func (n *Node) storeFS() (backend.FS, error) {
	if n.cfg.fsys != nil {
		return n.cfg.fsys, nil
	}
	return mmap.New(n.cfg.Dir)
}

// openRaft recovers the state machine's position and starts Raft.
func (n *Node) openRaft(raftDir string) error {
	f := n.fsm
	g, err := f.ident.load()
	if err != nil {
		return err
	}
	f.group = g
	max := f.store.CommitLog().MaxOffset()
	if n.records() {
		max = engineops.Of(f.store).RecordsEnd() // committed or not
	}
	if g == nil && max > 0 {
		return fmt.Errorf("%w: the store directory %s holds %d bytes of CommitLog but belongs to no broker group: "+
			"a replica starts from an empty directory (a foreign store directory is refused)", ErrDiverged, n.cfg.Dir, max)
	}
	if n.snaps, err = newSnapStore(filepath.Join(raftDir, "snapshots"), f.store.CommitLog); err != nil {
		return err
	}
	// The log opens first: an install finished at start deletes the
	// log's entries whose records it replaces before it replaces them.
	if err := n.openLog(raftDir); err != nil {
		return err
	}
	if err := n.recoverCursor(); err != nil {
		return errors.Join(err, n.closeLog())
	}
	n.checkUnindexedRecords()
	n.logs = &snapshotLog{LogStore: n.logs, snaps: n.snaps}
	rc := raft.DefaultConfig()
	c := n.ccfg
	rc.LocalID = raft.ServerID(c.NodeID)
	rc.HeartbeatTimeout, rc.ElectionTimeout = c.HeartbeatTimeout, c.ElectionTimeout
	rc.LeaderLeaseTimeout, rc.CommitTimeout = c.LeaderLeaseTimeout, c.CommitTimeout
	rc.MaxAppendEntries, rc.BatchApplyCh = c.MaxAppendEntries, true
	rc.SnapshotInterval, rc.SnapshotThreshold, rc.TrailingLogs = c.SnapshotInterval, c.SnapshotThreshold, c.TrailingLogs
	rc.NoSnapshotRestoreOnStart = true // the CommitLog is the state
	rc.NotifyCh = n.notify
	if err := n.loadRemoved(); err != nil {
		return errors.Join(err, n.closeLog())
	}
	if n.removed.Load() != nil {
		rc.HeartbeatTimeout, rc.ElectionTimeout = holdTimeout, holdTimeout // stands for no election
		n.log.Error("removed from the group", "err", n.Removed())
	}
	level := raftLogLevel()
	if n.cfg.raftLog != hclog.NoLevel {
		level = n.cfg.raftLog
	}
	rc.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: level, Output: slogWriter{n.log}, DisableTime: true})
	existing, err := raft.HasExistingState(n.logs, n.stable, n.snaps)
	if err != nil {
		return errors.Join(err, n.closeLog())
	}
	// Bootstrap before Raft starts: once it runs, the leader's entries
	// may arrive first and make the state non-empty.
	if !existing && !c.Join {
		if err := raft.BootstrapCluster(rc, n.logs, n.stable, n.snaps, c.Transport, configuration(c.Peers)); err != nil {
			return errors.Join(fmt.Errorf("cluster: bootstrap: %w", err), n.closeLog())
		}
	}
	n.followers = newFollowerTracker(time.Now)
	trans := trackFollowers(c.Transport, n.followers)
	_, n.tracked = trans.(*trackedTransport)
	if n.raft, err = raft.NewRaft(rc, f, n.logs, n.stable, n.snaps, trans); err != nil {
		return errors.Join(err, n.closeLog())
	}
	n.observeElections()
	if existing {
		if err := n.checkMembership(); err != nil {
			return errors.Join(err, n.shutdownRaft())
		}
	}
	return nil
}

// checkUnindexedRecords stops a store of records entries whose CommitLog
// holds records past its snapshot that no entry of its Raft log indexes
// (the log store's directory removed, or another group's): its log store
// could not append the group's records after them, so it would never
// apply an entry to find out.
func (n *Node) checkUnindexedRecords() {
	if !n.records() {
		return
	}
	if last, err := n.rlog.LastIndex(); err != nil || last > 0 {
		return
	}
	n.fsm.mu.Lock()
	cursor := n.fsm.cursor
	n.fsm.mu.Unlock()
	if end := engineops.Of(n.fsm.store).RecordsEnd(); end > cursor {
		_ = n.fsm.fail(fmt.Errorf("%w: the store directory holds %d bytes of CommitLog past %d that no entry of its Raft log holds "+
			"(a foreign store directory)", ErrDiverged, end, cursor))
	}
}

// dropLogThrough deletes the log's entries up to index, which a snapshot
// holds, as Raft does after it installs one.
func (n *Node) dropLogThrough(index uint64) error {
	first, err := n.logs.FirstIndex()
	if err != nil || first == 0 || first > index {
		return err
	}
	last, err := n.logs.LastIndex()
	if err != nil {
		return err
	}
	if err := n.logs.DeleteRange(first, min(index, last)); err != nil {
		return fmt.Errorf("cluster: delete the log's entries up to the installed snapshot's %d: %w", index, err)
	}
	return nil
}

// recoverCursor sets the state machine's position from the newest
// snapshot, finishing the install of a received one that a crash
// interrupted.
func (n *Node) recoverCursor() error {
	latest, err := n.snaps.latest()
	if err != nil || latest == nil {
		return err
	}
	f, cl := n.fsm, n.fsm.store.CommitLog()
	if f.group == nil {
		if err := f.applyGroup(&latest.Header.Group, false); err != nil {
			return err
		}
	}
	if cl.MaxOffset() < latest.Header.To {
		_, rc, err := n.snaps.Open(latest.Meta.ID)
		if err != nil {
			return fmt.Errorf("%w: %w (repair the node from a replica, or give it an empty directory)", ErrDiverged, err)
		}
		// The log's entries after the snapshot stay: their records past
		// its end are kept (records.go).
		f.reinstall = true
		err = f.Restore(rc)
		f.reinstall = false
		if err != nil {
			return err
		}
	}
	// Raft removes the log's entries after it installs a snapshot; an
	// install cut off before it did leaves them, and the entries the
	// leader sends next (after the snapshot) would not follow them. A
	// log that ends before the snapshot is wholly in it.
	if last, err := n.logs.LastIndex(); err != nil {
		return err
	} else if last < latest.Meta.Index && !n.cfg.keepLogBeforeSnapshot {
		if err := n.dropLogThrough(latest.Meta.Index); err != nil {
			return err
		}
	}
	f.mu.Lock()
	f.cursor = latest.Header.To
	f.mu.Unlock()
	f.lastTs.Store(latest.Header.LastTs)
	return nil
}

// checkMembership refuses a restart whose configured peers disagree with
// the group's membership.
func (n *Node) checkMembership() error {
	fut := n.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return err
	}
	if n.ccfg.Join {
		return nil
	}
	conf := map[string]string{}
	for _, s := range fut.Configuration().Servers {
		conf[string(s.ID)] = string(s.Address)
	}
	mine := map[string]string{}
	for _, p := range n.ccfg.Peers {
		mine[p.ID] = p.Addr
		if a, ok := conf[p.ID]; ok && a != p.Addr {
			return fmt.Errorf("%w: raft.peers gives %s, the group knows %s@%s", ErrConfig, p, p.ID, a)
		}
	}
	for id, a := range conf {
		if _, ok := mine[id]; !ok && n.initialMember(id) {
			return fmt.Errorf("%w: the group has member %s@%s, which raft.peers %v does not list", ErrConfig, id, a, n.ccfg.Peers)
		}
	}
	return nil
}

func (n *Node) shutdownRaft() error {
	err := n.raft.Shutdown().Error()
	return errors.Join(err, n.closeLog())
}

// followerID is this node's broker id while it follows: its position in
// the peer list, from 1.
func (n *Node) followerID() int64 {
	for i, p := range n.ccfg.Peers {
		if p.ID == n.ccfg.NodeID {
			return int64(i + 1)
		}
	}
	return n.joinedFollowerID()
}

// watchLeadership turns writes on once this node leads and has applied
// everything committed before, and off when it stops leading.
func (n *Node) watchLeadership() {
	defer n.wg.Done()
	for {
		select {
		case <-n.stop:
			return
		case leader := <-n.notify:
			if leader {
				n.lead()
			} else {
				n.follow()
			}
		}
	}
}

func (n *Node) lead() {
	// Read before the barrier: a barrier that succeeds was committed in
	// this term (a lost leadership fails it), so the node's tables
	// include every entry committed before the term began.
	term := n.raft.CurrentTerm()
	// The barrier applies every entry of earlier terms, so that the
	// state machine's last timestamp is the log's.
	if err := n.raft.Barrier(n.ccfg.ApplyTimeout).Error(); err != nil {
		n.log.Warn("leader barrier failed", "err", err)
		return
	}
	if err := n.ensureGroup(); err != nil {
		n.log.Error("group identity not committed", "err", err)
		return
	}
	n.proposeMu.Lock()
	n.lastAssigned = max(n.lastAssigned, n.fsm.lastTs.Load())
	n.proposeMu.Unlock()
	if !n.cfg.noTxnRebuild {
		n.b.InvalidateTransactions() // rebuilt before its first use as leader
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.ccfg.ApplyTimeout)
	if err := n.b.ReloadPop(ctx); err != nil { // its pop state as the log left it
		n.log.Error("pop state not reloaded", "err", err)
	}
	cancel()
	n.leadTerm.Store(term)
	n.writable.Store(true)
	n.addConfiguredPeers()
	n.b.Schedule().Wake()
	n.b.Timer().Elected()
	n.log.Info("leading the broker group", "brokerName", n.cfg.BrokerName)
	n.setBrokerID(0)
}

// addConfiguredPeers adds the configured peers that are not members yet
// (nodes started with Join), so that adding a node is a config change.
func (n *Node) addConfiguredPeers() {
	if n.fsm.Err() != nil {
		return
	}
	fut := n.raft.GetConfiguration()
	if fut.Error() != nil {
		return
	}
	have := map[string]bool{}
	for _, s := range fut.Configuration().Servers {
		have[string(s.ID)] = true
	}
	for _, p := range n.ccfg.Peers {
		// A first member missing was removed (RemoveServer): not again.
		if !have[p.ID] && !n.initialMember(p.ID) {
			if err := n.AddVoter(p.ID, p.Addr); err != nil {
				n.log.Warn("add configured peer", "peer", p, "err", err)
				continue
			}
			n.log.Info("added configured peer to the group", "peer", p)
		}
	}
}

func (n *Node) follow() {
	n.writable.Store(false)
	// The timer service's first step on standby marks the CommitLog end
	// its own deliveries reach: it must come before another leader's
	// deliveries can be followed by this node's next election.
	n.b.Timer().Wake()
	n.log.Info("following", "leader", n.LeaderID())
	n.setBrokerID(n.followerID())
}

func (n *Node) setBrokerID(id int64) {
	if n.brokerID.Swap(id) != id && n.cfg.OnRoleChange != nil {
		n.cfg.OnRoleChange(id)
	}
}

// ensureGroup commits the group's identity once, before any message.
func (n *Node) ensureGroup() error {
	n.fsm.mu.Lock()
	has := n.fsm.group != nil
	n.fsm.mu.Unlock()
	if has {
		return nil
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	g := groupEntry{GroupID: hex.EncodeToString(id[:]), BrokerName: n.cfg.BrokerName,
		CommitLogFileSize: n.fsm.store.CommitLog().FileSize(), Peers: n.fsm.peers}
	data, err := encodeJSON(kindGroup, g)
	if err != nil {
		return err
	}
	fut := n.raft.Apply(data, n.ccfg.ApplyTimeout)
	if err := fut.Error(); err != nil {
		return err
	}
	if r, ok := fut.Response().(*applyResult); ok && r.err != nil {
		return r.err
	}
	return nil
}

// Put stores m through the group's log (broker.Writer).
func (n *Node) Put(ctx context.Context, m *engine.Message) (engine.PutResult, error) {
	return n.propose(ctx, kindPut, []*engine.Message{m})
}

// PutBatch stores msgs through the group's log (broker.Writer).
func (n *Node) PutBatch(ctx context.Context, msgs []*engine.Message) (engine.PutResult, error) {
	return n.propose(ctx, kindBatch, msgs)
}

// Writable reports whether this node leads and accepts writes.
func (n *Node) Writable() bool { return n.writable.Load() }

// putTimestamp sets the STORETIMESTAMP of an encoded put entry.
func putTimestamp(data []byte, ts int64) {
	for i := range 8 {
		data[1+i] = byte(uint64(ts) >> (56 - 8*i))
	}
}

func raftError(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrLeadershipTransferInProgress), errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w (%v)", ErrNotLeader, err)
	}
	return fmt.Errorf("%w: replicate: %w", engine.ErrReadOnly, err)
}

// replicateState proposes the leader's consumer offsets, delay offsets
// and topics every StateInterval when they changed.
func (n *Node) replicateState() {
	defer n.wg.Done()
	t := time.NewTicker(n.ccfg.StateInterval)
	defer t.Stop()
	var last []byte
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		if !n.writable.Load() {
			last = nil
			continue
		}
		n.stateMu.Lock()
		data, err := n.stateEntry()
		if err != nil || string(data) == string(last) {
			n.stateMu.Unlock()
			continue
		}
		fut := n.raft.Apply(data, n.ccfg.ApplyTimeout)
		n.stateMu.Unlock()
		if err := fut.Error(); err != nil {
			n.log.Warn("replicate offsets and topics", "err", err)
			continue
		}
		last = data
	}
}

// stateEntry encodes the node's tables as a state entry, stamped with
// the term in which it became writable.
func (n *Node) stateEntry() ([]byte, error) {
	st := n.fsm.state()
	st.From, st.Term = n.ccfg.NodeID, n.leadTerm.Load()
	return encodeJSON(kindState, st)
}

// Broker returns the node's broker.
func (n *Node) Broker() *broker.Broker { return n.b }

// BrokerID returns the node's RocketMQ broker id: 0 while it leads.
func (n *Node) BrokerID() int64 { return n.brokerID.Load() }

// LeaderID returns the id of the group's leader as this node knows it
// ("" when there is none).
func (n *Node) LeaderID() string {
	_, id := n.raft.LeaderWithID()
	return string(id)
}

// Err returns why this replica stopped applying the group's log (nil
// while it is healthy).
func (n *Node) Err() error { return n.fsm.Err() }

// AppliedOffset returns the CommitLog offset up to which this replica
// has applied the group's log.
func (n *Node) AppliedOffset() int64 {
	n.fsm.mu.Lock()
	defer n.fsm.mu.Unlock()
	return n.fsm.cursor
}

// AddVoter adds a node to the group; only the leader can. A new node
// starts empty with Cluster.Join set and is caught up by a snapshot.
func (n *Node) AddVoter(id, addr string) error {
	return n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, n.ccfg.ApplyTimeout).Error()
}

// Snapshot takes a snapshot now and compacts the log.
func (n *Node) Snapshot() error { return n.raft.Snapshot().Error() }

// Raft returns the node's Raft instance (stats, membership).
func (n *Node) Raft() *raft.Raft { return n.raft }

// Close stops the replica and its TCPTransport, then the broker (which
// persists offsets and flushes the store). It is idempotent.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		n.writable.Store(false)
		close(n.stop)
		n.wg.Wait()
		err := n.raft.Shutdown().Error()
		close(n.down)
		if t, ok := n.ccfg.Transport.(*TCPTransport); ok {
			t.CloseStreams() // pooled connections: their readers on the peers end
			err = errors.Join(err, t.Close())
		}
		n.closeErr = errors.Join(err, n.b.Close(), n.closeLog())
	})
	return n.closeErr
}

// Directories of the Raft log stores, under DIR/raft.
const (
	walDir     = "wal"
	raftlogDir = "log"
	recordsDir = "records"
)

// logStoreDirs are the directories of the Raft log stores, under DIR/raft.
var logStoreDirs = map[string]string{LogStoreWAL: walDir, LogStoreRaftLog: raftlogDir, LogStoreRecords: recordsDir}

// checkLogStore refuses a directory whose log is in another store than
// Config.LogStore names: switching stores would start the node with an
// empty log and a forgotten term and vote, and a store of records entries
// holds uncommitted records that only it keeps invisible. It runs before
// the store is opened.
func (n *Node) checkLogStore() error {
	raftDir := filepath.Join(n.cfg.Dir, "raft")
	hasWAL, err := nonEmptyDir(filepath.Join(raftDir, walDir))
	if err != nil {
		return err
	}
	fsys, err := n.storeFS()
	if err != nil {
		return err
	}
	has := map[string]bool{LogStoreWAL: hasWAL}
	for _, ls := range []string{LogStoreRaftLog, LogStoreRecords} {
		names, err := fsys.List(path.Join("raft", logStoreDirs[ls]))
		if err != nil && !errors.Is(err, backend.ErrNotExist) {
			return err
		}
		has[ls] = len(names) > 0
	}
	for _, ls := range []string{LogStoreWAL, LogStoreRaftLog, LogStoreRecords} {
		if ls != n.ccfg.LogStore && has[ls] {
			return fmt.Errorf("%w: raft: logStore %s, but %s holds a %s log (logStore %s)", ErrConfig, n.ccfg.LogStore,
				filepath.Join(raftDir, logStoreDirs[ls]), ls, ls)
		}
	}
	return nil
}

// openLog opens the Raft log store that Config.LogStore names.
func (n *Node) openLog(raftDir string) error {
	walPath := filepath.Join(raftDir, walDir)
	fsys, err := n.storeFS()
	if err != nil {
		return err
	}
	if n.ccfg.LogStore == LogStoreRaftLog || n.ccfg.LogStore == LogStoreRecords {
		rlogPath := path.Join("raft", logStoreDirs[n.ccfg.LogStore])
		// The term and vote are on the directory itself, whatever fsys
		// is: Raft panics when it cannot save them, so the crash tests'
		// frozen file system must not hold them (a real power cut
		// stops the process anyway); the frames are on fsys.
		dirFS, err := mmap.New(n.cfg.Dir)
		if err != nil {
			return err
		}
		if n.rstable, err = raftlog.OpenStable(dirFS, rlogPath); err != nil {
			return fmt.Errorf("cluster: open the raft log's stable store: %w", err)
		}
		opts := raftlog.Options{FS: fsys, Dir: rlogPath, SegmentSize: int64(n.ccfg.LogSegmentSize)}
		if n.records() {
			opts.Records = logrecords.New(n.fsm.store)
		}
		if n.rlog, err = raftlog.Open(opts); err != nil {
			return fmt.Errorf("cluster: open the raft log: %w", err)
		}
		if n.records() {
			n.fsm.dropLogTail = n.rlog.DeleteRecordsFrom
		}
		n.logs, n.stable = n.rlog, n.rstable
		return nil
	}
	if err := os.MkdirAll(walPath, 0o755); err != nil {
		return err
	}
	// The WAL does not close a meta store it opened itself; this one is
	// closed by closeLog.
	n.meta = &metadb.BoltMetaDB{}
	n.walStats = newLogCollector()
	if n.wal, err = wal.Open(walPath, wal.WithMetaStore(n.meta),
		wal.WithSegmentSize(n.ccfg.LogSegmentSize), wal.WithMetricsCollector(n.walStats)); err != nil {
		return errors.Join(fmt.Errorf("cluster: open the raft log: %w", err), n.meta.Close())
	}
	n.logs, n.stable = n.wal, n.wal
	return nil
}

// nonEmptyDir reports whether dir exists with something in it.
func nonEmptyDir(dir string) (bool, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return len(ents) > 0, err
}

// closeLog closes the Raft log store.
func (n *Node) closeLog() error {
	if n.rlog != nil {
		return n.rlog.Close()
	}
	if n.wal == nil {
		return nil
	}
	return errors.Join(n.wal.Close(), n.meta.Close())
}

// slogWriter passes Raft's log lines to slog.
type slogWriter struct{ l *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	w.l.Warn(strings.TrimSpace(string(p)))
	return len(p), nil
}

var _ io.Writer = slogWriter{}

// raftLogLevel is Warn, or ROCKETSTORE_RAFT_LOG (e.g. "info", "debug").
func raftLogLevel() hclog.Level {
	if v := os.Getenv("ROCKETSTORE_RAFT_LOG"); v != "" {
		return hclog.LevelFromString(v)
	}
	return hclog.Warn
}
