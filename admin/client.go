package admin

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
)

// Request codes the client sends (RocketMQ 4.9's RequestCode).
const (
	CodeSendMessageV2                  int32 = 310
	CodePullMessage                    int32 = 11
	CodeQueryMessage                   int32 = 12
	CodeQueryConsumerOffset            int32 = 14
	CodeUpdateConsumerOffset           int32 = 15
	CodeUpdateAndCreateTopic           int32 = 17
	CodeGetAllTopicConfig              int32 = 21
	CodeGetBrokerConfig                int32 = 26
	CodeGetBrokerRuntimeInfo           int32 = 28
	CodeGetAllConsumerOffset           int32 = 43
	CodeGetTimerMetrics                int32 = 61
	CodeSearchOffsetByTimestamp        int32 = 29
	CodeGetMaxOffset                   int32 = 30
	CodeGetMinOffset                   int32 = 31
	CodeViewMessageByID                int32 = 33
	CodeGetRouteInfoByTopic            int32 = 105
	CodeGetBrokerClusterInfo           int32 = 106
	CodeUpdateAndCreateSubscriptionGrp int32 = 200
	CodeGetAllSubscriptionGroupConfig  int32 = 201
	CodeGetTopicStatsInfo              int32 = 202
	CodeGetConsumerConnectionList      int32 = 203
	CodeGetProducerConnectionList      int32 = 204
	CodeGetAllTopicListFromNamesrv     int32 = 206
	CodeDeleteSubscriptionGroup        int32 = 207
	CodeGetConsumeStats                int32 = 208
	CodeDeleteTopicInBroker            int32 = 215
	CodeDeleteTopicInNamesrv           int32 = 216
	CodeInvokeBrokerToResetOffset      int32 = 222
	CodeQueryTopicConsumeByWho         int32 = 300
	CodeQueryConsumeTimeSpan           int32 = 303
	CodeViewBrokerStatsData            int32 = 315
	CodeConsumerNotOnline              int32 = 206 // a response code
	codeSuccess                        int32 = 0
	CodeQueryNotFound                  int32 = 22 // a response code
	codePullNotFound                   int32 = 19
	codePullRetryImmediately           int32 = 20
	codePullOffsetMoved                int32 = 21
)

// ResponseError is a response other than SUCCESS.
type ResponseError struct {
	Code   int32
	Remark string
	Addr   string
}

func (e *ResponseError) Error() string {
	return fmt.Sprintf("%s answered code %d: %s", e.Addr, e.Code, e.Remark)
}

// IsCode reports whether err is a ResponseError with the given code.
func IsCode(err error, code int32) bool {
	var re *ResponseError
	return errors.As(err, &re) && re.Code == code
}

// Client sends admin requests to name servers and brokers, one connection
// per address, as mqadmin's DefaultMQAdminExt does. It is safe for
// concurrent use.
type Client struct {
	namesrv []string
	timeout time.Duration
	opts    remoting.ClientOptions
	// Sign, if set, is called on every request before it is sent (an ACL
	// hook: it adds AccessKey and Signature fields).
	Sign func(*remoting.RemotingCommand)

	mu    sync.Mutex
	conns map[string]*remoting.Client
}

// NewClient returns a client for the name servers (at least one
// "host:port"). timeout bounds each request (0: 5 s).
func NewClient(namesrv []string, timeout time.Duration) (*Client, error) {
	if len(namesrv) == 0 {
		return nil, errors.New("admin: no name server address")
	}
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	return &Client{namesrv: namesrv, timeout: timeout, conns: map[string]*remoting.Client{}}, nil
}

// NameServers returns the name-server addresses.
func (c *Client) NameServers() []string { return c.namesrv }

// Close closes every connection.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for a, cl := range c.conns {
		errs = append(errs, cl.Close())
		delete(c.conns, a)
	}
	return errors.Join(errs...)
}

func (c *Client) conn(ctx context.Context, addr string) (*remoting.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.conns[addr]; ok {
		select {
		case <-cl.Conn().Done():
			delete(c.conns, addr)
		default:
			return cl, nil
		}
	}
	dctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	cl, err := remoting.Dial(dctx, addr, c.opts)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", addr, err)
	}
	c.conns[addr] = cl
	return cl, nil
}

// Invoke sends a request with ext fields (name, value pairs) and body to
// addr and returns the response; a response other than SUCCESS is a
// *ResponseError.
func (c *Client) Invoke(ctx context.Context, addr string, code int32, body []byte, kv ...string) (*remoting.RemotingCommand, error) {
	req := remoting.NewRequest(code, body)
	for i := 0; i+1 < len(kv); i += 2 {
		req.SetExt(kv[i], kv[i+1])
	}
	if c.Sign != nil {
		c.Sign(req)
	}
	cl, err := c.conn(ctx, addr)
	if err != nil {
		return nil, err
	}
	ictx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	resp, err := cl.Invoke(ictx, req)
	if err != nil {
		return nil, fmt.Errorf("request %d to %s: %w", code, addr, err)
	}
	if resp.Code != codeSuccess {
		return resp, &ResponseError{Code: resp.Code, Remark: resp.Remark, Addr: addr}
	}
	return resp, nil
}

// invokeNamesrv tries each name server in turn.
func (c *Client) invokeNamesrv(ctx context.Context, code int32, body []byte, kv ...string) (*remoting.RemotingCommand, error) {
	var last error
	for _, a := range c.namesrv {
		resp, err := c.Invoke(ctx, a, code, body, kv...)
		var re *ResponseError
		if err == nil || errors.As(err, &re) {
			return resp, err
		}
		last = err
	}
	return nil, last
}

func decode(resp *remoting.RemotingCommand, v any) error {
	if err := Unmarshal(resp.Body, v); err != nil {
		return fmt.Errorf("admin: response %d body: %w", resp.Code, err)
	}
	return nil
}

// ClusterInfo asks the name server for the clusters and brokers.
func (c *Client) ClusterInfo(ctx context.Context) (*ClusterInfo, error) {
	resp, err := c.invokeNamesrv(ctx, CodeGetBrokerClusterInfo, nil)
	if err != nil {
		return nil, err
	}
	var ci ClusterInfo
	return &ci, decode(resp, &ci)
}

// BrokerAddrs returns the master address of every broker (of cluster, or
// of all clusters when cluster is ""), sorted by broker name.
func (c *Client) BrokerAddrs(ctx context.Context, cluster string) ([]string, error) {
	ci, err := c.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	if cluster == "" {
		for n := range ci.BrokerAddrTable {
			names = append(names, n)
		}
	} else {
		var ok bool
		if names, ok = ci.ClusterAddrTable[cluster]; !ok {
			return nil, fmt.Errorf("cluster %q not found (the name server knows %d cluster(s))", cluster, len(ci.ClusterAddrTable))
		}
	}
	slices.Sort(names)
	var out []string
	for _, n := range names {
		if a, ok := ci.BrokerAddrTable[n].BrokerAddrs["0"]; ok {
			out = append(out, a)
		}
	}
	return out, nil
}

// TopicList asks the name server for every topic.
func (c *Client) TopicList(ctx context.Context) ([]string, error) {
	resp, err := c.invokeNamesrv(ctx, CodeGetAllTopicListFromNamesrv, nil)
	if err != nil {
		return nil, err
	}
	var tl TopicList
	if err := decode(resp, &tl); err != nil {
		return nil, err
	}
	slices.Sort(tl.TopicList)
	return tl.TopicList, nil
}

// TopicRoute asks the name server for a topic's route.
func (c *Client) TopicRoute(ctx context.Context, topic string) (*TopicRouteData, error) {
	resp, err := c.invokeNamesrv(ctx, CodeGetRouteInfoByTopic, nil, "topic", topic)
	if err != nil {
		return nil, err
	}
	var rd TopicRouteData
	return &rd, decode(resp, &rd)
}

// TopicBrokers returns the master addresses of the brokers that hold topic.
func (c *Client) TopicBrokers(ctx context.Context, topic string) ([]string, error) {
	rd, err := c.TopicRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(maps.Values(rd.MasterAddrs())), nil
}

// TopicStats asks a broker for a topic's queue offsets.
func (c *Client) TopicStats(ctx context.Context, addr, topic string) (*TopicStatsTable, error) {
	resp, err := c.Invoke(ctx, addr, CodeGetTopicStatsInfo, nil, "topic", topic)
	if err != nil {
		return nil, err
	}
	var t TopicStatsTable
	return &t, decode(resp, &t)
}

// ConsumeStats asks a broker for a group's offsets (topic "" for all).
func (c *Client) ConsumeStats(ctx context.Context, addr, group, topic string) (*ConsumeStats, error) {
	kv := []string{"consumerGroup", group}
	if topic != "" {
		kv = append(kv, "topic", topic)
	}
	resp, err := c.Invoke(ctx, addr, CodeGetConsumeStats, nil, kv...)
	if err != nil {
		return nil, err
	}
	var cs ConsumeStats
	return &cs, decode(resp, &cs)
}

// ConsumerConnection asks a broker for a group's online clients.
func (c *Client) ConsumerConnection(ctx context.Context, addr, group string) (*ConsumerConnection, error) {
	resp, err := c.Invoke(ctx, addr, CodeGetConsumerConnectionList, nil, "consumerGroup", group)
	if err != nil {
		return nil, err
	}
	var cc ConsumerConnection
	return &cc, decode(resp, &cc)
}

// ProducerConnection asks a broker for a producer group's clients.
func (c *Client) ProducerConnection(ctx context.Context, addr, group string) (*ProducerConnection, error) {
	resp, err := c.Invoke(ctx, addr, CodeGetProducerConnectionList, nil, "producerGroup", group)
	if err != nil {
		return nil, err
	}
	var pc ProducerConnection
	return &pc, decode(resp, &pc)
}

// RuntimeInfo asks a broker for its runtime information.
func (c *Client) RuntimeInfo(ctx context.Context, addr string) (map[string]string, error) {
	resp, err := c.Invoke(ctx, addr, CodeGetBrokerRuntimeInfo, nil)
	if err != nil {
		return nil, err
	}
	var kv KVTable
	return kv.Table, decode(resp, &kv)
}

// TimerMetrics asks a broker for its pending timer messages by topic
// (GET_TIMER_METRICS, RocketMQ 5.x).
func (c *Client) TimerMetrics(ctx context.Context, addr string) (*TimerMetrics, error) {
	resp, err := c.Invoke(ctx, addr, CodeGetTimerMetrics, nil)
	if err != nil {
		return nil, err
	}
	var tm TimerMetrics
	return &tm, decode(resp, &tm)
}

// AllTopicConfig asks a broker for its topic table.
func (c *Client) AllTopicConfig(ctx context.Context, addr string) (*TopicConfigSerializeWrapper, error) {
	resp, err := c.Invoke(ctx, addr, CodeGetAllTopicConfig, nil)
	if err != nil {
		return nil, err
	}
	var w TopicConfigSerializeWrapper
	return &w, decode(resp, &w)
}

// AllSubscriptionGroups asks a broker for its subscription groups.
func (c *Client) AllSubscriptionGroups(ctx context.Context, addr string) (*SubscriptionGroupWrapper, error) {
	resp, err := c.Invoke(ctx, addr, CodeGetAllSubscriptionGroupConfig, nil)
	if err != nil {
		return nil, err
	}
	var w SubscriptionGroupWrapper
	return &w, decode(resp, &w)
}

// AllConsumerOffsets asks a broker for its consumer offset table.
func (c *Client) AllConsumerOffsets(ctx context.Context, addr string) (*ConsumerOffsetSerializeWrapper, error) {
	resp, err := c.Invoke(ctx, addr, CodeGetAllConsumerOffset, nil)
	if err != nil {
		return nil, err
	}
	var w ConsumerOffsetSerializeWrapper
	return &w, decode(resp, &w)
}

// CreateTopic creates or updates a topic on a broker.
func (c *Client) CreateTopic(ctx context.Context, addr string, tc TopicConfig) error {
	return c.CreateTopicWithAttributes(ctx, addr, tc, "")
}

// CreateTopicWithAttributes creates or updates a topic on a broker and
// alters its 5.x attributes by mods, in mqadmin's -a form
// ("+message.type=FIFO,-key"; "" changes none).
func (c *Client) CreateTopicWithAttributes(ctx context.Context, addr string, tc TopicConfig, mods string) error {
	if tc.TopicFilterType == "" {
		tc.TopicFilterType = "SINGLE_TAG"
	}
	fields := []string{"topic", tc.TopicName, "defaultTopic", record.DefaultTopic, "readQueueNums", strconv.Itoa(tc.ReadQueueNums),
		"writeQueueNums", strconv.Itoa(tc.WriteQueueNums), "perm", strconv.Itoa(tc.Perm),
		"topicFilterType", tc.TopicFilterType, "topicSysFlag", strconv.Itoa(tc.TopicSysFlag),
		"order", strconv.FormatBool(tc.Order)}
	if mods != "" {
		fields = append(fields, "attributes", mods)
	}
	_, err := c.Invoke(ctx, addr, CodeUpdateAndCreateTopic, nil, fields...)
	return err
}

// DeleteTopic deletes a topic on each broker, then on the name servers.
func (c *Client) DeleteTopic(ctx context.Context, brokers []string, topic string) error {
	for _, a := range brokers {
		if _, err := c.Invoke(ctx, a, CodeDeleteTopicInBroker, nil, "topic", topic); err != nil {
			return err
		}
	}
	for _, a := range c.namesrv {
		if _, err := c.Invoke(ctx, a, CodeDeleteTopicInNamesrv, nil, "topic", topic); err != nil {
			return err
		}
	}
	return nil
}

// UpdateSubscriptionGroup creates or updates a group on a broker.
func (c *Client) UpdateSubscriptionGroup(ctx context.Context, addr string, g SubscriptionGroupConfig) error {
	body, err := json.Marshal(g)
	if err != nil {
		return err
	}
	_, err = c.Invoke(ctx, addr, CodeUpdateAndCreateSubscriptionGrp, body)
	return err
}

// DeleteSubscriptionGroup deletes a group on a broker.
func (c *Client) DeleteSubscriptionGroup(ctx context.Context, addr, group string, removeOffset bool) error {
	_, err := c.Invoke(ctx, addr, CodeDeleteSubscriptionGroup, nil, "groupName", group, "removeOffset", strconv.FormatBool(removeOffset))
	return err
}

// QueueOffset asks a broker for a queue's max (max) or min offset.
func (c *Client) QueueOffset(ctx context.Context, addr, topic string, qid int32, maxOffset bool) (int64, error) {
	code := CodeGetMinOffset
	if maxOffset {
		code = CodeGetMaxOffset
	}
	resp, err := c.Invoke(ctx, addr, code, nil, "topic", topic, "queueId", strconv.Itoa(int(qid)))
	if err != nil {
		return 0, err
	}
	return resp.ExtInt64("offset")
}

// SearchOffset asks a broker for the first offset of a queue stored at
// or after ts (ms).
func (c *Client) SearchOffset(ctx context.Context, addr, topic string, qid int32, ts int64) (int64, error) {
	resp, err := c.Invoke(ctx, addr, CodeSearchOffsetByTimestamp, nil, "topic", topic, "queueId", strconv.Itoa(int(qid)),
		"timestamp", strconv.FormatInt(ts, 10))
	if err != nil {
		return 0, err
	}
	return resp.ExtInt64("offset")
}

// ConsumerOffset asks a broker for a group's committed offset of a queue
// (a *ResponseError with code 22, QUERY_NOT_FOUND, when it has none).
func (c *Client) ConsumerOffset(ctx context.Context, addr, group, topic string, qid int32) (int64, error) {
	resp, err := c.Invoke(ctx, addr, CodeQueryConsumerOffset, nil, "consumerGroup", group, "topic", topic,
		"queueId", strconv.Itoa(int(qid)))
	if err != nil {
		return 0, err
	}
	return resp.ExtInt64("offset")
}

// UpdateConsumerOffset sets a group's committed offset of a queue.
func (c *Client) UpdateConsumerOffset(ctx context.Context, addr, group, topic string, qid int32, off int64) error {
	_, err := c.Invoke(ctx, addr, CodeUpdateConsumerOffset, nil, "consumerGroup", group, "topic", topic,
		"queueId", strconv.Itoa(int(qid)), "commitOffset", strconv.FormatInt(off, 10))
	return err
}

// ResetOffsetByTime moves a group's offsets of topic on one broker to the
// first message stored at or after ts (ms; -1: the end). With online
// consumers the broker tells them (INVOKE_BROKER_TO_RESET_OFFSET);
// without, the offsets are updated on the broker queue by queue, as
// mqadmin's resetOffsetByTime falls back to. It returns the new offsets.
func (c *Client) ResetOffsetByTime(ctx context.Context, addr, group, topic string, ts int64, force bool) (MQMap[int64], error) {
	resp, err := c.Invoke(ctx, addr, CodeInvokeBrokerToResetOffset, nil, "topic", topic, "group", group,
		"timestamp", strconv.FormatInt(ts, 10), "isForce", strconv.FormatBool(force))
	if err == nil {
		var body ResetOffsetBody
		return body.OffsetTable, decode(resp, &body)
	}
	if !IsCode(err, CodeConsumerNotOnline) {
		return nil, err
	}
	// Offline: compute the plan as the broker does, then update.
	stats, err := c.TopicStats(ctx, addr, topic)
	if err != nil {
		return nil, err
	}
	plan := MQMap[int64]{}
	known := 0
	for mq, to := range stats.OffsetTable {
		cur, err := c.ConsumerOffset(ctx, addr, group, topic, mq.QueueID)
		switch {
		case IsCode(err, CodeQueryNotFound):
			cur = -1
		case err != nil:
			return nil, err
		default:
			known++
		}
		target := to.MaxOffset
		if ts != -1 {
			if target, err = c.SearchOffset(ctx, addr, topic, mq.QueueID, ts); err != nil {
				return nil, err
			}
		}
		if !force && cur >= 0 && target >= cur {
			target = cur
		}
		plan[mq] = target
	}
	if known == 0 {
		return nil, fmt.Errorf("consumer group %s has no offset for topic %s on %s: nothing to reset", group, topic, addr)
	}
	for mq, off := range plan {
		if err := c.UpdateConsumerOffset(ctx, addr, group, topic, mq.QueueID, off); err != nil {
			return nil, err
		}
	}
	return plan, nil
}

// ViewMessage fetches the message at a CommitLog offset from a broker.
func (c *Client) ViewMessage(ctx context.Context, addr string, commitLogOffset int64) (*record.MessageExt, error) {
	resp, err := c.Invoke(ctx, addr, CodeViewMessageByID, nil, "offset", strconv.FormatInt(commitLogOffset, 10))
	if err != nil {
		return nil, err
	}
	msgs, err := DecodeMessages(resp.Body)
	if err != nil {
		return nil, err
	}
	if len(msgs) != 1 {
		return nil, fmt.Errorf("view message: %d records in the answer", len(msgs))
	}
	return msgs[0], nil
}

// ViewMessageByID fetches a message by its offset message id (the id
// holds the broker address and the CommitLog offset).
func (c *Client) ViewMessageByID(ctx context.Context, msgID string) (*record.MessageExt, error) {
	host, off, err := record.ParseOffsetMsgID(msgID)
	if err != nil {
		return nil, fmt.Errorf("message id %q is not an offset message id (32 hex digits: broker IP, port, CommitLog offset): %w", msgID, err)
	}
	return c.ViewMessage(ctx, host.String(), off)
}

// QueryMessage asks a broker for the messages of topic with a key (KEYS
// or UNIQ_KEY) stored in [begin, end] (ms).
func (c *Client) QueryMessage(ctx context.Context, addr, topic, key string, maxNum int, begin, end int64) ([]*record.MessageExt, error) {
	resp, err := c.Invoke(ctx, addr, CodeQueryMessage, nil, "topic", topic, "key", key, "maxNum", strconv.Itoa(maxNum),
		"beginTimestamp", strconv.FormatInt(begin, 10), "endTimestamp", strconv.FormatInt(end, 10))
	if IsCode(err, CodeQueryNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return DecodeMessages(resp.Body)
}

// PullResult is what Pull found.
type PullResult struct {
	Messages        []*record.MessageExt
	NextBeginOffset int64
	MinOffset       int64
	MaxOffset       int64
	// Status: "FOUND", "NO_NEW_MSG", "NO_MATCHED_MSG" or "OFFSET_ILLEGAL".
	Status string
}

// Pull reads up to maxNums messages of a queue from offset, as group,
// without holding the request and without committing an offset.
func (c *Client) Pull(ctx context.Context, addr, group, topic string, qid int32, offset int64, maxNums int) (*PullResult, error) {
	resp, err := c.Invoke(ctx, addr, CodePullMessage, nil, "consumerGroup", group, "topic", topic,
		"queueId", strconv.Itoa(int(qid)), "queueOffset", strconv.FormatInt(offset, 10), "maxMsgNums", strconv.Itoa(maxNums),
		"sysFlag", "4", "commitOffset", "0", "suspendTimeoutMillis", "0", "subscription", "*", "subVersion", "0",
		"expressionType", "TAG")
	var re *ResponseError
	if err != nil && !errors.As(err, &re) {
		return nil, err
	}
	r := &PullResult{}
	r.NextBeginOffset, _ = resp.ExtInt64("nextBeginOffset")
	r.MinOffset, _ = resp.ExtInt64("minOffset")
	r.MaxOffset, _ = resp.ExtInt64("maxOffset")
	switch resp.Code {
	case codeSuccess:
		r.Status = "FOUND"
		if r.Messages, err = DecodeMessages(resp.Body); err != nil {
			return nil, err
		}
	case codePullNotFound:
		r.Status = "NO_NEW_MSG"
	case codePullRetryImmediately:
		r.Status = "NO_MATCHED_MSG"
	case codePullOffsetMoved:
		r.Status = "OFFSET_ILLEGAL"
	default:
		return nil, err
	}
	return r, nil
}

// SendResult is a send's answer.
type SendResult struct {
	MsgID       string // the offset message id
	QueueID     int32
	QueueOffset int64
}

// SendMessage sends one message to a queue of a broker (SEND_MESSAGE_V2).
func (c *Client) SendMessage(ctx context.Context, addr, producerGroup string, m *record.Message) (*SendResult, error) {
	props := string(record.AppendProperties(nil, m.Properties))
	resp, err := c.Invoke(ctx, addr, CodeSendMessageV2, m.Body, "a", producerGroup, "b", m.Topic, "c", record.DefaultTopic, "d", "4",
		"e", strconv.Itoa(int(m.QueueID)), "f", "0", "g", strconv.FormatInt(time.Now().UnixMilli(), 10),
		"h", strconv.Itoa(int(m.Flag)), "i", props, "j", "0", "k", "false", "m", "false")
	if err != nil {
		return nil, err
	}
	r := &SendResult{}
	r.MsgID, _ = resp.ExtString("msgId")
	qid, _ := resp.ExtInt32("queueId")
	r.QueueID = qid
	r.QueueOffset, _ = resp.ExtInt64("queueOffset")
	return r, nil
}

// DecodeMessages splits a body of concatenated CommitLog records (a
// pull's, a query's) into messages.
func DecodeMessages(b []byte) ([]*record.MessageExt, error) {
	var out []*record.MessageExt
	for len(b) > 0 {
		if len(b) < 4 {
			return out, fmt.Errorf("admin: %d trailing bytes after %d messages", len(b), len(out))
		}
		size := int(binary.BigEndian.Uint32(b))
		if size <= 0 || size > len(b) {
			return out, fmt.Errorf("admin: record %d claims %d bytes, %d left", len(out), size, len(b))
		}
		info, err := record.CheckWith(b[:size], 0, record.Checks{CRC: true, NoPhysicalOffset: true})
		if err != nil {
			return out, fmt.Errorf("admin: record %d: %w", len(out), err)
		}
		out = append(out, info.Ext())
		b = b[size:]
	}
	return out, nil
}
