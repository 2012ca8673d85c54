package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/rocketstore/rocketstore/admin"
)

type progressRow struct {
	Topic          string `json:"topic"`
	BrokerName     string `json:"brokerName"`
	QueueID        int32  `json:"queueId"`
	BrokerOffset   int64  `json:"brokerOffset"`
	ConsumerOffset int64  `json:"consumerOffset"`
	Diff           int64  `json:"diff"`
	LastTimestamp  int64  `json:"lastTimestamp"`
}

type progress struct {
	Group      string        `json:"group"`
	Queues     []progressRow `json:"queues"`
	ConsumeTps float64       `json:"consumeTps"`
	DiffTotal  int64         `json:"diffTotal"`
}

// consumerProgress gathers a group's lag from every broker.
func consumerProgress(ctx context.Context, c *admin.Client, group, topic string) (*progress, error) {
	addrs, err := c.BrokerAddrs(ctx, "")
	if err != nil {
		return nil, err
	}
	if topic != "" {
		brokers, err := topicBrokers(ctx, c, topic)
		if err != nil {
			return nil, err
		}
		addrs = slices.Sorted(maps.Values(brokers))
	}
	p := &progress{Group: group, Queues: []progressRow{}}
	for _, a := range addrs {
		cs, err := c.ConsumeStats(ctx, a, group, topic)
		if err != nil {
			return nil, err
		}
		p.ConsumeTps += cs.ConsumeTps
		for _, mq := range sortedMQs(cs.OffsetTable) {
			w := cs.OffsetTable[mq]
			r := progressRow{mq.Topic, mq.BrokerName, mq.QueueID, w.BrokerOffset, w.ConsumerOffset, w.BrokerOffset - w.ConsumerOffset, w.LastTimestamp}
			p.DiffTotal += r.Diff
			p.Queues = append(p.Queues, r)
		}
	}
	if len(p.Queues) == 0 {
		return nil, fmt.Errorf("consumer group %s has no offsets (it never consumed, or does not exist)", group)
	}
	return p, nil
}

func newConsumerProgressCmd(g *adminGlobals) *cobra.Command {
	var group, topic string
	cmd := g.command("consumerProgress -g group [-t topic]", "A consumer group's offsets and lag per queue, and the total lag", func(ctx context.Context, c *admin.Client, out io.Writer) error {
		p, err := consumerProgress(ctx, c, group, topic)
		if err != nil {
			return err
		}
		return g.output(out, p, func(w *tabwriter.Writer) {
			fmt.Fprintln(w, "#Topic\t#Broker Name\t#QID\t#Broker Offset\t#Consumer Offset\t#Diff\t#LastTime")
			for _, r := range p.Queues {
				fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", r.Topic, r.BrokerName, r.QueueID, r.BrokerOffset, r.ConsumerOffset, r.Diff, fmtTime(r.LastTimestamp))
			}
			fmt.Fprintf(w, "\nConsume TPS: %.2f\nDiff Total: %d\n", p.ConsumeTps, p.DiffTotal)
		})
	})
	cmd.Flags().StringVarP(&group, "groupName", "g", "", "consumer group (required)")
	cmd.Flags().StringVarP(&topic, "topicName", "t", "", "only this topic")
	cmd.MarkFlagRequired("groupName")
	return cmd
}

func newConsumerConnectionCmd(g *adminGlobals) *cobra.Command {
	var group string
	cmd := g.command("consumerConnection -g group", "The online clients of a consumer group and their subscriptions", func(ctx context.Context, c *admin.Client, out io.Writer) error {
		addrs, err := c.BrokerAddrs(ctx, "")
		if err != nil {
			return err
		}
		var cc *admin.ConsumerConnection
		for _, a := range addrs {
			if cc, err = c.ConsumerConnection(ctx, a, group); err == nil {
				break
			}
		}
		if admin.IsCode(err, admin.CodeConsumerNotOnline) {
			return fmt.Errorf("consumer group %s is not online", group)
		}
		if err != nil {
			return err
		}
		return g.output(out, cc, func(w *tabwriter.Writer) {
			fmt.Fprintln(w, "#ClientId\t#ClientAddr\t#Language\t#Version")
			for _, cn := range cc.ConnectionSet {
				fmt.Fprintf(w, "%s\t%s\t%s\t%d\n", cn.ClientID, cn.ClientAddr, cn.Language, cn.Version)
			}
			fmt.Fprintln(w, "\nBelow is subscription:")
			fmt.Fprintln(w, "#Topic\t#SubExpression")
			for _, t := range slices.Sorted(maps.Keys(cc.SubscriptionTable)) {
				fmt.Fprintf(w, "%s\t%s\n", t, cc.SubscriptionTable[t].SubString)
			}
			fmt.Fprintf(w, "\nConsumeType: %s\nMessageModel: %s\nConsumeFromWhere: %s\n", cc.ConsumeType, cc.MessageModel, cc.ConsumeFromWhere)
		})
	})
	cmd.Flags().StringVarP(&group, "consumerGroup", "g", "", "consumer group (required)")
	cmd.MarkFlagRequired("consumerGroup")
	return cmd
}

func newProducerConnectionCmd(g *adminGlobals) *cobra.Command {
	var group, topic string
	cmd := g.command("producerConnection -g group -t topic", "The clients of a producer group", func(ctx context.Context, c *admin.Client, out io.Writer) error {
		brokers, err := topicBrokers(ctx, c, topic)
		if err != nil {
			return err
		}
		seen := map[string]admin.Connection{}
		for _, a := range brokers {
			pc, err := c.ProducerConnection(ctx, a, group)
			if admin.IsCode(err, 1) {
				continue
			}
			if err != nil {
				return err
			}
			for _, cn := range pc.ConnectionSet {
				seen[cn.ClientID] = cn
			}
		}
		if len(seen) == 0 {
			return fmt.Errorf("producer group %s has no online producer", group)
		}
		conns := make([]admin.Connection, 0, len(seen))
		for _, id := range slices.Sorted(maps.Keys(seen)) {
			conns = append(conns, seen[id])
		}
		return g.output(out, conns, func(w *tabwriter.Writer) {
			fmt.Fprintln(w, "#ClientId\t#ClientAddr\t#Language\t#Version")
			for _, cn := range conns {
				fmt.Fprintf(w, "%s\t%s\t%s\t%d\n", cn.ClientID, cn.ClientAddr, cn.Language, cn.Version)
			}
		})
	})
	cmd.Flags().StringVarP(&group, "producerGroup", "g", "", "producer group (required)")
	cmd.Flags().StringVarP(&topic, "topic", "t", "", "a topic the group produces to (required)")
	cmd.MarkFlagRequired("producerGroup")
	cmd.MarkFlagRequired("topic")
	return cmd
}

type resetRow struct {
	BrokerName string `json:"brokerName"`
	QueueID    int32  `json:"queueId"`
	Offset     int64  `json:"offset"`
}

func newResetOffsetByTimeCmd(g *adminGlobals) *cobra.Command {
	var group, topic, ts string
	var force bool
	cmd := &cobra.Command{
		Use:   "resetOffsetByTime -g group -t topic -s time [-f=false]",
		Short: "Move a group's offsets to the first message stored at or after a time",
		Long: `resetOffsetByTime moves the group's offsets of the topic on every broker to the
first message stored at or after -s (ms since the epoch, "now", or
yyyy-MM-dd#HH:mm:ss:SSS; -1 means the end of each queue). Online consumers are told
by their broker; for an offline group the offsets are updated on the brokers. With
-f=false an offset only moves back.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			at := int64(-1)
			if ts != "-1" {
				var err error
				if at, err = parseTime("-s", ts); err != nil {
					return usageError("%v", err)
				}
			}
			return g.run(cmd, func(ctx context.Context, c *admin.Client, out io.Writer) error {
				brokers, err := topicBrokers(ctx, c, topic)
				if err != nil {
					return err
				}
				var rows []resetRow
				for _, name := range slices.Sorted(maps.Keys(brokers)) {
					table, err := c.ResetOffsetByTime(ctx, brokers[name], group, topic, at, force)
					if err != nil {
						return err
					}
					for _, mq := range sortedMQs(table) {
						rows = append(rows, resetRow{mq.BrokerName, mq.QueueID, table[mq]})
					}
				}
				return g.output(out, rows, func(w *tabwriter.Writer) {
					fmt.Fprintln(w, "#brokerName\t#queueId\t#offset")
					for _, r := range rows {
						fmt.Fprintf(w, "%s\t%d\t%d\n", r.BrokerName, r.QueueID, r.Offset)
					}
				})
			})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&group, "group", "g", "", "consumer group (required)")
	f.StringVarP(&topic, "topic", "t", "", "topic (required)")
	f.StringVarP(&ts, "timestamp", "s", "", "time to reset to (required)")
	f.BoolVarP(&force, "force", "f", true, "move offsets forward too")
	for _, n := range []string{"group", "topic", "timestamp"} {
		cmd.MarkFlagRequired(n)
	}
	return cmd
}

func newUpdateSubGroupCmd(g *adminGlobals) *cobra.Command {
	var brokerAddr, cluster string
	sg := admin.SubscriptionGroupConfig{}
	cmd := &cobra.Command{
		Use:   "updateSubGroup -g group (-b brokerAddr | -c cluster) [flags]",
		Short: "Create or update a subscription group",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if sg.RetryQueueNums < 0 || sg.RetryMaxTimes < 0 || sg.RetryQueueNums > 1024 {
				return usageError("-q %d / -r %d: retry settings out of range", sg.RetryQueueNums, sg.RetryMaxTimes)
			}
			return g.run(cmd, func(ctx context.Context, c *admin.Client, out io.Writer) error {
				addrs, err := targetBrokers(ctx, c, brokerAddr, cluster)
				if err != nil {
					return err
				}
				return g.forEachBroker(out, addrs, func(a string) error { return c.UpdateSubscriptionGroup(ctx, a, sg) },
					map[string]any{"subscriptionGroupConfig": sg},
					func(a string) string { return "create subscription group to " + a + " success." }, subGroupString(sg))
			})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&brokerAddr, "brokerAddr", "b", "", "broker address")
	f.StringVarP(&cluster, "clusterName", "c", "", "every master of this cluster")
	f.StringVarP(&sg.GroupName, "groupName", "g", "", "group name (required)")
	mqBoolVarP(f, &sg.ConsumeEnable, "consumeEnable", "s", true, "consume enabled")
	mqBoolVarP(f, &sg.ConsumeFromMinEnable, "consumeFromMinEnable", "m", false, "consume from the min offset")
	mqBoolVarP(f, &sg.ConsumeBroadcastEnable, "consumeBroadcastEnable", "d", false, "broadcast")
	mqBoolVarP(f, &sg.ConsumeMessageOrderly, "consumeMessageOrderly", "o", false, "FIFO group: 5.x consumers get each message group in order")
	f.IntVarP(&sg.RetryQueueNums, "retryQueueNums", "q", 1, "retry queue number")
	f.IntVarP(&sg.RetryMaxTimes, "retryMaxTimes", "r", 16, "retry max times")
	f.Int64VarP(&sg.BrokerID, "brokerId", "i", 0, "consumer from which broker id")
	f.Int64VarP(&sg.WhichBrokerWhenConsumeSlowly, "whichBrokerWhenConsumeSlowly", "w", 1, "broker id when consuming slowly")
	mqBoolVarP(f, &sg.NotifyConsumerIdsChangedEnable, "notifyConsumerIdsChanged", "a", true, "notify consumers when the group changes")
	cmd.MarkFlagRequired("groupName")
	return cmd
}

func newDeleteSubGroupCmd(g *adminGlobals) *cobra.Command {
	var brokerAddr, cluster, group string
	var removeOffset bool
	cmd := g.command("deleteSubGroup -g group (-b brokerAddr | -c cluster) [-r]", "Delete a subscription group", func(ctx context.Context, c *admin.Client, out io.Writer) error {
		addrs, err := targetBrokers(ctx, c, brokerAddr, cluster)
		if err != nil {
			return err
		}
		for _, a := range addrs {
			w, err := c.AllSubscriptionGroups(ctx, a)
			if err != nil {
				return err
			}
			if _, ok := w.SubscriptionGroupTable[group]; !ok {
				return fmt.Errorf("subscription group %s does not exist on %s", group, a)
			}
		}
		return g.forEachBroker(out, addrs, func(a string) error { return c.DeleteSubscriptionGroup(ctx, a, group, removeOffset) },
			map[string]any{"deleted": group},
			func(a string) string {
				return fmt.Sprintf("delete subscription group [%s] from broker [%s] success.", group, a)
			}, "")
	})
	f := cmd.Flags()
	f.StringVarP(&brokerAddr, "brokerAddr", "b", "", "broker address")
	f.StringVarP(&cluster, "clusterName", "c", "", "every master of this cluster")
	f.StringVarP(&group, "groupName", "g", "", "group name (required)")
	f.BoolVarP(&removeOffset, "removeOffset", "r", false, "also remove the group's consumer offsets")
	cmd.MarkFlagRequired("groupName")
	return cmd
}
