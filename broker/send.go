package broker

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"

	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/broker/timer"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/record"
)

// Response codes of SendMessageProcessor that pulls never return.
const (
	FlushDiskTimeout    ResponseCode = 10
	MessageIllegal      ResponseCode = 13
	ServiceNotAvailable ResponseCode = 14
)

func init() {
	codeNames[FlushDiskTimeout] = "FLUSH_DISK_TIMEOUT"
	codeNames[MessageIllegal] = "MESSAGE_ILLEGAL"
	codeNames[ServiceNotAvailable] = "SERVICE_NOT_AVAILABLE"
}

// SendRequest is SendMessageRequestHeader (SEND_MESSAGE 10; the V2 header
// of 310 and 320 names the same fields a..n) with the body.
type SendRequest struct {
	ProducerGroup string
	Topic         string
	// DefaultTopic is the template for auto-creation (TBW102), and
	// DefaultTopicQueueNums the queue count the producer asks for (4).
	DefaultTopic          string
	DefaultTopicQueueNums int
	// QueueID < 0 lets the broker pick a queue.
	QueueID       int32
	SysFlag       int32
	BornTimestamp int64
	Flag          int32
	// Properties is the encoded property string (k\x01v\x02...).
	Properties     string
	ReconsumeTimes int32
	UnitMode       bool
	// MaxReconsumeTimes overrides the group's retryMaxTimes for sends to
	// a %RETRY% topic (nil: not sent).
	MaxReconsumeTimes *int32
	// Batch marks a SEND_BATCH_MESSAGE body (see DecodeBatch).
	Batch bool
	Body  []byte
	// BornHost is the producer's address.
	BornHost netip.AddrPort
	// Cluster is the broker's cluster name, recorded in the CLUSTER
	// property as RocketMQ does.
	Cluster string
}

// SendResult is the answer to a send: the code and, when the message was
// stored (Success, or FlushDiskTimeout: stored but not yet synced), where.
type SendResult struct {
	Code   ResponseCode
	Remark string
	// MsgID is the offset message id; for a batch, the ids of all its
	// messages joined with commas (as RocketMQ answers).
	MsgID string
	// Topic is where the message went: the DLQ when a retry send was
	// diverted, SCHEDULE_TOPIC_XXXX for a delayed one.
	Topic       string
	QueueID     int32
	QueueOffset int64
	MsgNum      int
	// RecallHandle names a timer message for a recall (RocketMQ 5.x's
	// SendMessageResponseHeader.recallHandle); empty for other sends.
	RecallHandle string
}

// validTopic is TopicValidator's allowed character set, ^[%|a-zA-Z0-9_-]+$
// (checked per byte: a regexp per message cost 7-8 % of the server's CPU).
var validTopic = topicChars{}

type topicChars struct{}

// MatchString reports whether s is non-empty and made of %, |, ASCII
// letters and digits, _ and -.
func (topicChars) MatchString(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '%' || c == '|') {
			return false
		}
	}
	return true
}

// notAllowedSendTopics are system topics producers may not write
// (RocketMQ 4.9's TopicValidator.NOT_ALLOWED_SEND_TOPIC_SET; the trace
// topic is not among them: traced clients write it).
var notAllowedSendTopics = map[string]bool{
	record.SelfTestTopic: true, record.ScheduleTopic: true, record.TransHalfTopic: true,
	record.TransOpHalfTopic: true, record.TransCheckMaxTimeTopic: true, record.OffsetMovedEventTopic: true,
}

// ErrBadBatch reports a SEND_BATCH_MESSAGE body that does not decode.
var ErrBadBatch = errors.New("broker: bad batch body")

// batchHeaderLen is TOTALSIZE, MAGICCODE, BODYCRC, FLAG and BODYLEN.
const batchHeaderLen = 20

// DecodeBatch splits a SEND_BATCH_MESSAGE body: messages of
//
//	0 TOTALSIZE int32 | 4 MAGICCODE int32 | 8 BODYCRC int32 | 12 FLAG int32
//	16 BODYLEN int32 | 20 BODY | PROPLEN int16 | PROPERTIES
//
// (MessageDecoder.encodeMessage). Every length is checked against the
// bytes present; TOTALSIZE must equal the sum of the parts. Each
// message's EncodedProperties are its PROPERTIES bytes (a slice of b).
func DecodeBatch(b []byte) ([]record.Message, error) {
	var out []record.Message
	for pos := 0; pos < len(b); {
		rest := b[pos:]
		if len(rest) < batchHeaderLen+2 {
			return nil, fmt.Errorf("%w: %d trailing bytes at %d", ErrBadBatch, len(rest), pos)
		}
		total := int64(int32(binary.BigEndian.Uint32(rest)))
		bodyLen := int64(int32(binary.BigEndian.Uint32(rest[16:])))
		if bodyLen < 0 || batchHeaderLen+bodyLen+2 > int64(len(rest)) {
			return nil, fmt.Errorf("%w: message at %d: body length %d", ErrBadBatch, pos, bodyLen)
		}
		propOff := batchHeaderLen + bodyLen
		propLen := int64(binary.BigEndian.Uint16(rest[propOff:]))
		size := propOff + 2 + propLen
		if size > int64(len(rest)) || total != size {
			return nil, fmt.Errorf("%w: message at %d: total size %d, parts %d, %d bytes left", ErrBadBatch, pos, total, size, len(rest))
		}
		out = append(out, record.Message{
			Flag:              int32(binary.BigEndian.Uint32(rest[12:])),
			Body:              rest[batchHeaderLen:propOff:propOff],
			EncodedProperties: rest[propOff+2 : size : size],
		})
		pos += int(size)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no message", ErrBadBatch)
	}
	return out, nil
}

// SendMessage answers SEND_MESSAGE (10 and 310) and SEND_BATCH_MESSAGE
// (320) as RocketMQ 4.9.4's SendMessageProcessor: the checks of msgCheck
// (broker and topic permissions, topic name, auto-creation from the
// template topic, queue id), then for a single message the retry handling
// (a %RETRY% send whose reconsumeTimes reached the maximum goes to the
// group's DLQ), then the put. A DELAY property sends the message through
// SCHEDULE_TOPIC_XXXX (the store redirects it). A compressed body (sysflag
// 0x1) is stored as is.
func (b *Broker) SendMessage(ctx context.Context, req *SendRequest) SendResult {
	res := b.sendMessage(ctx, req)
	if res.Code == Success || res.Code == FlushDiskTimeout {
		b.stats.Put(req.Topic, res.MsgNum)
	}
	return res
}

func (b *Broker) sendMessage(ctx context.Context, req *SendRequest) SendResult {
	if b.closed.Load() {
		return SendResult{Code: ServiceNotAvailable, Remark: "the broker is shutting down"}
	}
	if !b.writer().Writable() {
		return SendResult{Code: ServiceNotAvailable, Remark: "service not available now: this broker is not its group's leader (a slave); refresh the route"}
	}
	if req.Batch {
		if len(req.Topic) > record.MaxTopicLength {
			return SendResult{Code: MessageIllegal, Remark: "message topic length too long " + strconv.Itoa(len(req.Topic))}
		}
		if strings.HasPrefix(req.Topic, record.RetryGroupTopicPrefix) {
			return SendResult{Code: MessageIllegal, Remark: "batch request does not support retry group " + req.Topic}
		}
	}
	tc, fail := b.sendCheck(req)
	if fail != nil {
		return *fail
	}
	qid := req.QueueID
	if qid < 0 {
		qid = int32(rand.IntN(99999999) % max(1, tc.WriteQueueNums))
	}
	if req.Batch {
		return b.sendBatch(ctx, req, qid)
	}
	if m, ok := b.plainMessage(req, qid); ok {
		return b.putOne(ctx, m, qid)
	}
	props := record.ParseProperties([]byte(req.Properties))
	if isHalfMessage(req, props) {
		return b.prepareTransaction(ctx, req, qid, props)
	}
	topic := req.Topic
	if strings.HasPrefix(topic, record.RetryGroupTopicPrefix) {
		var fail *SendResult
		if topic, qid, fail = b.retryOrDLQ(req, qid, props); fail != nil {
			return *fail
		}
	}
	if req.Cluster != "" {
		props[record.PropertyCluster] = req.Cluster
	}
	m := &record.Message{Topic: topic, QueueID: qid, Flag: req.Flag, Body: req.Body, Properties: props,
		SysFlag: req.SysFlag, BornTimestamp: req.BornTimestamp, BornHost: req.BornHost, ReconsumeTimes: req.ReconsumeTimes}
	return b.putTimed(ctx, m, qid)
}

// putTimed stores a message that may be a timer message: it goes to the
// timer topic (timer.Config.Transform) and the answer carries its recall
// handle, as RocketMQ 5.x's SendMessageProcessor.attachRecallHandle.
func (b *Broker) putTimed(ctx context.Context, m *record.Message, qid int32) SendResult {
	tm, err := b.timer.Config().Transform(m, b.now())
	switch {
	case errors.Is(err, timer.ErrDisabled):
		return SendResult{Code: MessageIllegal, Remark: "timer message refused: timerWheelEnable is false on this broker"}
	case err != nil:
		return SendResult{Code: MessageIllegal, Remark: err.Error()}
	}
	out := b.putOne(ctx, tm, qid)
	if tm.Topic == record.TimerTopic && (out.Code == Success || out.Code == FlushDiskTimeout) &&
		!strings.HasPrefix(m.Topic, record.RetryGroupTopicPrefix) && tm.Properties[record.PropertyTimerDelUniqKey] == "" {
		at, _ := strconv.ParseInt(tm.Properties[record.PropertyTimerOutMS], 10, 64)
		out.RecallHandle = timer.RecallHandle{Topic: m.Topic, BrokerName: b.cfg.BrokerName, DeliverMs: at,
			MessageID: tm.Properties[record.PropertyUniqClientMsgID]}.String()
	}
	return out
}

// putOne stores one message and answers with where it went.
func (b *Broker) putOne(ctx context.Context, m *record.Message, qid int32) SendResult {
	res, err := b.writer().Put(ctx, m)
	out := putResult(err)
	if out.Code == Success || out.Code == FlushDiskTimeout {
		out.MsgID, out.Topic, out.QueueID, out.QueueOffset, out.MsgNum = res.MsgID(), res.Topic, qid, res.QueueOffset, 1
	}
	return out
}

// plainMessage returns the message for a send that needs no property
// rewriting beyond the CLUSTER property the broker adds: not a half
// (transaction) message, not a retry-topic send, no CLUSTER of the
// client's own. Its properties are the string the client sent with
// CLUSTER appended (RocketMQ's SendMessageProcessor puts CLUSTER; the
// client's other properties are stored as sent), so that a send builds
// no map and sorts nothing. ok is false for the other sends, which take
// the map path.
func (b *Broker) plainMessage(req *SendRequest, qid int32) (*record.Message, bool) {
	if record.TransactionType(req.SysFlag) == record.TransactionPrepared ||
		strings.HasPrefix(req.Topic, record.RetryGroupTopicPrefix) {
		return nil, false
	}
	raw := strings.TrimRight(req.Properties, "\x02")
	if hasPropertyName(raw, record.PropertyTransactionPrep) || timer.IsTimer(raw) ||
		req.Cluster != "" && hasPropertyName(raw, record.PropertyCluster) {
		return nil, false
	}
	n := len(raw)
	if req.Cluster != "" {
		n += 2 + len(record.PropertyCluster) + len(req.Cluster)
	}
	ps := new(plainSend) // the message and its properties in one allocation
	enc := ps.props[:0]
	if n > len(ps.props) {
		enc = make([]byte, 0, n)
	}
	enc = append(enc, raw...)
	if req.Cluster != "" {
		if len(enc) > 0 {
			enc = append(enc, 2)
		}
		enc = append(enc, record.PropertyCluster...)
		enc = append(enc, 1)
		enc = append(enc, req.Cluster...)
	}
	ps.m = record.Message{Topic: req.Topic, QueueID: qid, Flag: req.Flag, Body: req.Body, EncodedProperties: enc,
		SysFlag: req.SysFlag, BornTimestamp: req.BornTimestamp, BornHost: req.BornHost, ReconsumeTimes: req.ReconsumeTimes}
	return &ps.m, true
}

// plainSend is a plain send's message with room for its encoded
// properties (a Go client's UNIQ_KEY, WAIT, TAGS and KEYS plus CLUSTER
// take about 100 bytes).
type plainSend struct {
	m     record.Message
	props [192]byte
}

// hasPropertyName reports whether the encoded properties props hold an
// entry named name (whatever its value), without allocating.
func hasPropertyName(props, name string) bool {
	for len(props) > 0 {
		item := props
		if i := strings.IndexByte(props, 2); i >= 0 {
			item, props = props[:i], props[i+1:]
		} else {
			props = ""
		}
		// As ParseProperties reads them: an entry with an empty value
		// is no entry.
		if len(item) > len(name)+1 && item[len(name)] == 1 && item[:len(name)] == name {
			return true
		}
	}
	return false
}

// topicNotCreated refuses a send whose topic could not be created (its
// config not saved: a full disk): the producer is told, and so is the
// operator, once a minute while it lasts.
func (b *Broker) topicNotCreated(topic string, err error) (config.TopicConfig, *SendResult) {
	b.topicFaults.Failed("send refused: the topic it creates could not be saved", err, "topic", topic)
	return config.TopicConfig{}, &SendResult{Code: SystemError, Remark: fmt.Sprintf("create topic %s: %v", topic, err)}
}

// sendCheck is AbstractSendMessageProcessor.msgCheck.
func (b *Broker) sendCheck(req *SendRequest) (config.TopicConfig, *SendResult) {
	fail := func(code ResponseCode, format string, args ...any) (config.TopicConfig, *SendResult) {
		return config.TopicConfig{}, &SendResult{Code: code, Remark: fmt.Sprintf(format, args...)}
	}
	if !config.IsWritable(b.cfg.BrokerPermission) {
		return fail(NoPermission, "the broker sending message is forbidden")
	}
	switch t := req.Topic; {
	case t == "":
		return fail(SystemError, "the specified topic is blank")
	case len(t) > record.MaxTopicLength:
		return fail(SystemError, "the specified topic is longer than topic max length %d", record.MaxTopicLength)
	case !validTopic.MatchString(t):
		return fail(SystemError, "the specified topic[%s] contains illegal characters, allowing only ^[%%|a-zA-Z0-9_-]+$", t)
	case t == record.DefaultTopic:
		return fail(SystemError, "the topic[%s] is conflict with default topic", t)
	case notAllowedSendTopics[t]:
		return fail(NoPermission, "Sending message to topic[%s] is forbidden", t)
	}
	tc, ok := b.topics.Get(req.Topic)
	if !ok {
		sysFlag := 0
		if req.UnitMode {
			sysFlag = topicSysFlagUnit
			if strings.HasPrefix(req.Topic, record.RetryGroupTopicPrefix) {
				sysFlag = topicSysFlagUnitSub
			}
		}
		var err error
		tc, ok, err = b.topics.CreateInSendMessage(req.Topic, req.DefaultTopic, req.DefaultTopicQueueNums, sysFlag)
		if err != nil {
			return b.topicNotCreated(req.Topic, err)
		}
		if !ok && strings.HasPrefix(req.Topic, record.RetryGroupTopicPrefix) {
			tc, err = b.topics.CreateInSendMessageBack(req.Topic, 1, record.PermRead|record.PermWrite, sysFlag)
			if err != nil {
				return b.topicNotCreated(req.Topic, err)
			}
			ok = true
		}
		if !ok {
			return fail(TopicNotExist, "topic[%s] not exist, apply first please!", req.Topic)
		}
		if b.topicFaults.Failing() {
			b.topicFaults.Resumed("topics created by sends are saved again", "topic", req.Topic)
		}
	}
	if !config.IsWritable(tc.Perm) {
		return fail(NoPermission, "the topic[%s] sending message is forbidden", req.Topic)
	}
	if n := max(tc.ReadQueueNums, tc.WriteQueueNums); int(req.QueueID) >= n {
		return fail(SystemError, "request queueId[%d] is illegal, topic %s has %d queues, producer: %s",
			req.QueueID, req.Topic, n, req.BornHost)
	}
	return tc, nil
}

// topicSysFlagUnit is TopicSysFlag.buildSysFlag(true, false).
const topicSysFlagUnit = 0x1

// retryOrDLQ is handleRetryAndDLQ: a send to %RETRY%group whose
// reconsumeTimes reached the group's (or the header's) maximum goes to
// %DLQ%group instead, without delay.
func (b *Broker) retryOrDLQ(req *SendRequest, qid int32, props map[string]string) (string, int32, *SendResult) {
	group := strings.TrimPrefix(req.Topic, record.RetryGroupTopicPrefix)
	g, ok, err := b.groups.Find(group)
	if err != nil {
		return "", 0, &SendResult{Code: SystemError, Remark: err.Error()}
	}
	if !ok {
		return "", 0, &SendResult{Code: SubscriptionGroupNotExist, Remark: "subscription group not exist, " + group}
	}
	maxTimes := int32(g.RetryMaxTimes)
	if req.MaxReconsumeTimes != nil {
		maxTimes = *req.MaxReconsumeTimes
	}
	if req.ReconsumeTimes < maxTimes {
		return req.Topic, qid, nil
	}
	dlq := config.DLQTopic(group)
	tc, err := b.topics.CreateInSendMessageBack(dlq, dlqQueueNums, record.PermRead|record.PermWrite, 0)
	if err != nil {
		return "", 0, &SendResult{Code: SystemError, Remark: err.Error()}
	}
	if !config.IsWritable(tc.Perm) {
		return "", 0, &SendResult{Code: NoPermission, Remark: "the topic[" + dlq + "] sending message is forbidden"}
	}
	delete(props, record.PropertyDelayTimeLevel)
	return dlq, int32(rand.IntN(99999999) % dlqQueueNums), nil
}

// sendBatch decodes and stores a batch as consecutive records.
func (b *Broker) sendBatch(ctx context.Context, req *SendRequest, qid int32) SendResult {
	maxSize := b.store.Config().MaxMessageSize
	if maxSize > 0 && len(req.Body) > maxSize {
		return SendResult{Code: MessageIllegal, Remark: fmt.Sprintf("batch body %d bytes exceeds maxMessageSize %d", len(req.Body), maxSize)}
	}
	inner, err := DecodeBatch(req.Body)
	if err != nil {
		return SendResult{Code: MessageIllegal, Remark: err.Error()}
	}
	header := strings.TrimRight(req.Properties, "\x02")
	if timerInBatch(header, inner) {
		return SendResult{Code: MessageIllegal, Remark: "a batch cannot hold timer messages (TIMER_DELIVER_MS, TIMER_DELAY_SEC, TIMER_DELAY_MS, __STARTDELIVERTIME): send them one by one"}
	}
	// The batch's own properties apply to each message, which keeps its
	// own values (MessageExtBatchEncoder appends them), and the broker
	// adds CLUSTER. Every message's merged string goes in one buffer,
	// sized so that it never grows under the slices taken of it.
	room := 0
	for i := range inner {
		room += len(inner[i].EncodedProperties) + 1 + len(header) + 2 + len(record.PropertyCluster) + len(req.Cluster)
	}
	buf := make([]byte, 0, room)
	msgs := make([]*record.Message, len(inner))
	for i := range inner {
		m := &inner[i]
		own := bytes.TrimRight(m.EncodedProperties, "\x02")
		if req.Cluster != "" && hasPropertyName(string(own), record.PropertyCluster) {
			// The client's own CLUSTER is replaced: the map path.
			props := record.ParseProperties(own)
			record.ForEachProperty([]byte(header), func(k, v []byte) bool {
				if _, ok := props[string(k)]; !ok {
					props[string(k)] = string(v)
				}
				return true
			})
			props[record.PropertyCluster] = req.Cluster
			m.Properties, m.EncodedProperties = props, nil
		} else {
			start := len(buf)
			buf = append(buf, own...)
			forEachHeaderProperty(header, func(k, v string) {
				if (req.Cluster == "" || k != record.PropertyCluster) && !hasPropertyName(string(own), k) {
					buf = appendProperty(buf, start, k, v)
				}
			})
			if req.Cluster != "" {
				buf = appendProperty(buf, start, record.PropertyCluster, req.Cluster)
			}
			m.EncodedProperties = buf[start:len(buf):len(buf)]
		}
		m.Topic, m.QueueID, m.SysFlag = req.Topic, qid, req.SysFlag
		m.BornTimestamp, m.BornHost, m.ReconsumeTimes = req.BornTimestamp, req.BornHost, req.ReconsumeTimes
		msgs[i] = m
	}
	res, err := b.writer().PutBatch(ctx, msgs)
	out := putResult(err)
	if out.Code != Success && out.Code != FlushDiskTimeout {
		return out
	}
	// Each message's record follows the previous one; its offset id
	// comes from the sizes the encoder computes.
	var enc record.Encoder
	ids := make([]string, len(msgs))
	off := res.WroteOffset
	for i, m := range msgs {
		ids[i] = record.OffsetMsgID(res.StoreHost, off)
		p, err := enc.Prepare(m, res.StoreHost, max(maxSize, len(m.Body)))
		if err != nil {
			break // cannot happen: the store accepted it
		}
		off += int64(p.Size)
	}
	out.MsgID, out.Topic, out.QueueID, out.QueueOffset, out.MsgNum = strings.Join(ids, ","), res.Topic, qid, res.QueueOffset, len(msgs)
	return out
}

// timerInBatch reports whether a batch's header or one of its messages
// names a delivery time: a batch is stored as consecutive records of one
// queue and cannot wait in the timer store.
func timerInBatch(header string, inner []record.Message) bool {
	if timer.IsTimer(header) {
		return true
	}
	for i := range inner {
		if timer.IsTimer(string(inner[i].EncodedProperties)) {
			return true
		}
	}
	return false
}

// putResult maps a put error to SendMessageProcessor's response code.
func putResult(err error) SendResult {
	switch {
	case err == nil:
		return SendResult{Code: Success}
	case errors.Is(err, engine.ErrFlushTimeout):
		return SendResult{Code: FlushDiskTimeout, Remark: "flush disk timeout"}
	case errors.Is(err, engine.ErrMessageIllegal), errors.Is(err, engine.ErrPropertiesTooLarge), errors.Is(err, engine.ErrBatch):
		return SendResult{Code: MessageIllegal, Remark: err.Error()}
	case errors.Is(err, engine.ErrReadOnly), errors.Is(err, engine.ErrClosed), errors.Is(err, engine.ErrFlushFailed):
		return SendResult{Code: ServiceNotAvailable, Remark: "service not available now: " + err.Error()}
	}
	return SendResult{Code: SystemError, Remark: err.Error()}
}

// forEachHeaderProperty calls fn for each valid entry of the encoded
// properties s, as record.ForEachProperty reads them.
func forEachHeaderProperty(s string, fn func(k, v string)) {
	for len(s) > 0 {
		item := s
		if i := strings.IndexByte(s, 2); i >= 0 {
			item, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		kv := strings.IndexByte(item, 1)
		if len(item) < 3 || kv <= 0 || kv >= len(item)-1 {
			continue
		}
		fn(item[:kv], item[kv+1:])
	}
}

// appendProperty appends the entry k=v to the encoded properties that
// start at start in b.
func appendProperty(b []byte, start int, k, v string) []byte {
	if len(b) > start {
		b = append(b, 2)
	}
	b = append(b, k...)
	b = append(b, 1)
	return append(b, v...)
}
