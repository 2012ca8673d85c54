package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/rocketstore/rocketstore/internal/engineops"

	"github.com/rocketstore/rocketstore/engine"
)

// Repair of the damage recovery found at open.
//
// When the store's recovery skips damaged CommitLog records (a flipped
// bit, a torn sector; RecoveryReport.Damaged), their records stay hidden
// (GetMessage skips them) and undispatched or covered by placeholder
// units. A replica's bytes are the group's, so the node fetches each
// damaged range from another replica over the repair protocol, checks
// it, and has the store rewrite it in place and put its records' units at
// their own queue offsets (engineops.Ops.RepairDamaged).
//
// Until that is done the state machine applies no message entry
// (holdForDamage): replaying an entry over a damaged record would find it
// unreadable and stop the replica, and a new message would take its
// queue offset from a ConsumeQueue that misses the skipped records, so
// it could get another replica's queue offset for a different message.
// Raft keeps the entries; the node catches up once repaired. While no
// replica can serve the bytes (all down, or the range damaged on each),
// the node keeps the range hidden, keeps serving everything else, retries
// every ElectionTimeout, and reports it (log, Store().DamagedRanges(),
// Health().DamagedRecords).

// holdForDamage makes the state machine wait for the repair of the
// damage recovery reported, and reports whether there is any.
func (n *Node) holdForDamage() bool {
	if len(n.b.Store().DamagedRanges()) == 0 {
		close(n.damageRepaired)
		return false
	}
	if n.cfg.applyOverDamage {
		return true
	}
	n.fsm.damageGate = func() error {
		select {
		case <-n.damageRepaired:
			return nil
		case <-n.stop:
			return fmt.Errorf("%w while holding the log for the repair of damaged CommitLog records", ErrClosed)
		}
	}
	return true
}

// repairRecoveredDamage repairs the damaged ranges from the replicas,
// retrying until it succeeds or the node closes.
func (n *Node) repairRecoveredDamage() {
	defer n.wg.Done()
	ctx, cancel := n.untilStop()
	defer cancel()
	st := n.b.Store()
	n.log.Warn("recovery found damaged CommitLog records; repairing them from a replica before applying the log",
		"ranges", len(st.DamagedRanges()))
	for attempt := 1; ; attempt++ {
		err := n.repairDamagedRanges(ctx)
		if err == nil {
			close(n.damageRepaired)
			return
		}
		if ctx.Err() != nil {
			return
		}
		lvl := n.log.Warn
		if attempt == 1 {
			lvl = n.log.Error
		}
		lvl("damaged CommitLog records not repaired yet: kept hidden, the log is held; retrying",
			"attempt", attempt, "ranges", len(st.DamagedRanges()), "err", err)
		select {
		case <-n.stop:
			return
		case <-time.After(n.ccfg.ElectionTimeout):
		}
	}
}

// repairDamagedRanges fetches every outstanding damaged range from a
// replica and has the store rewrite them together.
func (n *Node) repairDamagedRanges(ctx context.Context) error {
	st := n.b.Store()
	ranges := st.DamagedRanges()
	fixes := make(map[int64][]byte, len(ranges))
	for _, d := range ranges {
		b, err := n.fetchRange(ctx, d.Offset, d.End-d.Offset)
		if err != nil {
			return fmt.Errorf("%w: range [%d,%d) of %s (%v): %w", ErrNoRepair, d.Offset, d.End, d.File, d.Reason, err)
		}
		fixes[d.Offset] = b
	}
	if err := engineops.Of(st).RepairDamaged(fixes); err != nil {
		return err
	}
	n.repaired.Add(int64(len(ranges)))
	n.log.Warn("damaged CommitLog records rewritten from a replica; applying the log again", "ranges", len(ranges))
	return nil
}

// fetchRange returns CommitLog bytes [off, off+size) as a replica holds
// them, from the first replica whose copy no other reachable replica
// contradicts (a copy damaged in a way its records' checks miss, such as
// a header byte, differs from the others' CRC).
func (n *Node) fetchRange(ctx context.Context, off, size int64) ([]byte, error) {
	if size > maxRepairRead {
		return nil, fmt.Errorf("%d bytes, more than one repair request carries (%d)", size, maxRepairRead)
	}
	peers := n.otherPeers()
	var errs []error
	for i, p := range peers {
		b, err := n.ask(ctx, p, opBytes, off, size)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		crc := binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(b))
		agreed := true
		for j, q := range peers {
			if j == i {
				continue
			}
			if c, err := n.ask(ctx, q, opCRC, off, size); err == nil && string(c) != string(crc) {
				errs = append(errs, fmt.Errorf("replicas %s and %s disagree on it", p, q))
				agreed = false
				break
			}
		}
		if agreed {
			return b, nil
		}
	}
	if len(errs) == 0 {
		return nil, errors.New("no other replica configured")
	}
	return nil, errors.Join(errs...)
}

// otherPeers returns the configured Raft addresses of the other members.
// Not Raft's configuration: this runs while the state machine is held,
// which may hold Raft's main loop.
func (n *Node) otherPeers() []string {
	var out []string
	for _, p := range n.ccfg.Peers {
		if p.ID != n.ccfg.NodeID {
			out = append(out, p.Addr)
		}
	}
	return out
}

// DamagedRanges returns the damaged CommitLog ranges recovery reported at
// open that are not repaired yet (hidden from consumers).
func (n *Node) DamagedRanges() []engine.DamagedRange { return n.b.Store().DamagedRanges() }

// untilStop returns a context that is cancelled when the node closes (or
// by cancel), for the node's background work that dials other replicas.
func (n *Node) untilStop() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-n.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
