package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/record"
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

	info map[string]string // the broker's runtime information
}

func newClusterListCmd(g *adminGlobals) *cobra.Command {
	var cluster string
	var more bool
	cmd := g.command("clusterList [-c cluster] [-m]", "List the clusters, their brokers and their rates; -m the message totals of yesterday and today", func(ctx context.Context, c *admin.Client, out io.Writer) error {
		rows, err := clusterRows(ctx, c, cluster)
		if err != nil {
			return err
		}
		if more {
			ms := moreStats(rows)
			return g.output(out, ms, func(w *tabwriter.Writer) {
				fmt.Fprintln(w, "#Cluster Name\t#Broker Name\t#InTotalYest\t#OutTotalYest\t#InTotalToday\t#OutTotalToday")
				for _, m := range ms {
					fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\n", m.Cluster, m.BrokerName, m.InTotalYest, m.OutTotalYest, m.InTotalToday, m.OutTotalToday)
				}
			})
		}
		return g.output(out, rows, func(w *tabwriter.Writer) {
			fmt.Fprintln(w, "#Cluster Name\t#Broker Name\t#BID\t#Addr\t#Version\t#InTPS(LOAD)\t#OutTPS\t#InTotalToday\t#OutTotalToday")
			for _, r := range rows {
				if r.Error != "" {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t(unreachable: %s)\n", r.Cluster, r.BrokerName, r.BrokerID, r.Addr, r.Error)
					continue
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Cluster, r.BrokerName, r.BrokerID, r.Addr, r.Version,
					first(r.PutTps), first(r.GetTps), r.info["msgPutTotalTodayNow"], r.info["msgGetTotalTodayNow"])
			}
		})
	})
	cmd.Flags().StringVarP(&cluster, "clusterName", "c", "", "only this cluster")
	cmd.Flags().BoolVarP(&more, "moreStats", "m", false, "print the messages put and got yesterday and today")
	return cmd
}

// clusterRows is one row a broker of the cluster (every cluster when
// cluster is empty), with its runtime information.
func clusterRows(ctx context.Context, c *admin.Client, cluster string) ([]clusterRow, error) {
	ci, err := c.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	if _, ok := ci.ClusterAddrTable[cluster]; cluster != "" && !ok {
		return nil, fmt.Errorf("cluster %s not found", cluster)
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
					r.info = info
					r.Version, r.PutTps, r.GetTps = info["brokerVersionDesc"], info["putTps"], info["getTransferedTps"]
					r.PutToday, r.GetToday = info["msgPutTotalTodayNow"], info["msgGetTotalTodayNow"]
				}
				rows = append(rows, r)
			}
		}
	}
	return rows, nil
}

// moreStatsRow is one line of `clusterList -m`.
type moreStatsRow struct {
	Cluster       string `json:"cluster"`
	BrokerName    string `json:"brokerName"`
	BrokerID      string `json:"brokerId"`
	InTotalYest   int64  `json:"inTotalYest"`
	OutTotalYest  int64  `json:"outTotalYest"`
	InTotalToday  int64  `json:"inTotalToday"`
	OutTotalToday int64  `json:"outTotalToday"`
}

// moreStats computes mqadmin's `clusterList -m` figures from the
// runtime counters: yesterday is this morning's total less yesterday
// morning's, today is now less this morning. A broker that did not
// answer, or answered without the counters, shows zeros, as in mqadmin.
func moreStats(rows []clusterRow) []moreStatsRow {
	out := make([]moreStatsRow, 0, len(rows))
	for _, r := range rows {
		n := func(k string) int64 { v, _ := strconv.ParseInt(r.info[k], 10, 64); return v }
		out = append(out, moreStatsRow{Cluster: r.Cluster, BrokerName: r.BrokerName, BrokerID: r.BrokerID,
			InTotalYest:   n("msgPutTotalTodayMorning") - n("msgPutTotalYesterdayMorning"),
			OutTotalYest:  n("msgGetTotalTodayMorning") - n("msgGetTotalYesterdayMorning"),
			InTotalToday:  n("msgPutTotalTodayNow") - n("msgPutTotalTodayMorning"),
			OutTotalToday: n("msgGetTotalTodayNow") - n("msgGetTotalTodayMorning")})
	}
	return out
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

// topicListRow is one line of `topicList -c`: a topic, its cluster and
// one group that consumes it.
type topicListRow struct {
	Cluster string `json:"cluster"`
	Topic   string `json:"topic"`
	Group   string `json:"consumerGroup"`
}

func newTopicListCmd(g *adminGlobals) *cobra.Command {
	var clusterModel bool
	cmd := g.command("topicList [-c]", "List every topic the name server knows; -c adds each topic's cluster and consumer groups", func(ctx context.Context, c *admin.Client, out io.Writer) error {
		topics, err := c.TopicList(ctx)
		if err != nil {
			return err
		}
		if !clusterModel {
			return g.output(out, topics, func(w *tabwriter.Writer) {
				for _, t := range topics {
					fmt.Fprintln(w, t)
				}
			})
		}
		rows, err := topicClusterRows(ctx, c, topics)
		if err != nil {
			return err
		}
		return g.output(out, rows, func(w *tabwriter.Writer) {
			fmt.Fprintln(w, "#Cluster Name\t#Topic\t#Consumer Group")
			for _, r := range rows {
				fmt.Fprintf(w, "%s\t%s\t%s\n", r.Cluster, r.Topic, r.Group)
			}
		})
	})
	cmd.Flags().BoolVarP(&clusterModel, "clusterModel", "c", false, "print each topic's cluster and the groups that consume it")
	return cmd
}

// topicClusterRows is mqadmin's `topicList -c`: every topic but the
// retry and DLQ ones, with the cluster of its first broker and one row a
// consumer group (one row with no group when none consumes it). A topic
// whose route or groups cannot be read gets empty columns, as in mqadmin.
func topicClusterRows(ctx context.Context, c *admin.Client, topics []string) ([]topicListRow, error) {
	ci, err := c.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	clusterOf := map[string]string{}
	for cl, names := range ci.ClusterAddrTable {
		for _, bn := range names {
			clusterOf[bn] = cl
		}
	}
	rows := []topicListRow{}
	for _, t := range topics {
		if strings.HasPrefix(t, record.RetryGroupTopicPrefix) || strings.HasPrefix(t, record.DLQGroupTopicPrefix) {
			continue
		}
		cluster, groups := "", []string(nil)
		if rd, err := c.TopicRoute(ctx, t); err == nil && len(rd.BrokerDatas) > 0 {
			bd := rd.BrokerDatas[0]
			cluster = clusterOf[bd.BrokerName]
			if addr := bd.BrokerAddrs["0"]; addr != "" {
				groups = consumedBy(ctx, c, addr, t)
			}
		}
		if len(groups) == 0 {
			groups = []string{""}
		}
		for _, grp := range groups {
			rows = append(rows, topicListRow{cluster, t, grp})
		}
	}
	return rows, nil
}

// consumedBy asks a broker which groups consume topic
// (QUERY_TOPIC_CONSUME_BY_WHO); nil when it cannot say.
func consumedBy(ctx context.Context, c *admin.Client, addr, topic string) []string {
	resp, err := c.Invoke(ctx, addr, admin.CodeQueryTopicConsumeByWho, nil, "topic", topic)
	if err != nil {
		return nil
	}
	var gl admin.GroupList
	if admin.Unmarshal(resp.Body, &gl) != nil {
		return nil
	}
	slices.Sort(gl.GroupList)
	return gl.GroupList
}

type queueRow struct {
	BrokerName  string `json:"brokerName"`
	QueueID     int32  `json:"queueId"`
	MinOffset   int64  `json:"minOffset"`
	MaxOffset   int64  `json:"maxOffset"`
	LastUpdated int64  `json:"lastUpdateTimestamp"`
}

// topicStatus collects a topic's queues from each of its brokers, or
// from those of one cluster when cluster is not empty.
func topicStatus(ctx context.Context, c *admin.Client, topic, cluster string) ([]queueRow, error) {
	brokers, err := topicBrokers(ctx, c, topic)
	if err != nil {
		return nil, err
	}
	if cluster != "" {
		if brokers, err = clusterBrokers(ctx, c, cluster, brokers); err != nil {
			return nil, err
		}
		if len(brokers) == 0 {
			return nil, fmt.Errorf("topic %s has no queue in cluster %s", topic, cluster)
		}
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

// clusterBrokers keeps the brokers (name → address) that belong to cluster.
func clusterBrokers(ctx context.Context, c *admin.Client, cluster string, brokers map[string]string) (map[string]string, error) {
	ci, err := c.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	names, ok := ci.ClusterAddrTable[cluster]
	if !ok {
		return nil, fmt.Errorf("cluster %s not found", cluster)
	}
	in := map[string]string{}
	for _, n := range names {
		if a, ok := brokers[n]; ok {
			in[n] = a
		}
	}
	return in, nil
}

func newTopicStatusCmd(g *adminGlobals) *cobra.Command {
	var topic, cluster string
	cmd := g.command("topicStatus -t topic [-c cluster]", "Each queue of a topic with its min and max offsets", func(ctx context.Context, c *admin.Client, out io.Writer) error {
		rows, err := topicStatus(ctx, c, topic, cluster)
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
	cmd.Flags().StringVarP(&cluster, "cluster", "c", "", "only the brokers of this cluster")
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
		Use:   "updateTopic -t topic (-b brokerAddr | -c cluster) [-r readQueueNums] [-w writeQueueNums] [-p perm] [-o true|false] [-a +message.type=FIFO]",
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
					topicConfigString(tc))
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
	mqBoolVarP(f, &order, "order", "o", false, "ordered topic")
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
