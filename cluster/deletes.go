package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/config"
)

// Replicated deletions.
//
// Consumer offsets, subscription groups and topics reach the replicas as
// the leader's tables in a state entry, which every replica merges into
// its own: it carries what exists, so it cannot carry what was deleted.
// A deletion (DELETE_TOPIC_IN_BROKER, DELETE_SUBSCRIPTIONGROUP with or
// without its offsets) is therefore an entry of its own, applied on every
// replica — the leader included — at its place in the log: a deleted topic
// or group stays deleted on every replica and after a leader change, and
// a topic deleted and created again restarts at queue offset 0 on every
// replica at the same CommitLog offset (its ConsumeQueues stay
// byte-identical).
//
// Three orderings keep a deletion from being undone (a state entry
// applied after a deletion whose topic or group it still carries would
// bring it back on the followers, and the replicas would disagree —
// TestStateEntryOrderedWithDeletion shows it with the first one off):
//   - the leader captures and enqueues a state entry under stateMu, and a
//     deletion holds stateMu from its proposal until it is applied here,
//     so a state entry captured before the deletion precedes it in the
//     log, and one captured after it no longer carries what it deleted;
//   - a new leader replicates its tables only once it has applied every
//     entry of earlier terms (the barrier in Node.lead), deletions
//     included;
//   - a snapshot carries the leader's deleted-topic record (engine's
//     DeletedTopics): a replica caught up from the leader's CommitLog
//     deletes each topic when its re-put reaches the offset the leader
//     deleted it at, and a snapshot's tables replace (not merge into) the
//     receiver's offsets and groups.

// kindDelete is a deletion entry (JSON deleteEntry).
const kindDelete byte = 5

// deleteEntry deletes a topic, or a subscription group (and, with
// RemoveOffset, its consumer offsets).
type deleteEntry struct {
	Topic        string `json:"topic,omitempty"`
	Group        string `json:"group,omitempty"`
	RemoveOffset bool   `json:"removeOffset,omitempty"`
}

var _ broker.Deleter = (*Node)(nil)

// DeleteTopic deletes a topic on every replica (broker.Deleter); only the
// leader can.
func (n *Node) DeleteTopic(ctx context.Context, topic string) error {
	if topic == "" {
		return errors.New("cluster: delete topic: no topic name")
	}
	return n.proposeDelete(ctx, deleteEntry{Topic: topic})
}

// DeleteSubscriptionGroup deletes a subscription group, and with
// removeOffset its consumer offsets, on every replica (broker.Deleter);
// only the leader can.
func (n *Node) DeleteSubscriptionGroup(ctx context.Context, group string, removeOffset bool) error {
	if group == "" {
		return errors.New("cluster: delete subscription group: no group name")
	}
	return n.proposeDelete(ctx, deleteEntry{Group: group, RemoveOffset: removeOffset})
}

func (n *Node) proposeDelete(ctx context.Context, d deleteEntry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if !n.writable.Load() {
		return ErrNotLeader
	}
	data, err := encodeJSON(kindDelete, d)
	if err != nil {
		return err
	}
	if d.Topic != "" && n.records() && !n.cfg.noRecordsDeleteOrder {
		// Records carry the queue offsets they were built with: no round
		// may be built before the deletion is applied and committed
		// after it, or the deleted topic's records would be dispatched
		// with the offsets it had. The rounds enqueued before are in
		// the log before it.
		n.proposeMu.Lock()
		defer n.proposeMu.Unlock()
	}
	if !n.cfg.noDeleteOrder {
		n.stateMu.Lock()
		defer n.stateMu.Unlock()
	}
	fut := n.raft.Apply(data, n.ccfg.ApplyTimeout)
	if err := fut.Error(); err != nil {
		return raftError(err)
	}
	if r, ok := fut.Response().(*applyResult); ok && r.err != nil {
		return r.err
	}
	n.log.Info("deletion replicated", "topic", d.Topic, "group", d.Group, "removeOffset", d.RemoveOffset)
	return nil
}

// applyDelete applies a deletion entry. In a replay after a restart (the
// CommitLog already holds records past the cursor) the store's own
// deletion is not done again: recovery already honoured it (the store's
// deleted-topic record), and the topic may hold records of a later
// incarnation.
func (f *fsm) applyDelete(l *raft.Log) *applyResult {
	var d deleteEntry
	if err := json.Unmarshal(l.Data[1:], &d); err != nil {
		return &applyResult{err: fmt.Errorf("%w: delete entry %d: %v", ErrBadEntry, l.Index, err)}
	}
	f.mu.Lock()
	replay := f.cursor < f.store.CommitLog().MaxOffset()
	if mark, ok := f.store.DeletedTopics()[d.Topic]; ok && f.records && d.Topic != "" {
		// A store of replicated records holds nothing past the commit
		// point, which the replay moves: the deletion was applied before
		// when the store recorded it at (or past) this point.
		replay = mark >= f.cursor
	}
	f.mu.Unlock()
	var err error
	switch {
	case d.Topic != "" && replay:
		if len(f.store.Topics()[d.Topic]) == 0 {
			_ = f.b.Topics().Delete(d.Topic)
		}
	case d.Topic != "":
		if err = f.b.DeleteTopicLocal(d.Topic); err != nil {
			// Queues half deleted on one replica only: it no longer
			// matches the group.
			return &applyResult{err: f.fail(fmt.Errorf("%w: entry %d: %w", ErrDiverged, l.Index, err))}
		}
	case d.Group != "":
		err = f.b.DeleteSubscriptionGroupLocal(d.Group, d.RemoveOffset)
	}
	if err != nil {
		f.log.Warn("replicated deletion", "topic", d.Topic, "group", d.Group, "err", err)
	}
	return &applyResult{err: err}
}

// deleteTopicsUpTo deletes, during a snapshot install, the topics the
// leader deleted at a CommitLog offset in [from, pos] that this replica
// has not deleted there yet: the re-put of the records after pos then
// gets the leader's queue offsets. The caller holds f.mu.
func (f *fsm) deleteTopicsUpTo(marks map[string]int64, from, pos int64) error {
	if len(marks) == 0 || f.noInstallDeletes {
		return nil
	}
	mine := f.store.DeletedTopics()
	for topic, mark := range marks {
		if mark < from || mark > pos || mine[topic] >= mark {
			continue
		}
		if err := f.b.DeleteTopicLocal(topic); err != nil {
			return fmt.Errorf("delete topic %s as the leader did at %d: %w", topic, mark, err)
		}
		f.log.Info("topic deleted while catching up from a snapshot", "topic", topic, "leaderOffset", mark, "offset", pos)
	}
	return nil
}

// restoreTables makes the receiver's tables the snapshot's: consumer
// offsets, subscription groups and topics missing from the snapshot are
// removed (their queues went at their deletion offsets, above), and the
// rest is merged as a state entry is.
func (f *fsm) restoreTables(s *stateEntry) {
	if s.ConsumerOffsets != nil {
		// Offsets are removed a whole group at a time
		// (DELETE_SUBSCRIPTIONGROUP with removeOffset).
		have := map[string]bool{}
		for k := range s.ConsumerOffsets {
			have[offsetGroup(k)] = true
		}
		for k := range f.b.Offsets().Table() {
			if g := offsetGroup(k); !have[g] {
				f.b.Offsets().RemoveGroup(g)
				have[g] = true
			}
		}
	}
	if s.Groups != nil {
		all, _ := f.b.Groups().All()
		for name := range all {
			if _, ok := s.Groups[name]; !ok {
				_ = f.b.Groups().Delete(name)
			}
		}
	}
	if len(s.Topics) > 0 {
		// A topic deleted while this replica was behind: in the
		// leader's deleted-topic record when it had messages, simply
		// absent when it had none. (A retry topic a consumer's
		// heartbeat created here only is created again by the next.)
		all, _ := f.b.Topics().All()
		for topic := range all {
			if _, ok := s.Topics[topic]; !ok {
				_ = f.b.Topics().Delete(topic)
			}
		}
	}
	from := s.From
	s.From = ""             // a snapshot's tables are applied even on the node that took it
	f.applyState(s, s.Term) // and whatever term they were taken in
	s.From = from
}

// applyGroups merges the leader's subscription groups (part of
// applyState).
func (f *fsm) applyGroups(s *stateEntry) {
	groups := f.b.Groups()
	cur, _ := groups.All()
	for name, g := range s.Groups {
		if c, ok := cur[name]; ok && c == g {
			continue
		}
		if err := groups.Update(g); err != nil {
			f.log.Warn("replicated subscription group not taken", "group", name, "err", err)
		}
	}
}

// groupsState is the subscription group table a state entry carries.
func (f *fsm) groupsState() map[string]config.SubscriptionGroupConfig {
	all, _ := f.b.Groups().All()
	return maps.Clone(all)
}

// offsetGroup is the group of a "topic@group" offset key.
func offsetGroup(k string) string { return k[strings.LastIndex(k, "@")+1:] }
