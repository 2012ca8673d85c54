package proptest

import (
	"fmt"

	"github.com/rocketstore/rocketstore/record"
)

// msg is one message the test wrote, as the model knows it.
type msg struct {
	topic string
	qid   int32
	body  []byte
	tags  string
	// off and size place the record in the CommitLog; qoff in its queue.
	off  int64
	size int64
	qoff int64
	ts   int64
	// durable is set once the engine acknowledged the message as
	// flushed: a SyncFlush put returned nil, or a full FlushCommitLog
	// succeeded after it was written.
	durable bool
}

func (m *msg) String() string {
	return fmt.Sprintf("%s/%d#%d@%d(%dB tags=%q durable=%v)", m.topic, m.qid, m.qoff, m.off, m.size, m.tags, m.durable)
}

func (m *msg) props() map[string]string {
	// KEYS has a fixed width, so the record overhead does not depend on the
	// body length.
	p := map[string]string{"KEYS": fmt.Sprintf("k%04d", len(m.body)%10000)}
	if m.tags != "" {
		p["TAGS"] = m.tags
	}
	return p
}

// recordSize is the encoded size of m (IPv4 hosts, no sysflag).
func recordSize(topic string, body []byte, props map[string]string) int64 {
	return int64(record.Length(0, len(body), len(topic), len(record.AppendProperties(nil, props))))
}

// tagsCode is what the ConsumeQueue unit of m must hold.
func (m *msg) tagsCode() int64 {
	if m.tags == "" {
		return 0
	}
	return int64(record.JavaStringHashCode(m.tags))
}

type queueKey struct {
	topic string
	qid   int32
}

// model is the oracle: every message written, in CommitLog order, and the
// messages whose put failed (maybe stored, maybe not: they may only show
// up at the end of the log, in order).
type model struct {
	log    []*msg
	maybes []*msg
	// failed is set after an engine call failed: the store must refuse
	// puts from then on.
	failed bool
	// deletable is the CommitLog offset below which retention may have
	// deleted the messages.
	deletable int64
	// ghosts lists, per queue, the queue offsets that recovery filled
	// with units no consumer can read (see machine.adoptGhosts).
	ghosts map[queueKey][]int64
}

// firstKept returns the index in queue q (all its messages ever written)
// of the first message at or after CommitLog offset min: the queue's
// minimum offset once retention deleted the files below min.
func firstKept(q []*msg, min int64) int64 {
	for i, mm := range q {
		if mm != nil && mm.off >= min {
			return int64(i)
		}
	}
	return int64(len(q))
}

// queue returns the messages of one queue in queue order, with nil at
// the queue offsets of ghosts.
func (md *model) queue(k queueKey) []*msg {
	var out []*msg
	ghosts := md.ghosts[k]
	for _, m := range md.log {
		if m.topic == k.topic && m.qid == k.qid {
			for len(ghosts) > 0 && ghosts[0] == int64(len(out)) {
				out, ghosts = append(out, nil), ghosts[1:]
			}
			out = append(out, m)
		}
	}
	for range ghosts {
		out = append(out, nil)
	}
	return out
}

// nextQoff is the queue offset the next put to k must get.
func (md *model) nextQoff(k queueKey) int64 { return int64(len(md.queue(k))) }

// end is the CommitLog offset after the last known message.
func (md *model) end() int64 {
	if len(md.log) == 0 {
		return 0
	}
	last := md.log[len(md.log)-1]
	return last.off + last.size
}

// markAllDurable records a successful full CommitLog flush.
func (md *model) markAllDurable() {
	for _, m := range md.log {
		m.durable = true
	}
}

func (md *model) queues() map[queueKey]bool {
	out := make(map[queueKey]bool)
	for _, m := range md.log {
		out[queueKey{m.topic, m.qid}] = true
	}
	for k := range md.ghosts {
		out[k] = true
	}
	return out
}
