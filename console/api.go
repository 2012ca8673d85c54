package console

import (
	"context"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
)

func (c *Console) routes() {
	m := c.mux
	m.Handle("GET /api/cluster", c.api(c.cluster))
	m.Handle("GET /api/stats", c.api(c.stats))
	m.Handle("GET /api/replication", c.api(c.replication))
	m.Handle("GET /api/topics", c.api(c.topics))
	m.Handle("GET /api/topic", c.api(c.topic))
	m.Handle("POST /api/topic", c.api(c.createTopic))
	m.Handle("POST /api/topic/delete", c.api(c.deleteTopic))
	m.Handle("GET /api/groups", c.api(c.groups))
	m.Handle("GET /api/group", c.api(c.group))
	m.Handle("POST /api/group/reset", c.api(c.resetOffset))
	m.Handle("GET /api/messages", c.api(c.searchMessages))
	m.Handle("GET /api/message", c.api(c.message))
	m.Handle("POST /api/message", c.api(c.sendMessage))
	m.Handle("GET /api/dlq", c.api(c.dlq))
	m.Handle("POST /api/dlq/resend", c.api(c.resend))
}

// Broker is one broker on the cluster page.
type Broker struct {
	Cluster      string  `json:"cluster"`
	Name         string  `json:"name"`
	ID           string  `json:"id"`
	Addr         string  `json:"addr"`
	Version      string  `json:"version"`
	Uptime       string  `json:"uptime"`
	Disk         string  `json:"disk"`
	DiskRatio    float64 `json:"diskRatio"`
	PutTps       string  `json:"putTps"`
	GetTps       string  `json:"getTps"`
	PutTotal     int64   `json:"putTotal"`
	GetTotal     int64   `json:"getTotal"`
	Error        string  `json:"error,omitempty"`
	CommitLogMax int64   `json:"commitLogMaxOffset"`
}

func (c *Console) brokers(ctx context.Context, cl *admin.Client) ([]Broker, error) {
	ci, err := cl.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	var out []Broker
	for _, cluster := range slices.Sorted(maps.Keys(ci.ClusterAddrTable)) {
		names := slices.Clone(ci.ClusterAddrTable[cluster])
		slices.Sort(names)
		for _, name := range names {
			bd := ci.BrokerAddrTable[name]
			for _, id := range slices.Sorted(maps.Keys(bd.BrokerAddrs)) {
				b := Broker{Cluster: cluster, Name: name, ID: id, Addr: bd.BrokerAddrs[id]}
				info, err := cl.RuntimeInfo(ctx, b.Addr)
				if err != nil {
					b.Error = err.Error()
				} else {
					b.Version, b.Uptime, b.Disk = info["brokerVersionDesc"], uptimeText(info["runtime"]), diskText(info["commitLogDirCapacity"])
					b.DiskRatio, _ = strconv.ParseFloat(info["commitLogDiskRatio"], 64)
					b.PutTps, b.GetTps = info["putTps"], info["getTransferedTps"]
					b.PutTotal, _ = strconv.ParseInt(info["msgPutTotalTodayNow"], 10, 64)
					b.GetTotal, _ = strconv.ParseInt(info["msgGetTotalTodayNow"], 10, 64)
					b.CommitLogMax, _ = strconv.ParseInt(info["commitLogMaxOffset"], 10, 64)
				}
				out = append(out, b)
			}
		}
	}
	return out, nil
}

func (c *Console) cluster(r *http.Request, cl *admin.Client) (any, error) {
	return c.brokers(r.Context(), cl)
}

// Stats is one sample for the live charts: the messages the brokers
// stored for sends and delivered to consumers since they started
// (msgPutTotalTodayNow, msgGetTotalTodayNow), which the page turns into
// rates.
type Stats struct {
	At       int64 `json:"at"`
	PutTotal int64 `json:"putTotal"`
	GetTotal int64 `json:"getTotal"`
}

// stats answers /api/stats with the sampled history; the first request
// starts the sampler when New did not, and takes a sample itself when
// there is none yet.
func (c *Console) stats(r *http.Request, cl *admin.Client) (any, error) {
	c.startHistory(cl)
	h := c.hist.snapshot()
	if len(h) == 0 {
		s, err := c.totals(r.Context(), cl)
		if err != nil {
			return nil, err
		}
		h = []Stats{s}
	}
	return History{Samples: h}, nil
}

// totals sums the brokers' message totals now.
func (c *Console) totals(ctx context.Context, cl *admin.Client) (Stats, error) {
	bs, err := c.brokers(ctx, cl)
	if err != nil {
		return Stats{}, err
	}
	s := Stats{At: c.cfg.Clock.Now().UnixMilli()}
	for _, b := range bs {
		s.PutTotal += b.PutTotal
		s.GetTotal += b.GetTotal
	}
	return s, nil
}

// TopicSummary is a row of the topics page.
type TopicSummary struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"` // normal, retry, dlq, system
	Queues int    `json:"queues"`
	Perm   int    `json:"perm"`
}

var systemTopicNames = map[string]bool{record.DefaultTopic: true, record.SelfTestTopic: true, record.OffsetMovedEventTopic: true,
	record.ScheduleTopic: true, record.TransHalfTopic: true, record.TransOpHalfTopic: true,
	record.TransCheckMaxTimeTopic: true, record.TraceTopic: true, record.BenchmarkTopic: true}

// replyTopicSuffix ends the request-reply topic a broker creates for its
// cluster ({cluster}_REPLY_TOPIC, RocketMQ's REPLY_TOPIC_POSTFIX).
const replyTopicSuffix = "_REPLY_TOPIC"

func topicKind(name string) string {
	switch {
	case strings.HasPrefix(name, record.RetryGroupTopicPrefix):
		return "retry"
	case strings.HasPrefix(name, record.DLQGroupTopicPrefix):
		return "dlq"
	case systemTopicNames[name] || strings.HasPrefix(name, "rmq_sys_") || strings.HasSuffix(name, replyTopicSuffix):
		return "system"
	}
	return "normal"
}

func (c *Console) topics(r *http.Request, cl *admin.Client) (any, error) {
	ctx := r.Context()
	addrs, err := cl.BrokerAddrs(ctx, "")
	if err != nil {
		return nil, err
	}
	byName := map[string]TopicSummary{}
	for _, a := range addrs {
		w, err := cl.AllTopicConfig(ctx, a)
		if err != nil {
			return nil, err
		}
		for n, tc := range w.TopicConfigTable {
			t := byName[n]
			t.Name, t.Kind, t.Perm = n, topicKind(n), tc.Perm
			t.Queues += tc.WriteQueueNums
			byName[n] = t
		}
	}
	out := make([]TopicSummary, 0, len(byName))
	for _, n := range slices.Sorted(maps.Keys(byName)) {
		out = append(out, byName[n])
	}
	return out, nil
}

// Queue is a queue of a topic with its offsets.
type Queue struct {
	Broker      string `json:"broker"`
	QueueID     int32  `json:"queueId"`
	MinOffset   int64  `json:"minOffset"`
	MaxOffset   int64  `json:"maxOffset"`
	LastUpdated int64  `json:"lastUpdated"`
}

// topicAddrs returns the brokers of topic by name, or a 404.
func topicAddrs(ctx context.Context, cl *admin.Client, topic string) (map[string]string, error) {
	if topic == "" {
		return nil, badInput("no topic given")
	}
	rd, err := cl.TopicRoute(ctx, topic)
	if admin.IsCode(err, 17) {
		return nil, notFound("topic %s does not exist", topic)
	}
	if err != nil {
		return nil, err
	}
	return rd.MasterAddrs(), nil
}

func (c *Console) topic(r *http.Request, cl *admin.Client) (any, error) {
	ctx := r.Context()
	topic := r.URL.Query().Get("topic")
	brokers, err := topicAddrs(ctx, cl, topic)
	if err != nil {
		return nil, err
	}
	queues := []Queue{}
	for _, name := range slices.Sorted(maps.Keys(brokers)) {
		ts, err := cl.TopicStats(ctx, brokers[name], topic)
		if err != nil {
			return nil, err
		}
		for mq, o := range ts.OffsetTable {
			queues = append(queues, Queue{mq.BrokerName, mq.QueueID, o.MinOffset, o.MaxOffset, o.LastUpdateTimestamp})
		}
	}
	slices.SortFunc(queues, func(a, b Queue) int {
		if c := strings.Compare(a.Broker, b.Broker); c != 0 {
			return c
		}
		return int(a.QueueID - b.QueueID)
	})
	groups, err := consumersOf(ctx, cl, brokers, topic)
	if err != nil {
		return nil, err
	}
	timers, err := timersPending(ctx, cl, brokers, topic)
	if err != nil {
		return nil, err
	}
	return map[string]any{"topic": topic, "queues": queues, "groups": groups, "timersPending": timers}, nil
}

// timersPending sums the topic's pending timer messages over its brokers
// (GET_TIMER_METRICS); nil when none of them serves it (RocketMQ 4.x).
func timersPending(ctx context.Context, cl *admin.Client, brokers map[string]string, topic string) (*int64, error) {
	var total *int64
	for _, addr := range brokers {
		tm, err := cl.TimerMetrics(ctx, addr)
		if admin.IsCode(err, remoting.CodeRequestCodeNotSupported) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if total == nil {
			total = new(int64)
		}
		*total += tm.TimingCount[topic].Count
	}
	return total, nil
}

// consumersOf asks the topic's brokers which groups consume it.
func consumersOf(ctx context.Context, cl *admin.Client, brokers map[string]string, topic string) ([]string, error) {
	set := map[string]bool{}
	for _, a := range brokers {
		resp, err := cl.Invoke(ctx, a, admin.CodeQueryTopicConsumeByWho, nil, "topic", topic)
		if err != nil {
			return nil, err
		}
		var gl admin.GroupList
		if err := admin.Unmarshal(resp.Body, &gl); err != nil {
			return nil, err
		}
		for _, g := range gl.GroupList {
			set[g] = true
		}
	}
	out := slices.Sorted(maps.Keys(set))
	if out == nil {
		out = []string{}
	}
	return out, nil
}

var validName = regexp.MustCompile(`^[%|a-zA-Z0-9_-]{1,127}$`)

// CreateTopic is the create-topic form.
type CreateTopic struct {
	Topic          string `json:"topic"`
	ReadQueueNums  int    `json:"readQueueNums"`
	WriteQueueNums int    `json:"writeQueueNums"`
	Perm           int    `json:"perm"`
}

func (c *Console) createTopic(r *http.Request, cl *admin.Client) (any, error) {
	var f CreateTopic
	if err := decodeBody(r, &f); err != nil {
		return nil, err
	}
	switch {
	case !validName.MatchString(f.Topic):
		return nil, badInput("topic name %q: 1 to 127 of the characters a-z A-Z 0-9 _ - %% |", f.Topic)
	case f.ReadQueueNums < 1 || f.ReadQueueNums > 1024 || f.WriteQueueNums < 1 || f.WriteQueueNums > 1024:
		return nil, badInput("queue numbers %d/%d: between 1 and 1024", f.ReadQueueNums, f.WriteQueueNums)
	case f.Perm != 2 && f.Perm != 4 && f.Perm != 6:
		return nil, badInput("perm %d: 2 (write), 4 (read) or 6 (read and write)", f.Perm)
	}
	addrs, err := cl.BrokerAddrs(r.Context(), "")
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if err := cl.CreateTopic(r.Context(), a, admin.TopicConfig{TopicName: f.Topic, ReadQueueNums: f.ReadQueueNums,
			WriteQueueNums: f.WriteQueueNums, Perm: f.Perm}); err != nil {
			return nil, err
		}
	}
	c.log.Info("console: topic created", "topic", f.Topic, "brokers", addrs)
	return map[string]any{"created": f.Topic, "brokers": addrs}, nil
}

func (c *Console) deleteTopic(r *http.Request, cl *admin.Client) (any, error) {
	var f struct {
		Topic string `json:"topic"`
	}
	if err := decodeBody(r, &f); err != nil {
		return nil, err
	}
	brokers, err := topicAddrs(r.Context(), cl, f.Topic)
	if err != nil {
		return nil, err
	}
	if k := topicKind(f.Topic); k == "system" {
		return nil, badInput("topic %s is a system topic", f.Topic)
	}
	if err := cl.DeleteTopic(r.Context(), slices.Collect(maps.Values(brokers)), f.Topic); err != nil {
		return nil, err
	}
	c.log.Info("console: topic deleted", "topic", f.Topic)
	return map[string]any{"deleted": f.Topic}, nil
}

// GroupSummary is a row of the groups page.
type GroupSummary struct {
	Name   string `json:"name"`
	Online int    `json:"online"`
	Lag    int64  `json:"lag"`
	Topics int    `json:"topics"`
	HasDLQ bool   `json:"hasDlq"`
	System bool   `json:"system"`
}

var systemGroups = map[string]bool{"TOOLS_CONSUMER": true, "FILTERSRV_CONSUMER": true, "SELF_TEST_C_GROUP": true,
	"CID_ONS-HTTP-PROXY": true, "CID_ONSAPI_PULL": true, "CID_ONSAPI_PERMISSION": true, "CID_ONSAPI_OWNER": true,
	"CID_RMQ_SYS_TRANS": true}

func (c *Console) groups(r *http.Request, cl *admin.Client) (any, error) {
	ctx := r.Context()
	addrs, err := cl.BrokerAddrs(ctx, "")
	if err != nil {
		return nil, err
	}
	byName := map[string]*GroupSummary{}
	dlq := map[string]bool{}
	for _, a := range addrs {
		w, err := cl.AllSubscriptionGroups(ctx, a)
		if err != nil {
			return nil, err
		}
		for n := range w.SubscriptionGroupTable {
			byName[n] = &GroupSummary{Name: n, System: systemGroups[n]}
		}
		// Groups known only by their committed offsets count too.
		offsets, err := cl.AllConsumerOffsets(ctx, a)
		if err != nil {
			return nil, err
		}
		for k := range offsets.OffsetTable {
			if i := strings.LastIndex(k, "@"); i >= 0 && byName[k[i+1:]] == nil {
				byName[k[i+1:]] = &GroupSummary{Name: k[i+1:], System: systemGroups[k[i+1:]]}
			}
		}
		tw, err := cl.AllTopicConfig(ctx, a)
		if err != nil {
			return nil, err
		}
		for t := range tw.TopicConfigTable {
			if g, ok := strings.CutPrefix(t, record.DLQGroupTopicPrefix); ok {
				dlq[g] = true
			}
		}
	}
	out := []GroupSummary{}
	for _, n := range slices.Sorted(maps.Keys(byName)) {
		g := byName[n]
		g.HasDLQ = dlq[n]
		topics := map[string]bool{}
		for _, a := range addrs {
			if cs, err := cl.ConsumeStats(ctx, a, n, ""); err == nil {
				g.Lag += cs.Diff()
				for mq := range cs.OffsetTable {
					topics[mq.Topic] = true
				}
			}
			if cc, err := cl.ConsumerConnection(ctx, a, n); err == nil {
				g.Online = max(g.Online, len(cc.ConnectionSet))
			}
		}
		g.Topics = len(topics)
		out = append(out, *g)
	}
	return out, nil
}

// GroupQueue is one queue of a group's progress.
type GroupQueue struct {
	Topic          string `json:"topic"`
	Broker         string `json:"broker"`
	QueueID        int32  `json:"queueId"`
	BrokerOffset   int64  `json:"brokerOffset"`
	ConsumerOffset int64  `json:"consumerOffset"`
	Lag            int64  `json:"lag"`
	LastTimestamp  int64  `json:"lastTimestamp"`
}

func (c *Console) group(r *http.Request, cl *admin.Client) (any, error) {
	ctx := r.Context()
	name := r.URL.Query().Get("group")
	if name == "" {
		return nil, badInput("no group given")
	}
	addrs, err := cl.BrokerAddrs(ctx, "")
	if err != nil {
		return nil, err
	}
	queues := []GroupQueue{}
	conns := []admin.Connection{}
	subs := map[string]string{}
	var total int64
	var found bool
	for _, a := range addrs {
		w, err := cl.AllSubscriptionGroups(ctx, a)
		if err != nil {
			return nil, err
		}
		_, ok := w.SubscriptionGroupTable[name]
		found = found || ok
		cs, err := cl.ConsumeStats(ctx, a, name, "")
		if err != nil {
			return nil, err
		}
		for mq, o := range cs.OffsetTable {
			q := GroupQueue{mq.Topic, mq.BrokerName, mq.QueueID, o.BrokerOffset, o.ConsumerOffset, o.BrokerOffset - o.ConsumerOffset, o.LastTimestamp}
			total += q.Lag
			queues = append(queues, q)
		}
		if cc, err := cl.ConsumerConnection(ctx, a, name); err == nil {
			conns = append(conns, cc.ConnectionSet...)
			for t, sd := range cc.SubscriptionTable {
				subs[t] = sd.SubString
			}
		}
	}
	if !found && len(queues) == 0 {
		return nil, notFound("consumer group %s does not exist", name)
	}
	slices.SortFunc(queues, func(a, b GroupQueue) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.QueueID - b.QueueID)
	})
	return map[string]any{"group": name, "queues": queues, "lag": total, "connections": conns, "subscriptions": subs}, nil
}

// ResetOffset is the reset-offset form: Time is RFC 3339, "now", "end",
// "start" or ms since the epoch.
type ResetOffset struct {
	Group string `json:"group"`
	Topic string `json:"topic"`
	Time  string `json:"time"`
}

// parseResetTime reads the reset form's time; -1 means the end.
func parseResetTime(s string) (int64, error) {
	switch s {
	case "start":
		return 0, nil
	case "end":
		return -1, nil
	case "now":
		return time.Now().UnixMilli(), nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil && ms >= 0 {
		return ms, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, badInput("time %q: want start, end, now, milliseconds since the epoch or YYYY-MM-DDThh:mm[:ss] (local time)", s)
}

func (c *Console) resetOffset(r *http.Request, cl *admin.Client) (any, error) {
	var f ResetOffset
	if err := decodeBody(r, &f); err != nil {
		return nil, err
	}
	if f.Group == "" {
		return nil, badInput("no group given")
	}
	ts, err := parseResetTime(f.Time)
	if err != nil {
		return nil, err
	}
	brokers, err := topicAddrs(r.Context(), cl, f.Topic)
	if err != nil {
		return nil, err
	}
	type row struct {
		Broker  string `json:"broker"`
		QueueID int32  `json:"queueId"`
		Offset  int64  `json:"offset"`
	}
	rows := []row{}
	for _, name := range slices.Sorted(maps.Keys(brokers)) {
		table, err := cl.ResetOffsetByTime(r.Context(), brokers[name], f.Group, f.Topic, ts, true)
		if err != nil {
			return nil, badInput("%v", err)
		}
		for mq, off := range table {
			rows = append(rows, row{mq.BrokerName, mq.QueueID, off})
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return int(a.QueueID - b.QueueID) })
	c.log.Info("console: offsets reset", "group", f.Group, "topic", f.Topic, "time", ts)
	return map[string]any{"group": f.Group, "topic": f.Topic, "offsets": rows}, nil
}
