package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocketstore/rocketstore/acl"
	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/remoting"
)

// adminGlobals are the flags every `rocketstore admin` command takes.
type adminGlobals struct {
	namesrv              string
	json                 bool
	timeout              time.Duration
	accessKey, secretKey string
}

// newAdminCmd is `rocketstore admin`: mqadmin's commands over the
// remoting protocol, against rocketstore or any RocketMQ 4.x cluster.
func newAdminCmd() *cobra.Command {
	g := &adminGlobals{}
	cmd := &cobra.Command{
		Use:   "admin COMMAND [flags]",
		Short: "Administer a RocketMQ 4.x cluster or rocketstore server (mqadmin's commands and flags)",
		Long: `admin runs mqadmin's commands, with mqadmin's names and flags, over the RocketMQ
remoting protocol only: it works against rocketstore serve and against any RocketMQ
4.x name server and brokers. -n gives the name servers (host:port, ';'-separated;
default $NAMESRV_ADDR or 127.0.0.1:9876). Output is a table for people; --json
prints one JSON document for scripts. Time flags take milliseconds since the
epoch, "now", or mqadmin's yyyy-MM-dd#HH:mm:ss:SSS (local time). With ACL on, give an
account with --accessKey and --secretKey (admin commands need an admin account).`,
	}
	def := os.Getenv("NAMESRV_ADDR")
	if def == "" {
		def = "127.0.0.1:9876"
	}
	pf := cmd.PersistentFlags()
	pf.StringVarP(&g.namesrv, "namesrvAddr", "n", def, "name server address list, e.g. 127.0.0.1:9876;127.0.0.2:9876")
	pf.BoolVar(&g.json, "json", false, "print JSON instead of a table")
	pf.DurationVar(&g.timeout, "timeout", 5*time.Second, "timeout of each request")
	pf.StringVar(&g.accessKey, "accessKey", os.Getenv("ROCKETMQ_ACCESS_KEY"), "ACL access key (default $ROCKETMQ_ACCESS_KEY); requests are signed with it")
	pf.StringVar(&g.secretKey, "secretKey", os.Getenv("ROCKETMQ_SECRET_KEY"), "ACL secret key (default $ROCKETMQ_SECRET_KEY)")
	cmd.AddCommand(
		newClusterListCmd(g), newTopicListCmd(g), newTopicStatusCmd(g), newTopicRouteCmd(g),
		newUpdateTopicCmd(g), newDeleteTopicCmd(g), newBrokerStatusCmd(g),
		newConsumerProgressCmd(g), newConsumerConnectionCmd(g), newProducerConnectionCmd(g),
		newResetOffsetByTimeCmd(g), newUpdateSubGroupCmd(g), newDeleteSubGroupCmd(g),
		newQueryMsgByIDCmd(g), newQueryMsgByKeyCmd(g), newQueryMsgByOffsetCmd(g),
		newSendMessageCmd(g), newConsumeMessageCmd(g), newAdminClusterCmd(g),
	)
	return cmd
}

// adminRun is the shape of every admin command's body.
type adminRun func(ctx context.Context, c *admin.Client, out io.Writer) error

// command is an admin subcommand that takes flags only and runs body
// through run.
func (g *adminGlobals) command(use, short string, body adminRun) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return g.run(cmd, body) }}
}

// run connects, runs f and closes. Errors exit with exitFailed: the
// command reached the cluster and was refused, or the input was bad.
func (g *adminGlobals) run(cmd *cobra.Command, f adminRun) error {
	var addrs []string
	for _, a := range strings.Split(g.namesrv, ";") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	c, err := admin.NewClient(addrs, g.timeout)
	if err != nil {
		return &exitCodeError{code: exitError, err: err}
	}
	defer c.Close()
	if g.accessKey != "" {
		if g.secretKey == "" {
			return usageError("--accessKey needs --secretKey")
		}
		c.Sign = func(req *remoting.RemotingCommand) { acl.SignRequest(req, g.accessKey, g.secretKey, "") }
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	if err := f(ctx, c, cmd.OutOrStdout()); err != nil {
		var ec *exitCodeError
		if errors.As(err, &ec) {
			return err
		}
		return failed(err)
	}
	return nil
}

// usageError is bad input: exit 2 with the reason, nothing sent.
func usageError(format string, a ...any) error {
	return &exitCodeError{code: exitError, err: fmt.Errorf(format, a...)}
}

// output prints v as JSON with --json, else calls table.
func (g *adminGlobals) output(out io.Writer, v any, table func(w *tabwriter.Writer)) error {
	if g.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	table(w)
	return w.Flush()
}

// forEachBroker runs do on each of addrs in turn, stopping at the first
// error, and reports the result: with --json one document, doc plus the
// brokers; else one line a broker (line) and then tail, if any. The
// update and delete commands that take -b or -c share it.
func (g *adminGlobals) forEachBroker(out io.Writer, addrs []string, do func(addr string) error, doc map[string]any,
	line func(addr string) string, tail string) error {
	for _, a := range addrs {
		if err := do(a); err != nil {
			return err
		}
	}
	doc["brokers"] = addrs
	return g.output(out, doc, func(w *tabwriter.Writer) {
		for _, a := range addrs {
			fmt.Fprintln(w, line(a))
		}
		if tail != "" {
			fmt.Fprintln(w, tail)
		}
	})
}

// parseTimeRange reads an optional pair of time flags (see parseTime);
// an empty one keeps its default.
func parseTimeRange(beginFlag, begin, endFlag, end string, from, to int64) (int64, int64, error) {
	var err error
	if begin != "" {
		if from, err = parseTime(beginFlag, begin); err != nil {
			return 0, 0, usageError("%v", err)
		}
	}
	if end != "" {
		if to, err = parseTime(endFlag, end); err != nil {
			return 0, 0, usageError("%v", err)
		}
	}
	return from, to, nil
}

// parseTime reads a time flag: ms since the epoch, "now", or mqadmin's
// yyyy-MM-dd#HH:mm:ss:SSS in local time.
func parseTime(flag, s string) (int64, error) {
	if s == "now" {
		return time.Now().UnixMilli(), nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		if ms < 0 {
			return 0, fmt.Errorf("%s %q: a time cannot be negative", flag, s)
		}
		return ms, nil
	}
	t, err := time.ParseInLocation("2006-01-02#15:04:05:000", s, time.Local)
	if err != nil {
		return 0, fmt.Errorf("%s %q is not a time: want milliseconds since the epoch, \"now\" or yyyy-MM-dd#HH:mm:ss:SSS", flag, s)
	}
	return t.UnixMilli(), nil
}

func fmtTime(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	return time.UnixMilli(ms).Format("2006-01-02 15:04:05.000")
}

// topicBrokers returns the topic's brokers by name, or a clear error
// when the name server has no route for it.
func topicBrokers(ctx context.Context, c *admin.Client, topic string) (map[string]string, error) {
	rd, err := c.TopicRoute(ctx, topic)
	if admin.IsCode(err, 17) {
		return nil, fmt.Errorf("topic %s does not exist (the name server has no route for it)", topic)
	}
	if err != nil {
		return nil, err
	}
	return rd.MasterAddrs(), nil
}

// targetBrokers resolves -b (a broker address) or -c (a cluster) to
// broker addresses; one of them is required.
func targetBrokers(ctx context.Context, c *admin.Client, brokerAddr, cluster string) ([]string, error) {
	switch {
	case brokerAddr != "" && cluster != "":
		return nil, usageError("give -b (a broker address) or -c (a cluster), not both")
	case brokerAddr != "":
		return []string{brokerAddr}, nil
	case cluster != "":
		addrs, err := c.BrokerAddrs(ctx, cluster)
		if err != nil {
			return nil, err
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("cluster %s has no master broker", cluster)
		}
		return addrs, nil
	}
	return nil, usageError("-b (a broker address) or -c (a cluster) is required")
}

func sortedMQs[V any](m admin.MQMap[V]) []admin.MessageQueue {
	out := make([]admin.MessageQueue, 0, len(m))
	for mq := range m {
		out = append(out, mq)
	}
	slices.SortFunc(out, func(a, b admin.MessageQueue) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		if c := strings.Compare(a.BrokerName, b.BrokerName); c != 0 {
			return c
		}
		return int(a.QueueID - b.QueueID)
	})
	return out
}
