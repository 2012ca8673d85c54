package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocketstore/rocketstore"
	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/internal/units"
	"github.com/rocketstore/rocketstore/verify"
)

// What the demo writes: every topic gets demoQueues queues, and messages
// cycle through the tags, so that the filter keeps two thirds of them.
var (
	demoTopics = []string{"orders", "payments", "shipments"}
	demoTags   = []string{"TagA", "TagB", "TagC"}
)

const (
	demoQueues = 4
	demoFilter = "TagA || TagB"
	// demoBatchTopic is written with PutBatch, the others with Put.
	demoBatchTopic = "shipments"
	demoBatchSize  = 5
)

// demoOptions are the flags of `rocketstore demo`.
type demoOptions struct {
	dir      string
	perQueue int
	fileSize int64
	cqUnits  int64
}

func newDemoCmd() *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo [--dir DIR]",
		Short: "Write, consume, close and reopen a store: a tour of rocketstore",
		Long: `demo opens a store in DIR (memory-mapped files; a new temporary directory
when --dir is omitted), writes messages with tags, keys and properties to
several topics and queues, consumes them back with the tag filter
"TagA || TagB", closes the store, reopens it and checks that every message is
still there byte for byte, then checks the files with verify. DIR is left in
place for inspection.

The file sizes default to tiny values so that the demo shows CommitLog and
ConsumeQueue files rolling over; pass --commitlog-file-size 1073741824
--cq-units 300000 for RocketMQ's sizes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "", "store directory (default: a new temporary directory)")
	f.IntVar(&o.perQueue, "messages", 40, "messages per queue")
	f.Int64Var(&o.fileSize, "commitlog-file-size", 64<<10, "CommitLog file size in bytes")
	f.Int64Var(&o.cqUnits, "cq-units", 32, "units per ConsumeQueue file")
	return cmd
}

// queueRef names one queue.
type queueRef struct {
	topic string
	qid   int32
}

func (q queueRef) String() string { return fmt.Sprintf("%s/%d", q.topic, q.qid) }

// sentMsg is what the demo wrote, to compare with what it reads.
type sentMsg struct {
	tags, keys string
	body       []byte
	// offset is the CommitLog offset (from the put, or, for batches, from
	// the first read).
	offset int64
}

// demo is one run of the demo.
type demo struct {
	out      io.Writer
	o        demoOptions
	cfg      rocketstore.Config
	queues   []queueRef
	base     map[queueRef]int64 // queue offsets before the demo wrote
	sent     map[queueRef]map[int64]*sentMsg
	problems []string
}

func runDemo(ctx context.Context, out, errOut io.Writer, o demoOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if o.perQueue <= 0 {
		return fmt.Errorf("--messages must be positive, got %d", o.perQueue)
	}
	start := time.Now()
	if o.dir == "" {
		dir, err := os.MkdirTemp("", "rocketstore-demo-")
		if err != nil {
			return err
		}
		o.dir = dir
	}
	d := &demo{out: out, o: o, base: map[queueRef]int64{}, sent: map[queueRef]map[int64]*sentMsg{},
		cfg: rocketstore.Config{CommitLogFileSize: o.fileSize, ConsumeQueueUnits: o.cqUnits,
			Logger: slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelWarn}))}}
	for _, t := range demoTopics {
		for q := range int32(demoQueues) {
			d.queues = append(d.queues, queueRef{t, q})
		}
	}
	fmt.Fprintf(out, "store directory: %s\n", o.dir)
	if err := d.writeAndConsume(ctx); err != nil {
		return err
	}
	if err := d.reopenAndCompare(); err != nil {
		return err
	}
	if err := d.verify(); err != nil {
		return err
	}
	fmt.Fprintf(out, "\ndone in %s. The store is left in %s; look at it with\n  ls -R %s\n  go run ./cmd/rocketstore read --dir %s --topic %s --queue 0\n  go run ./cmd/rocketstore verify --dir %s\n",
		time.Since(start).Round(time.Millisecond), o.dir, o.dir, o.dir, demoTopics[0], o.dir)
	if len(d.problems) > 0 {
		for _, p := range d.problems {
			fmt.Fprintln(out, "MISMATCH:", p)
		}
		return failed(fmt.Errorf("demo found %d mismatches", len(d.problems)))
	}
	return nil
}

// problem records a mismatch; the demo goes on so that all are shown.
func (d *demo) problem(format string, args ...any) {
	d.problems = append(d.problems, fmt.Sprintf(format, args...))
}

// writeAndConsume is the first half: write, consume with the filter, close.
func (d *demo) writeAndConsume(ctx context.Context) (err error) {
	s, err := rocketstore.Open(d.o.dir, d.cfg)
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer closeInto(&err, s)
	cfg := s.Config()
	fmt.Fprintf(d.out, "opened: commitlog files of %s, consume queue files of %d units, %s\n",
		units.Size(cfg.CommitLogFileSize), cfg.ConsumeQueueUnits, cfg.FlushDiskType)
	end, err := d.write(ctx, s)
	if err != nil {
		return err
	}
	// Puts are visible to GetMessage once the dispatcher has built their
	// ConsumeQueue units.
	if err := s.WaitDispatched(ctx, end); err != nil {
		return err
	}
	if err := d.consume(s, true); err != nil {
		return err
	}
	if err := s.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	fmt.Fprintln(d.out, "closed the store")
	return nil
}

// write stores perQueue messages in every queue and returns the CommitLog
// offset after the last one.
func (d *demo) write(ctx context.Context, s *rocketstore.Store) (int64, error) {
	var end int64
	n := 0
	for _, q := range d.queues {
		d.base[q] = s.MaxOffsetInQueue(q.topic, q.qid)
		d.sent[q] = map[int64]*sentMsg{}
		var batch []*rocketstore.Message
		for i := range d.o.perQueue {
			m := demoMessage(q, i)
			if q.topic != demoBatchTopic {
				res, err := s.Put(ctx, m)
				if err != nil {
					return 0, fmt.Errorf("put to %s: %w", q, err)
				}
				d.record(q, res.QueueOffset, m, res.WroteOffset)
				end, n = max(end, res.WroteOffset+int64(res.WroteBytes)), n+1
				continue
			}
			if batch = append(batch, m); len(batch) == demoBatchSize || i == d.o.perQueue-1 {
				res, err := s.PutBatch(ctx, batch)
				if err != nil {
					return 0, fmt.Errorf("put batch to %s: %w", q, err)
				}
				for j, bm := range batch {
					d.record(q, res.QueueOffset+int64(j), bm, -1)
				}
				end, n, batch = max(end, res.WroteOffset+int64(res.WroteBytes)), n+len(batch), nil
			}
		}
	}
	fmt.Fprintf(d.out, "wrote %d messages to %d topics x %d queues (%s in batches of %d); commitlog ends at %d\n",
		n, len(demoTopics), demoQueues, demoBatchTopic, demoBatchSize, end)
	return end, nil
}

func demoMessage(q queueRef, i int) *rocketstore.Message {
	return &rocketstore.Message{
		Topic:   q.topic,
		QueueID: q.qid,
		Body:    fmt.Appendf(nil, "%s event #%d on queue %d: hello from rocketstore", q.topic, i, q.qid),
		Properties: map[string]string{
			"TAGS":   demoTags[i%len(demoTags)],
			"KEYS":   fmt.Sprintf("%s-%d-%d customer-%d", q.topic, q.qid, i, i%7),
			"origin": "rocketstore-demo",
		},
	}
}

func (d *demo) record(q queueRef, qo int64, m *rocketstore.Message, offset int64) {
	d.sent[q][qo] = &sentMsg{tags: m.Properties["TAGS"], keys: m.Properties["KEYS"], body: m.Body, offset: offset}
}

// consume reads every queue back with the tag filter and prints what it
// found; with samples it also prints the first message of each topic.
func (d *demo) consume(s *rocketstore.Store, samples bool) error {
	f, err := rocketstore.NewTagFilter(demoFilter)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "\nconsumed with GetMessage(filter %q):\n", demoFilter)
	tw := tabwriter.NewWriter(d.out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "queue\tstored\tmatched\texpected\t")
	var shown []string
	for _, q := range d.queues {
		got, err := d.readQueue(s, q, f, func(m *rocketstore.MessageExt, qo int64) {
			if samples && (len(shown) == 0 || !strings.HasPrefix(shown[len(shown)-1], q.topic+"/")) {
				shown = append(shown, fmt.Sprintf("%s queueOffset=%d commitLogOffset=%d msgId=%s\n    tags=%s keys=%q body=%q",
					q, qo, m.CommitLogOffset, m.MsgID(), m.Tags(), m.Keys(), m.Body))
			}
		})
		if err != nil {
			return err
		}
		want := 0
		for _, m := range d.sent[q] {
			if m.tags != demoTags[2] {
				want++
			}
		}
		if got != want {
			d.problem("%s: filter matched %d messages, want %d", q, got, want)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t\n", q, s.MaxOffsetInQueue(q.topic, q.qid)-d.base[q], got, want)
	}
	tw.Flush()
	if samples {
		fmt.Fprintln(d.out, "\nthe first matched message of each topic, decoded:")
		for _, line := range shown {
			fmt.Fprintln(d.out, "  "+line)
		}
	}
	return nil
}

// readQueue reads q from the demo's first offset to the end through
// GetMessage, checks each message against what was sent and returns how
// many it read.
func (d *demo) readQueue(s *rocketstore.Store, q queueRef, f *rocketstore.TagFilter, each func(*rocketstore.MessageExt, int64)) (int, error) {
	n := 0
	for off := d.base[q]; ; {
		res, err := s.GetMessage(q.topic, q.qid, off, 32, rocketstore.WithFilter(f))
		if err != nil {
			return n, fmt.Errorf("get %s at %d: %w", q, off, err)
		}
		for _, v := range res.Messages {
			m, err := rocketstore.DecodeMessage(v.Record)
			if err != nil {
				d.problem("%s queue offset %d: %v", q, v.QueueOffset, err)
				continue
			}
			d.check(q, v.QueueOffset, m, f)
			each(m, v.QueueOffset)
			n++
		}
		status, next := res.Status, res.NextBeginOffset
		res.Release()
		switch status {
		case rocketstore.Found, rocketstore.NoMatchedMessage, rocketstore.OffsetFoundNull:
		case rocketstore.OffsetOverflowOne:
			return n, nil
		default:
			return n, fmt.Errorf("get %s at %d: status %s", q, off, status)
		}
		if next <= off {
			return n, fmt.Errorf("get %s at %d: no progress (next %d)", q, off, next)
		}
		off = next
	}
}

// check compares a message read back with the one sent.
func (d *demo) check(q queueRef, qo int64, m *rocketstore.MessageExt, f *rocketstore.TagFilter) {
	want := d.sent[q][qo]
	switch {
	case want == nil:
		d.problem("%s queue offset %d: read a message that was never sent", q, qo)
	case m.Topic != q.topic || m.QueueID != q.qid || m.QueueOffset != qo:
		d.problem("%s queue offset %d: read %s/%d offset %d", q, qo, m.Topic, m.QueueID, m.QueueOffset)
	case !bytes.Equal(m.Body, want.body) || m.Tags() != want.tags || m.Keys() != want.keys:
		d.problem("%s queue offset %d: body %q tags %q keys %q, want %q %q %q", q, qo, m.Body, m.Tags(), m.Keys(), want.body, want.tags, want.keys)
	case want.offset >= 0 && m.CommitLogOffset != want.offset:
		d.problem("%s queue offset %d: at commitlog offset %d, was put at %d", q, qo, m.CommitLogOffset, want.offset)
	case f != nil && !strings.Contains(demoFilter, m.Tags()):
		d.problem("%s queue offset %d: filter %q let tag %q through", q, qo, demoFilter, m.Tags())
	}
	if want != nil && want.offset < 0 {
		want.offset = m.CommitLogOffset
	}
}

// reopenAndCompare reopens the closed store and checks that every message
// is there, unchanged.
func (d *demo) reopenAndCompare() (err error) {
	s, err := rocketstore.Open(d.o.dir, d.cfg)
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	defer closeInto(&err, s)
	rec := s.Recovery()
	kind := "normal (clean shutdown)"
	if rec.Abnormal {
		kind = "abnormal"
		d.problem("reopen after a clean close ran abnormal recovery")
	}
	fmt.Fprintf(d.out, "\nreopened: %s recovery from commitlog offset %d, commitlog ends at %d, %d records re-dispatched\n",
		kind, rec.ScanFrom, rec.CommitLogEnd, rec.Redispatched)
	total := 0
	for _, q := range d.queues {
		stored := s.MaxOffsetInQueue(q.topic, q.qid) - d.base[q]
		if stored != int64(len(d.sent[q])) {
			d.problem("%s: %d messages after reopen, want %d", q, stored, len(d.sent[q]))
		}
		n, err := d.readQueue(s, q, nil, func(*rocketstore.MessageExt, int64) {})
		if err != nil {
			return err
		}
		if n != len(d.sent[q]) {
			d.problem("%s: read %d messages after reopen, want %d", q, n, len(d.sent[q]))
		}
		total += n
	}
	fmt.Fprintf(d.out, "after reopen: read all %d messages back without a filter; bodies, tags, keys and offsets compared byte for byte\n", total)
	if err := d.lookupByMsgID(s); err != nil {
		return err
	}
	return s.Close()
}

// lookupByMsgID looks the first message up by its offset message id.
func (d *demo) lookupByMsgID(s *rocketstore.Store) error {
	q := d.queues[0]
	want := d.sent[q][d.base[q]]
	res, err := s.GetMessage(q.topic, q.qid, d.base[q], 1)
	if err != nil {
		return err
	}
	defer res.Release()
	if len(res.Messages) == 0 {
		d.problem("%s: first message not found after reopen", q)
		return nil
	}
	first, err := rocketstore.DecodeMessage(res.Messages[0].Record)
	if err != nil {
		return err
	}
	m, err := s.LookMessageByMsgID(first.MsgID())
	if err != nil {
		d.problem("look up %s: %v", first.MsgID(), err)
		return nil
	}
	if !bytes.Equal(m.Body, want.body) {
		d.problem("look up %s: body %q, want %q", first.MsgID(), m.Body, want.body)
	}
	fmt.Fprintf(d.out, "LookMessageByMsgID(%s) -> %q\n", first.MsgID(), m.Body)
	return nil
}

// verify checks the closed store's files with the offline checker.
func (d *demo) verify() error {
	fs, err := mmap.NewReadOnly(d.o.dir)
	if err != nil {
		return err
	}
	rep, err := verify.Run(fs, verify.Options{})
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	fmt.Fprintf(d.out, "\nverify (offline file check):\n%s", indent(rep.Summary()))
	for _, v := range rep.Violations {
		d.problem("verify: %s", v)
	}
	return nil
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ") + "\n"
}
