package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/record"
)

// printMessages prints messages as `read` does, or as one JSON array.
func printMessages(g *adminGlobals, out io.Writer, msgs []*record.MessageExt) error {
	rows := make([]readMessage, len(msgs))
	for i, m := range msgs {
		rows[i] = toReadMessage(m.QueueOffset, m)
	}
	if g.json {
		return g.output(out, rows, nil)
	}
	for _, r := range rows {
		if err := printMessage(out, r, false); err != nil {
			return err
		}
	}
	return nil
}

func newQueryMsgByIDCmd(g *adminGlobals) *cobra.Command {
	var id string
	cmd := &cobra.Command{
		Use:   "queryMsgById -i msgId",
		Short: "Print a message by its offset message id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, _, err := record.ParseOffsetMsgID(id); err != nil {
				return usageError("-i %q is not an offset message id (32 hex digits: broker IP, port, CommitLog offset)", id)
			}
			return g.run(cmd, func(ctx context.Context, c *admin.Client, out io.Writer) error {
				m, err := c.ViewMessageByID(ctx, id)
				if err != nil {
					return err
				}
				return printMessages(g, out, []*record.MessageExt{m})
			})
		},
	}
	cmd.Flags().StringVarP(&id, "msgId", "i", "", "message id (required)")
	cmd.MarkFlagRequired("msgId")
	return cmd
}

func newQueryMsgByKeyCmd(g *adminGlobals) *cobra.Command {
	var topic, key, begin, end string
	var maxNum int
	cmd := &cobra.Command{
		Use:   "queryMsgByKey -t topic -k key [-b begin] [-e end] [-c maxNum]",
		Short: "Print the messages of a topic with a key",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			from, to, err := parseTimeRange("-b", begin, "-e", end, 0, 1<<63-1)
			if err != nil {
				return err
			}
			if from > to {
				return usageError("-b is after -e")
			}
			if maxNum <= 0 || maxNum > 64 {
				return usageError("-c %d: between 1 and 64", maxNum)
			}
			return g.run(cmd, func(ctx context.Context, c *admin.Client, out io.Writer) error {
				brokers, err := topicBrokers(ctx, c, topic)
				if err != nil {
					return err
				}
				var msgs []*record.MessageExt
				for _, name := range slices.Sorted(maps.Keys(brokers)) {
					got, err := c.QueryMessage(ctx, brokers[name], topic, key, maxNum, from, to)
					if err != nil {
						return err
					}
					msgs = append(msgs, got...)
				}
				if len(msgs) == 0 && !g.json {
					return fmt.Errorf("no message of topic %s with key %s", topic, key)
				}
				return printMessages(g, out, msgs)
			})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic (required)")
	f.StringVarP(&key, "msgKey", "k", "", "key (required)")
	f.StringVarP(&begin, "beginTimestamp", "b", "", "stored at or after")
	f.StringVarP(&end, "endTimestamp", "e", "", "stored at or before")
	f.IntVarP(&maxNum, "maxNum", "c", 64, "at most this many messages")
	cmd.MarkFlagRequired("topic")
	cmd.MarkFlagRequired("msgKey")
	return cmd
}

// queueBroker resolves a broker name of topic (or its only broker when
// name is empty) to its address.
func queueBroker(ctx context.Context, c *admin.Client, topic, name string) (string, string, error) {
	brokers, err := topicBrokers(ctx, c, topic)
	if err != nil {
		return "", "", err
	}
	if name == "" {
		if len(brokers) != 1 {
			return "", "", usageError("topic %s is on %d brokers: give -b brokerName", topic, len(brokers))
		}
		for n, a := range brokers {
			return n, a, nil
		}
	}
	a, ok := brokers[name]
	if !ok {
		return "", "", fmt.Errorf("topic %s is not on broker %s (it is on %v)", topic, name, slices.Sorted(maps.Keys(brokers)))
	}
	return name, a, nil
}

// checkQueueOffset refuses a queue id or offset outside the queue.
func checkQueueOffset(ctx context.Context, c *admin.Client, addr, topic string, qid int32, off int64) error {
	ts, err := c.TopicStats(ctx, addr, topic)
	if err != nil {
		return err
	}
	var found *admin.TopicOffset
	for mq, o := range ts.OffsetTable {
		if mq.QueueID == qid {
			found = &o
		}
	}
	if found == nil {
		return fmt.Errorf("topic %s has no queue %d (it has %d)", topic, qid, len(ts.OffsetTable))
	}
	if off < found.MinOffset || off >= found.MaxOffset {
		return fmt.Errorf("offset %d is outside queue %d of %s: its messages are at [%d, %d)", off, qid, topic, found.MinOffset, found.MaxOffset)
	}
	return nil
}

func newQueryMsgByOffsetCmd(g *adminGlobals) *cobra.Command {
	var topic, brokerName string
	var qid int32
	var off int64
	cmd := &cobra.Command{
		Use:   "queryMsgByOffset -t topic -b brokerName -i queueId -o offset",
		Short: "Print the message at a queue offset",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if qid < 0 || off < 0 {
				return usageError("-i %d / -o %d: must not be negative", qid, off)
			}
			return g.run(cmd, func(ctx context.Context, c *admin.Client, out io.Writer) error {
				_, addr, err := queueBroker(ctx, c, topic, brokerName)
				if err != nil {
					return err
				}
				if err := checkQueueOffset(ctx, c, addr, topic, qid, off); err != nil {
					return err
				}
				r, err := c.Pull(ctx, addr, "TOOLS_CONSUMER", topic, qid, off, 1)
				if err != nil {
					return err
				}
				if len(r.Messages) == 0 {
					return fmt.Errorf("no message at offset %d of queue %d (%s)", off, qid, r.Status)
				}
				return printMessages(g, out, r.Messages[:1])
			})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic (required)")
	f.StringVarP(&brokerName, "brokerName", "b", "", "broker name (default: the topic's only broker)")
	f.Int32VarP(&qid, "queueId", "i", 0, "queue id")
	f.Int64VarP(&off, "offset", "o", 0, "queue offset (required)")
	cmd.MarkFlagRequired("topic")
	cmd.MarkFlagRequired("offset")
	return cmd
}

func newSendMessageCmd(g *adminGlobals) *cobra.Command {
	var topic, body, keys, tags, brokerName string
	var qid int32
	cmd := &cobra.Command{
		Use:   "sendMessage -t topic -p body [-k keys] [-c tags] [-b brokerName] [-i queueId]",
		Short: "Send one message",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if qid < -1 {
				return usageError("-i %d: a queue id", qid)
			}
			return g.run(cmd, func(ctx context.Context, c *admin.Client, out io.Writer) error {
				name, addr, newQueues, err := sendTarget(ctx, c, topic, brokerName)
				if err != nil {
					return err
				}
				q := qid
				if q < 0 && newQueues > 0 {
					q = int32(time.Now().UnixNano() % int64(newQueues))
				} else if q < 0 {
					ts, err := c.TopicStats(ctx, addr, topic)
					if err != nil {
						return err
					}
					if len(ts.OffsetTable) == 0 {
						return fmt.Errorf("topic %s has no writable queue on %s", topic, name)
					}
					q = int32(time.Now().UnixNano() % int64(len(ts.OffsetTable)))
				}
				props := map[string]string{"UNIQ_KEY": uniqKey(), "WAIT": "true"}
				if keys != "" {
					props["KEYS"] = keys
				}
				if tags != "" {
					props["TAGS"] = tags
				}
				res, err := c.SendMessage(ctx, addr, "TOOLS_PRODUCER", &record.Message{Topic: topic, QueueID: q, Body: []byte(body), Properties: props})
				if err != nil {
					return err
				}
				row := map[string]any{"brokerName": name, "queueId": res.QueueID, "queueOffset": res.QueueOffset, "msgId": res.MsgID,
					"uniqKey": props["UNIQ_KEY"], "sendStatus": "SEND_OK"}
				return g.output(out, row, func(w *tabwriter.Writer) {
					fmt.Fprintln(w, "#Broker Name\t#QID\t#Send Result\t#MsgId\t#Queue Offset")
					fmt.Fprintf(w, "%s\t%d\tSEND_OK\t%s\t%d\n", name, res.QueueID, res.MsgID, res.QueueOffset)
				})
			})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic (required)")
	f.StringVarP(&body, "body", "p", "", "message body (required)")
	f.StringVarP(&keys, "key", "k", "", "message keys")
	f.StringVarP(&tags, "tags", "c", "", "message tag")
	f.StringVarP(&brokerName, "broker", "b", "", "broker name (default: the topic's only broker)")
	f.Int32VarP(&qid, "qid", "i", -1, "queue id (default: any)")
	cmd.MarkFlagRequired("topic")
	cmd.MarkFlagRequired("body")
	return cmd
}

// sendTarget picks the broker a message for topic goes to. A topic the
// name server does not know is sent as RocketMQ's producer sends it: to
// a broker that holds TBW102, which exists while autoCreateTopicEnable is
// on, with TBW102 as the default topic; the broker then creates the topic.
// newQueues is then the number of queues the topic gets (0 for a topic
// that exists).
func sendTarget(ctx context.Context, c *admin.Client, topic, brokerName string) (name, addr string, newQueues int, err error) {
	if _, err := c.TopicRoute(ctx, topic); !admin.IsCode(err, 17) {
		name, addr, err := queueBroker(ctx, c, topic, brokerName)
		return name, addr, 0, err
	}
	rd, err := c.TopicRoute(ctx, autoCreateTopicKey)
	if admin.IsCode(err, 17) {
		return "", "", 0, fmt.Errorf("topic %s does not exist and no broker creates topics on send (autoCreateTopicEnable is off): create it with updateTopic", topic)
	}
	if err != nil {
		return "", "", 0, err
	}
	name, addr, err = queueBroker(ctx, c, autoCreateTopicKey, brokerName)
	if err != nil {
		return "", "", 0, err
	}
	newQueues = defaultTopicQueueNums
	for _, qd := range rd.QueueDatas {
		if qd.BrokerName == name {
			newQueues = min(newQueues, qd.WriteQueueNums)
		}
	}
	return name, addr, newQueues, nil
}

// autoCreateTopicKey is RocketMQ's TBW102: the topic a broker holds while
// it creates topics on send, and defaultTopicQueueNums the queues a topic
// created so gets (a producer's default).
const (
	autoCreateTopicKey    = "TBW102"
	defaultTopicQueueNums = 4
)

// uniqKey is a client-side unique message id (32 hex digits, as
// MessageClientIDSetter makes them: here time and randomness).
func uniqKey() string {
	n := time.Now().UnixNano()
	return fmt.Sprintf("%016X%016X", uint64(n), uint64(n)*0x9E3779B97F4A7C15)
}

func newConsumeMessageCmd(g *adminGlobals) *cobra.Command {
	var topic, brokerName, group, begin, end string
	var qid int32
	var off int64
	var count int
	cmd := &cobra.Command{
		Use:   "consumeMessage -t topic [-b brokerName] [-i queueId] [-o offset] [-c count] [-s begin] [-e end]",
		Short: "Print messages of a queue (without committing an offset)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if count <= 0 || count > 10000 {
				return usageError("-c %d: between 1 and 10000", count)
			}
			if qid < 0 {
				return usageError("-i %d: a queue id", qid)
			}
			from, to, err := parseTimeRange("-s", begin, "-e", end, -1, 1<<63-1)
			if err != nil {
				return err
			}
			return g.run(cmd, func(ctx context.Context, c *admin.Client, out io.Writer) error {
				_, addr, err := queueBroker(ctx, c, topic, brokerName)
				if err != nil {
					return err
				}
				start := off
				switch {
				case off >= 0:
					if err := checkQueueOffset(ctx, c, addr, topic, qid, off); err != nil {
						return err
					}
				case from >= 0:
					if start, err = c.SearchOffset(ctx, addr, topic, qid, from); err != nil {
						return err
					}
				default:
					if start, err = c.QueueOffset(ctx, addr, topic, qid, false); err != nil {
						return err
					}
				}
				var msgs []*record.MessageExt
				for len(msgs) < count {
					r, err := c.Pull(ctx, addr, group, topic, qid, start, min(32, count-len(msgs)))
					if err != nil {
						return err
					}
					if r.Status != "FOUND" || len(r.Messages) == 0 {
						break
					}
					for _, m := range r.Messages {
						if m.StoreTimestamp <= to && len(msgs) < count {
							msgs = append(msgs, m)
						}
					}
					start = r.NextBeginOffset
				}
				return printMessages(g, out, msgs)
			})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic (required)")
	f.StringVarP(&brokerName, "brokerName", "b", "", "broker name (default: the topic's only broker)")
	f.Int32VarP(&qid, "queueId", "i", 0, "queue id")
	f.Int64VarP(&off, "offset", "o", -1, "first queue offset (default: -s, else the queue's minimum)")
	f.StringVarP(&group, "consumerGroup", "g", "TOOLS_CONSUMER", "consumer group the pull is made as")
	f.StringVarP(&begin, "beginTimestamp", "s", "", "start at the first message stored at or after")
	f.StringVarP(&end, "endTimestamp", "e", "", "stop at messages stored after")
	f.IntVarP(&count, "MessageNumber", "c", 128, "at most this many messages")
	cmd.MarkFlagRequired("topic")
	return cmd
}
