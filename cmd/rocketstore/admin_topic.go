package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/rocketstore/rocketstore/admin"
)

type clusterRow struct {
	Cluster    string `json:"cluster"`
	BrokerName string `json:"brokerName"`
	BrokerID   string `json:"brokerId"`
	Addr       string `json:"addr"`
	Version    string `json:"version"`
	PutTps     string `json:"putTps"`
	GetTps     string `json:"getTps"`
	PutToday   string `json:"msgPutTotalTodayNow"`
	GetToday   string `json:"msgGetTotalTodayNow"`
	Error      string `json:"error,omitempty"`
}

func newClusterListCmd(g *adminGlobals) *cobra.Command {
	var cluster string
	cmd := g.command("clusterList [-c cluster]", "List the clusters, their brokers and their rates", func(ctx context.Context, c *admin.Client, out io.Writer) error {
		ci, err := c.ClusterInfo(ctx)
		if err != nil {
			return err
		}
		if _, ok := ci.ClusterAddrTable[cluster]; cluster != "" && !ok {
			return fmt.Errorf("cluster %s not found", cluster)
		}
		var rows []clusterRow
		for _, cl := range slices.Sorted(maps.Keys(ci.ClusterAddrTable)) {
			if cluster != "" && cl != cluster {
				continue
			}
			names := slices.Clone(ci.ClusterAddrTable[cl])
			slices.Sort(names)
			for _, bn := range names {
				bd := ci.BrokerAddrTable[bn]
				for _, id := range slices.Sorted(maps.Keys(bd.BrokerAddrs)) {
					r := clusterRow{Cluster: cl, BrokerName: bn, BrokerID: id, Addr: bd.BrokerAddrs[id]}
					if info, err := c.RuntimeInfo(ctx, r.Addr); err != nil {
						r.Error = err.Error()
					} else {
						r.Version, r.PutTps, r.GetTps = info["brokerVersionDesc"], info["putTps"], info["getTransferedTps"]
						r.PutToday, r.GetToday = info["msgPutTotalTodayNow"], info["msgGetTotalTodayNow"]
					}
					rows = append(rows, r)
				}
			}
		}
		return g.output(out, rows, func(w *tabwriter.Writer) {
			fmt.Fprintln(w, "#Cluster Name\t#Broker Name\t#BID\t#Addr\t#Version\t#InTPS(LOAD)\t#OutTPS\t#InTotalToday\t#OutTotalToday")
			for _, r := range rows {
				if r.Error != "" {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t(unreachable: %s)\n", r.Cluster, r.BrokerName, r.BrokerID, r.Addr, r.Error)
					continue
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Cluster, r.BrokerName, r.BrokerID, r.Addr, r.Version,
					first(r.PutTps), first(r.GetTps), r.PutToday, r.GetToday)
			}
		})
	})
	cmd.Flags().StringVarP(&cluster, "clusterName", "c", "", "only this cluster")
	return cmd
}

// first is the first of RocketMQ's "10s 1min 10min" rates.
func first(tps string) string {
	for i := range tps {
		if tps[i] == ' ' {
			return tps[:i]
		}
	}
	return tps
}

func newTopicListCmd(g *adminGlobals) *cobra.Command {
	var cluster string
	cmd := g.command("topicList [-c cluster]", "List every topic the name server knows", func(ctx context.Context, c *admin.Client, out io.Writer) error {
		var topics []string
		var err error
		if cluster != "" {
			var resp []byte
			r, e := c.Invoke(ctx, c.NameServers()[0], 224, nil, "cluster", cluster)
			if e != nil {
				return e
			}
			resp = r.Body
			var tl admin.TopicList
			if err = admin.Unmarshal(resp, &tl); err != nil {
				return err
			}
			topics = tl.TopicList
			slices.Sort(topics)
		} else if topics, err = c.TopicList(ctx); err != nil {
			return err
		}
		return g.output(out, topics, func(w *tabwriter.Writer) {
			for _, t := range topics {
				fmt.Fprintln(w, t)
			}
		})
	})
	cmd.Flags().StringVarP(&cluster, "clusterModel", "c", "", "only the topics of this cluster")
	return cmd
}

type queueRow struct {
	BrokerName  string `json:"brokerName"`
	QueueID     int32  `json:"queueId"`
	MinOffset   int64  `json:"minOffset"`
	MaxOffset   int64  `json:"maxOffset"`
	LastUpdated int64  `json:"lastUpdateTimestamp"`
}

// topicStatus collects a topic's queues from each of its brokers.
func topicStatus(ctx context.Context, c *admin.Client, topic string) ([]queueRow, error) {
	brokers, err := topicBrokers(ctx, c, topic)
	if err != nil {
		return nil, err
	}
	var rows []queueRow
	for _, name := range slices.Sorted(maps.Keys(brokers)) {
		ts, err := c.TopicStats(ctx, brokers[name], topic)
		if err != nil {
			return nil, err
		}
		for _, mq := range sortedMQs(ts.OffsetTable) {
			o := ts.OffsetTable[mq]
			rows = append(rows, queueRow{mq.BrokerName, mq.QueueID, o.MinOffset, o.MaxOffset, o.LastUpdateTimestamp})
		}
	}
	return rows, nil
}

func newTopicStatusCmd(g *adminGlobals) *cobra.Command {
	var topic string
	cmd := g.command("topicStatus -t topic", "Each queue of a topic with its min and max offsets", func(ctx context.Context, c *admin.Client, out io.Writer) error {
		rows, err := topicStatus(ctx, c, topic)
		if err != nil {
			return err
		}
		return g.output(out, rows, func(w *tabwriter.Writer) {
			fmt.Fprintln(w, "#Broker Name\t#QID\t#Min Offset\t#Max Offset\t#Last Updated")
			for _, r := range rows {
				fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\n", r.BrokerName, r.QueueID, r.MinOffset, r.MaxOffset, fmtTime(r.LastUpdated))
			}
		})
	})
	cmd.Flags().StringVarP(&topic, "topic", "t", "", "topic name (required)")
	cmd.MarkFlagRequired("topic")
	return cmd
}

func newTopicRouteCmd(g *adminGlobals) *cobra.Command {
	var topic string
	cmd := g.command("topicRoute -t topic", "The route of a topic, as the name server answers it", func(ctx context.Context, c *admin.Client, out io.Writer) error {
		if _, err := topicBrokers(ctx, c, topic); err != nil {
			return err
		}
		rd, err := c.TopicRoute(ctx, topic)
		if err != nil {
			return err
		}
		if g.json {
			return g.output(out, rd, nil)
		}
		b, err := json.MarshalIndent(rd, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	})
	cmd.Flags().StringVarP(&topic, "topic", "t", "", "topic name (required)")
	cmd.MarkFlagRequired("topic")
	return cmd
}

func newUpdateTopicCmd(g *adminGlobals) *cobra.Command {
	var (
		topic, brokerAddr, cluster, attrs string
		readQ, writeQ, perm               int
		order                             bool
	)
	cmd := &cobra.Command{
		Use:   "updateTopic -t topic (-b brokerAddr | -c cluster) [-r readQueueNums] [-w writeQueueNums] [-p perm] [-o] [-a +message.type=FIFO]",
		Short: "Create or update a topic",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case readQ <= 0 || readQ > 1024 || writeQ <= 0 || writeQ > 1024:
				return usageError("-r %d / -w %d: queue numbers must be between 1 and 1024", readQ, writeQ)
			case perm != 2 && perm != 4 && perm != 6:
				return usageError("-p %d: perm must be 2 (write), 4 (read) or 6 (read and write)", perm)
			}
			return g.run(cmd, func(ctx context.Context, c *admin.Client, out io.Writer) error {
				addrs, err := targetBrokers(ctx, c, brokerAddr, cluster)
				if err != nil {
					return err
				}
				tc := admin.TopicConfig{TopicName: topic, ReadQueueNums: readQ, WriteQueueNums: writeQ, Perm: perm, Order: order}
				return g.forEachBroker(out, addrs, func(a string) error { return c.CreateTopicWithAttributes(ctx, a, tc, attrs) },
					map[string]any{"topicConfig": tc}, func(a string) string { return "create topic to " + a + " success." },
					fmt.Sprintf("%+v", tc))
			})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic name (required)")
	f.StringVarP(&brokerAddr, "brokerAddr", "b", "", "create the topic on this broker")
	f.StringVarP(&cluster, "clusterName", "c", "", "create the topic on every master of this cluster")
	f.IntVarP(&readQ, "readQueueNums", "r", 8, "read queue number")
	f.IntVarP(&writeQ, "writeQueueNums", "w", 8, "write queue number")
	f.IntVarP(&perm, "perm", "p", 6, "permission: 2 write, 4 read, 6 both")
	f.BoolVarP(&order, "order", "o", false, "ordered topic")
	f.StringVarP(&attrs, "attributes", "a", "", "attributes to add, change or delete: +message.type=FIFO,-key (message.type: NORMAL, FIFO, DELAY, TRANSACTION)")
	cmd.MarkFlagRequired("topic")
	return cmd
}

func newDeleteTopicCmd(g *adminGlobals) *cobra.Command {
	var topic, cluster string
	cmd := g.command("deleteTopic -t topic -c cluster", "Delete a topic from the brokers of a cluster and from the name servers", func(ctx context.Context, c *admin.Client, out io.Writer) error {
		if _, err := topicBrokers(ctx, c, topic); err != nil {
			return err
		}
		addrs, err := targetBrokers(ctx, c, "", cluster)
		if err != nil {
			return err
		}
		if err := c.DeleteTopic(ctx, addrs, topic); err != nil {
			return err
		}
		return g.output(out, map[string]any{"deleted": topic, "brokers": addrs}, func(w *tabwriter.Writer) {
			fmt.Fprintf(w, "delete topic [%s] from cluster [%s] success.\n", topic, cluster)
		})
	})
	cmd.Flags().StringVarP(&topic, "topic", "t", "", "topic name (required)")
	cmd.Flags().StringVarP(&cluster, "clusterName", "c", "", "cluster (required)")
	cmd.MarkFlagRequired("topic")
	cmd.MarkFlagRequired("clusterName")
	return cmd
}

func newBrokerStatusCmd(g *adminGlobals) *cobra.Command {
	var brokerAddr, cluster string
	cmd := g.command("brokerStatus (-b brokerAddr | -c cluster)", "A broker's runtime information", func(ctx context.Context, c *admin.Client, out io.Writer) error {
		addrs, err := targetBrokers(ctx, c, brokerAddr, cluster)
		if err != nil {
			return err
		}
		all := map[string]map[string]string{}
		for _, a := range addrs {
			if all[a], err = c.RuntimeInfo(ctx, a); err != nil {
				return err
			}
		}
		return g.output(out, all, func(w *tabwriter.Writer) {
			for _, a := range addrs {
				for _, k := range slices.Sorted(maps.Keys(all[a])) {
					if len(addrs) > 1 {
						fmt.Fprintf(w, "%s\t", a)
					}
					fmt.Fprintf(w, "%s\t: %s\n", k, all[a][k])
				}
			}
		})
	})
	cmd.Flags().StringVarP(&brokerAddr, "brokerAddr", "b", "", "broker address")
	cmd.Flags().StringVarP(&cluster, "clusterName", "c", "", "every master of this cluster")
	return cmd
}
