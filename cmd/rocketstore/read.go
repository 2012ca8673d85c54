package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// readOptions are the flags of `rocketstore read`.
type readOptions struct {
	dir    string
	topic  string
	queue  int32
	offset int64
	max    int
	json   bool
}

func newReadCmd() *cobra.Command {
	var o readOptions
	cmd := &cobra.Command{
		Use:   "read --dir DIR --topic T --queue Q [--offset N] [--max M] [--json]",
		Short: "Print the messages of a queue (like mqadmin queryMsgByOffset / printMsg)",
		Long: `read opens the store read-only (nothing on disk is changed, even when the
store needs recovery) and prints the messages of one queue from an offset:
queue offset, commitlog offset, offset message id, store time, tags, keys,
properties and body (as text when it is UTF-8, else base64).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return faultsAsErrors(func() error { return runRead(cmd.OutOrStdout(), cmd.ErrOrStderr(), o) })
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "", "store directory (required)")
	f.StringVar(&o.topic, "topic", "", "topic (required)")
	f.Int32Var(&o.queue, "queue", 0, "queue id (required: a topic has several)")
	f.Int64Var(&o.offset, "offset", -1, "first queue offset (default: the queue's minimum)")
	f.IntVar(&o.max, "max", 32, "maximum number of messages")
	f.BoolVar(&o.json, "json", false, "print one JSON object per message")
	cmd.MarkFlagRequired("dir")
	cmd.MarkFlagRequired("topic")
	cmd.MarkFlagRequired("queue")
	return cmd
}

// readMessage is one printed message.
type readMessage struct {
	QueueOffset     int64             `json:"queueOffset"`
	CommitLogOffset int64             `json:"commitLogOffset"`
	MsgID           string            `json:"msgId"`
	Topic           string            `json:"topic"`
	QueueID         int32             `json:"queueId"`
	StoreTimestamp  int64             `json:"storeTimestamp"`
	BornTimestamp   int64             `json:"bornTimestamp"`
	BornHost        string            `json:"bornHost"`
	StoreHost       string            `json:"storeHost"`
	ReconsumeTimes  int32             `json:"reconsumeTimes"`
	SysFlag         int32             `json:"sysFlag"`
	Tags            string            `json:"tags,omitempty"`
	Keys            string            `json:"keys,omitempty"`
	Properties      map[string]string `json:"properties"`
	Body            string            `json:"body"`
	BodyEncoding    string            `json:"bodyEncoding"`
}

func runRead(out, errOut io.Writer, o readOptions) (err error) {
	if o.max <= 0 {
		return fmt.Errorf("--max must be positive, got %d", o.max)
	}
	s, err := openReadOnly(o.dir, errOut)
	if err != nil {
		return err
	}
	defer closeInto(&err, s)
	if !hasQueue(s, o.topic, o.queue) {
		return failed(fmt.Errorf("the store has no queue %s/%d", o.topic, o.queue))
	}
	offset := o.offset
	if offset < 0 {
		offset = s.MinOffsetInQueue(o.topic, o.queue)
	}
	msgs, next, err := readQueue(s, o.topic, o.queue, offset, o.max)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		if err := printMessage(out, m, o.json); err != nil {
			return err
		}
	}
	if !o.json {
		fmt.Fprintf(out, "%d message(s); queue %s/%d holds offsets [%d, %d); next offset %d\n", len(msgs),
			o.topic, o.queue, s.MinOffsetInQueue(o.topic, o.queue), s.MaxOffsetInQueue(o.topic, o.queue), next)
	}
	return nil
}

// readQueue collects up to max messages from offset, following
// nextBeginOffset across ConsumeQueue files.
func readQueue(s *engine.Store, topic string, queue int32, offset int64, max int) ([]readMessage, int64, error) {
	var out []readMessage
	for len(out) < max {
		res, err := s.GetMessage(topic, queue, offset, max-len(out), nil)
		if err != nil {
			return nil, offset, err
		}
		status, next := res.Status, res.NextBeginOffset
		for _, v := range res.Messages {
			m, err := record.Decode(v.Record, v.CommitLogOffset, true)
			if err != nil {
				res.Release()
				return nil, offset, fmt.Errorf("queue offset %d at commitlog offset %d: %w", v.QueueOffset, v.CommitLogOffset, err)
			}
			out = append(out, toReadMessage(v.QueueOffset, m))
		}
		res.Release()
		switch status {
		case engine.Found, engine.NoMatchedMessage, engine.MessageWasRemoving, engine.OffsetFoundNull, engine.OffsetTooSmall:
			if next == offset {
				return out, next, nil
			}
			offset = next
		default:
			return out, next, nil
		}
	}
	return out, offset, nil
}

func toReadMessage(queueOffset int64, m *record.MessageExt) readMessage {
	r := readMessage{QueueOffset: queueOffset, CommitLogOffset: m.CommitLogOffset, MsgID: m.MsgID(),
		Topic: m.Topic, QueueID: m.QueueID, StoreTimestamp: m.StoreTimestamp, BornTimestamp: m.BornTimestamp,
		BornHost: m.BornHost.String(), StoreHost: m.StoreHost.String(), ReconsumeTimes: m.ReconsumeTimes,
		SysFlag: m.SysFlag, Tags: m.Tags(), Keys: m.Keys(), Properties: m.Properties}
	if utf8.Valid(m.Body) {
		r.Body, r.BodyEncoding = string(m.Body), "text"
	} else {
		r.Body, r.BodyEncoding = base64.StdEncoding.EncodeToString(m.Body), "base64"
	}
	return r
}

func printMessage(out io.Writer, m readMessage, asJSON bool) error {
	if asJSON {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	}
	ts := time.UnixMilli(m.StoreTimestamp).UTC().Format("2006-01-02 15:04:05.000")
	fmt.Fprintf(out, "queueOffset=%d commitLogOffset=%d msgId=%s storeTime=%s\n", m.QueueOffset, m.CommitLogOffset, m.MsgID, ts)
	fmt.Fprintf(out, "  topic=%s queueId=%d tags=%q keys=%q reconsumeTimes=%d bornHost=%s storeHost=%s\n",
		m.Topic, m.QueueID, m.Tags, m.Keys, m.ReconsumeTimes, m.BornHost, m.StoreHost)
	keys := make([]string, 0, len(m.Properties))
	for k := range m.Properties {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(out, "  property %s=%q\n", k, m.Properties[k])
	}
	_, err := fmt.Fprintf(out, "  body(%s)=%s\n", m.BodyEncoding, m.Body)
	return err
}

// hasQueue reports whether the store holds a ConsumeQueue for topic/queue.
func hasQueue(s *engine.Store, topic string, queue int32) bool {
	for _, id := range s.Topics()[topic] {
		if id == queue {
			return true
		}
	}
	return false
}
