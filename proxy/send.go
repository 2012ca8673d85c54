package proxy

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"strconv"
	"strings"
	"unicode"

	"github.com/rocketstore/rocketstore/acl"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/transaction"
	"github.com/rocketstore/rocketstore/internal/clocks"
	"github.com/rocketstore/rocketstore/proxy/rmqpb"
	"github.com/rocketstore/rocketstore/record"
)

// Message properties the 5.x proxy sets beyond the 4.x ones in record.
const (
	propTraceContext  = "TRACE_CONTEXT"
	propBornTimestamp = "BORN_TIMESTAMP" // the client's, as the proxy records it
)

// systemProperties are the keys a user property may not use
// (MessageConst.STRING_HASH_SET, the ones a client could collide with).
var systemProperties = map[string]bool{
	record.PropertyKeys: true, record.PropertyTags: true, record.PropertyWaitStoreMsgOK: true,
	record.PropertyDelayTimeLevel: true, record.PropertyRetryTopic: true, record.PropertyRealTopic: true,
	record.PropertyRealQueueID: true, record.PropertyTransactionPrep: true, record.PropertyOriginMessageID: true,
	record.PropertyReconsumeTime: true, record.PropertyMaxReconsumeTimes: true, record.PropertyUniqClientMsgID: true,
	record.PropertyCluster: true, transaction.PropProducerGroup: true, transaction.PropCheckImmunitySecs: true,
	record.PropertyShardingKey: true, record.PropertyTimerDeliverMS: true, propTraceContext: true, "MSGID": true, "MIN_OFFSET": true,
	"MAX_OFFSET": true, "BUYER_ID": true, "TRANSFER_FLAG": true, "CORRECTION_FLAG": true, "MQ2_FLAG": true,
	"INSTANCE_ID": true, "REAL_QUEUE_ID": true, record.PropertyStartDeliverTime: true, "UNIQ_KEY_IDX": true,
}

// SendMessage stores each message of the request as a 4.x send would:
// the 5.x system properties become RocketMQ's message properties (tag,
// keys, message id as UNIQ_KEY, message group as __SHARDINGKEY, a
// delivery timestamp as a timer message's TIMER_DELIVER_MS), the
// producer group is the topic (as RocketMQ's proxy does, for the
// transaction check-back), and a transactional message is stored as a
// half message whose transaction id is its offset message id.
func (p *Proxy) SendMessage(ctx context.Context, req *rmqpb.SendMessageRequest) (*rmqpb.SendMessageResponse, error) {
	msgs := req.GetMessages()
	if len(msgs) == 0 {
		return &rmqpb.SendMessageResponse{Status: status(rmqpb.Code_MESSAGE_CORRUPTED, "no message to send")}, nil
	}
	topic := msgs[0].GetTopic().GetName()
	if st := validTopic(topic); st != nil {
		return &rmqpb.SendMessageResponse{Status: st}, nil
	}
	if st := p.authorize(ctx, topicNeed(topic, acl.PermPub)); st != nil {
		return &rmqpb.SendMessageResponse{Status: st}, nil
	}
	tc, ok := p.topicConfig(topic)
	if !ok {
		return &rmqpb.SendMessageResponse{Status: status(rmqpb.Code_TOPIC_NOT_FOUND, "topic "+topic+" does not exist")}, nil
	}
	entries := make([]*rmqpb.SendResultEntry, 0, len(msgs))
	codes := map[rmqpb.Code]bool{}
	remote := remoteOf(ctx)
	for i, m := range msgs {
		sr, props, st := p.sendRequest(m, topic, tc.WriteQueueNums)
		if i == 0 && st == nil {
			if st := checkMessageType(tc, props); st != nil {
				return &rmqpb.SendMessageResponse{Status: st}, nil
			}
		}
		e := p.sendOne(ctx, m, sr, st, remote)
		entries = append(entries, e)
		codes[e.GetStatus().GetCode()] = true
	}
	resp := &rmqpb.SendMessageResponse{Entries: entries}
	if len(codes) > 1 {
		resp.Status = status(rmqpb.Code_MULTIPLE_RESULTS, "")
	} else {
		resp.Status = entries[0].GetStatus()
	}
	return resp, nil
}

// sendOne stores one message from its send request, or answers the
// status that refused the message.
func (p *Proxy) sendOne(ctx context.Context, m *rmqpb.Message, sr *broker.SendRequest, st *rmqpb.Status, remote netip.AddrPort) *rmqpb.SendResultEntry {
	if st != nil {
		return &rmqpb.SendResultEntry{Status: st}
	}
	sr.BornHost, sr.Cluster = remote, p.cfg.ClusterName
	res := p.b.SendMessage(ctx, sr)
	if res.Code != broker.Success {
		return &rmqpb.SendResultEntry{Status: brokerStatus(res.Code, res.Remark)}
	}
	e := &rmqpb.SendResultEntry{Status: okStatus, MessageId: m.GetSystemProperties().GetMessageId(), Offset: res.QueueOffset,
		RecallHandle: res.RecallHandle}
	if m.GetSystemProperties().GetMessageType() == rmqpb.MessageType_TRANSACTION {
		e.TransactionId = res.MsgID
	}
	return e
}

// sendRequest builds the broker's send request from a 5.x message, with
// SendMessageActivity's checks and codes, and returns the properties its
// Properties encode (for checkMessageType, which would otherwise parse
// them back).
func (p *Proxy) sendRequest(m *rmqpb.Message, topic string, writeQueues int) (*broker.SendRequest, map[string]string, *rmqpb.Status) {
	sp := m.GetSystemProperties()
	switch {
	case m.GetTopic().GetName() != topic:
		return nil, nil, status(rmqpb.Code_MESSAGE_CORRUPTED, "topic in message is not same")
	case len(m.GetBody()) == 0:
		return nil, nil, status(rmqpb.Code_MESSAGE_BODY_EMPTY, "message body cannot be empty")
	case len(m.GetBody()) > int(p.maxBodySize()):
		return nil, nil, status(rmqpb.Code_MESSAGE_BODY_TOO_LARGE, "message body cannot exceed the max "+strconv.Itoa(int(p.maxBodySize())))
	case strings.TrimSpace(sp.GetMessageId()) == "":
		return nil, nil, status(rmqpb.Code_ILLEGAL_MESSAGE_ID, "message id cannot be empty")
	}
	props := make(map[string]string, len(m.GetUserProperties())+8)
	for k, v := range m.GetUserProperties() {
		if systemProperties[k] {
			return nil, nil, status(rmqpb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, "property is used by system: "+k)
		}
		if hasControl(k) || hasControl(v) {
			return nil, nil, status(rmqpb.Code_ILLEGAL_MESSAGE_PROPERTY_KEY, "the key or value of property "+quote(k)+" contains a control character")
		}
		if k != "" && v != "" { // as the encoding drops them
			props[k] = v
		}
	}
	if tag := sp.GetTag(); tag != "" {
		if strings.TrimSpace(tag) == "" || strings.Contains(tag, "|") || hasControl(tag) {
			return nil, nil, status(rmqpb.Code_ILLEGAL_MESSAGE_TAG, "tag "+quote(tag)+" is blank or contains '|' or a control character")
		}
		props[record.PropertyTags] = tag
	}
	for _, k := range sp.GetKeys() {
		if strings.TrimSpace(k) == "" || hasControl(k) {
			return nil, nil, status(rmqpb.Code_ILLEGAL_MESSAGE_KEY, "key "+quote(k)+" is blank or contains a control character")
		}
	}
	if len(sp.GetKeys()) > 0 {
		props[record.PropertyKeys] = strings.Join(sp.GetKeys(), " ")
	}
	props[record.PropertyUniqClientMsgID] = sp.GetMessageId()
	props[transaction.PropProducerGroup] = topic
	props[record.PropertyReconsumeTime] = strconv.Itoa(int(sp.GetDeliveryAttempt()))
	var sysFlag int32
	if sp.GetBodyEncoding() == rmqpb.Encoding_GZIP {
		sysFlag |= record.FlagCompressed
	}
	if sp.GetMessageType() == rmqpb.MessageType_TRANSACTION {
		sysFlag |= record.TransactionPrepared
		props[record.PropertyTransactionPrep] = "true"
		if d := sp.GetOrphanedTransactionRecoveryDuration(); d != nil {
			props[transaction.PropCheckImmunitySecs] = strconv.FormatInt(d.GetSeconds(), 10)
		}
	}
	if g := sp.GetMessageGroup(); g != "" {
		if strings.TrimSpace(g) == "" || len(g) >= 64 || hasControl(g) {
			return nil, nil, status(rmqpb.Code_ILLEGAL_MESSAGE_GROUP, "message group "+quote(g)+" is blank, 64 bytes or longer, or contains a control character")
		}
		props[record.PropertyShardingKey] = g
	}
	if tc := sp.GetTraceContext(); tc != "" {
		props[propTraceContext] = tc
	}
	if dt := sp.GetDeliveryTimestamp(); dt != nil {
		// A timer message: the broker holds it in its timer store until
		// then (broker/timer), to the timerPrecisionMs. Its limit is the
		// broker's timerMaxDelaySec (the Java proxy's maxDelayTimeMills).
		ms := dt.AsTime().UnixMilli()
		if maxDelay := p.b.Timer().Config().MaxDelay.Milliseconds(); ms-clocks.Millis(p.cfg.Clock)() > maxDelay {
			return nil, nil, status(rmqpb.Code_ILLEGAL_DELIVERY_TIME, "the max delay time of message is too large, max is "+strconv.FormatInt(maxDelay, 10))
		}
		props[record.PropertyTimerDeliverMS] = strconv.FormatInt(ms, 10)
	}
	born := clocks.Millis(p.cfg.Clock)()
	if bt := sp.GetBornTimestamp(); bt != nil && bt.IsValid() {
		born = bt.AsTime().UnixMilli()
	}
	qid := sp.GetQueueId()
	if qid < 0 || int(qid) >= writeQueues {
		qid = int32(rand.IntN(max(1, writeQueues)))
	}
	return &broker.SendRequest{ProducerGroup: topic, Topic: topic, QueueID: qid, SysFlag: sysFlag, BornTimestamp: born,
		Properties: encodeProperties(props), ReconsumeTimes: sp.GetDeliveryAttempt(), Body: m.GetBody()}, props, nil
}

// encodeProperties is RocketMQ's encoding of props, into a buffer of
// its size (appending to nil grew it three or four times a message).
func encodeProperties(props map[string]string) string {
	n := 0
	for k, v := range props {
		n += len(k) + len(v) + 2
	}
	return string(record.AppendProperties(make([]byte, 0, n), props))
}

func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}
