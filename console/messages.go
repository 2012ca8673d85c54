package console

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/record"
)

// Message is a message as the pages show it.
type Message struct {
	MsgID          string            `json:"msgId"`
	Topic          string            `json:"topic"`
	Broker         string            `json:"broker,omitempty"`
	QueueID        int32             `json:"queueId"`
	QueueOffset    int64             `json:"queueOffset"`
	StoreTimestamp int64             `json:"storeTimestamp"`
	BornTimestamp  int64             `json:"bornTimestamp"`
	BornHost       string            `json:"bornHost"`
	Tags           string            `json:"tags"`
	Keys           string            `json:"keys"`
	ReconsumeTimes int32             `json:"reconsumeTimes"`
	Properties     map[string]string `json:"properties,omitempty"`
	BodySize       int               `json:"bodySize"`
	Body           string            `json:"body"`
	BodyEncoding   string            `json:"bodyEncoding"` // text or base64
	// Consumption is, per consumer group of the topic, CONSUMED or
	// NOT_CONSUMED (the group's offset is past the message or not).
	Consumption map[string]string `json:"consumption,omitempty"`
}

// previewBytes bounds the body shown in lists; the detail shows 64 KiB.
const (
	previewBytes = 256
	detailBytes  = 64 << 10
	maxResults   = 64
)

func toMessage(m *record.MessageExt, limit int, withProps bool) Message {
	out := Message{MsgID: m.MsgID(), Topic: m.Topic, QueueID: m.QueueID, QueueOffset: m.QueueOffset,
		StoreTimestamp: m.StoreTimestamp, BornTimestamp: m.BornTimestamp, BornHost: m.BornHost.String(),
		Tags: m.Tags(), Keys: m.Keys(), ReconsumeTimes: m.ReconsumeTimes, BodySize: len(m.Body)}
	if withProps {
		out.Properties = m.Properties
	}
	body := m.Body
	if len(body) > limit {
		body = body[:limit]
	}
	if utf8.Valid(body) {
		out.Body, out.BodyEncoding = string(body), "text"
	} else {
		out.Body, out.BodyEncoding = base64.StdEncoding.EncodeToString(body), "base64"
	}
	return out
}

// parseSearchTime reads a search bound: ms since the epoch or a local
// 2006-01-02T15:04[:05] time; empty gives def.
func parseSearchTime(name, s string, def int64) (int64, error) {
	if s == "" {
		return def, nil
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil && ms >= 0 {
		return ms, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, badInput("%s %q is not a time: want YYYY-MM-DDThh:mm[:ss] (local time) or milliseconds since the epoch", name, s)
}

// searchMessages answers ?msgId=, ?topic=&key=, or ?topic=&begin=&end=
// (the first 64 messages stored in the range, queue by queue).
func (c *Console) searchMessages(r *http.Request, cl *admin.Client) (any, error) {
	ctx := r.Context()
	q := r.URL.Query()
	if id := strings.TrimSpace(q.Get("msgId")); id != "" {
		if _, _, err := record.ParseOffsetMsgID(id); err != nil {
			return nil, badInput("message id %q is not an offset message id (32 hex digits)", id)
		}
		m, err := cl.ViewMessageByID(ctx, id)
		if err != nil {
			return nil, notFound("no message with id %s: %v", id, err)
		}
		return []Message{toMessage(m, previewBytes, false)}, nil
	}
	topic := q.Get("topic")
	brokers, err := topicAddrs(ctx, cl, topic)
	if err != nil {
		return nil, err
	}
	begin, err := parseSearchTime("begin", q.Get("begin"), 0)
	if err != nil {
		return nil, err
	}
	end, err := parseSearchTime("end", q.Get("end"), time.Now().Add(time.Hour).UnixMilli())
	if err != nil {
		return nil, err
	}
	if begin > end {
		return nil, badInput("begin is after end")
	}
	out := []Message{}
	if key := strings.TrimSpace(q.Get("key")); key != "" {
		for _, name := range slices.Sorted(maps.Keys(brokers)) {
			msgs, err := cl.QueryMessage(ctx, brokers[name], topic, key, maxResults, begin, end)
			if err != nil {
				return nil, err
			}
			for _, m := range msgs {
				mm := toMessage(m, previewBytes, false)
				mm.Broker = name
				out = append(out, mm)
			}
		}
		return out, nil
	}
	for _, name := range slices.Sorted(maps.Keys(brokers)) {
		addr := brokers[name]
		ts, err := cl.TopicStats(ctx, addr, topic)
		if err != nil {
			return nil, err
		}
		for mq, o := range ts.OffsetTable {
			off, err := cl.SearchOffset(ctx, addr, topic, mq.QueueID, begin)
			if err != nil {
				return nil, err
			}
			for off < o.MaxOffset && len(out) < maxResults {
				pr, err := cl.Pull(ctx, addr, "TOOLS_CONSUMER", topic, mq.QueueID, off, 32)
				if err != nil {
					return nil, err
				}
				if pr.Status != "FOUND" {
					break
				}
				for _, m := range pr.Messages {
					if m.StoreTimestamp >= begin && m.StoreTimestamp <= end && len(out) < maxResults {
						mm := toMessage(m, previewBytes, false)
						mm.Broker = name
						out = append(out, mm)
					}
				}
				if last := pr.Messages[len(pr.Messages)-1]; last.StoreTimestamp > end {
					break
				}
				off = pr.NextBeginOffset
			}
		}
	}
	slices.SortFunc(out, func(a, b Message) int { return int(a.StoreTimestamp - b.StoreTimestamp) })
	return out, nil
}

// message answers one message's detail with its consumption per group.
func (c *Console) message(r *http.Request, cl *admin.Client) (any, error) {
	ctx := r.Context()
	id := strings.TrimSpace(r.URL.Query().Get("msgId"))
	if _, _, err := record.ParseOffsetMsgID(id); err != nil {
		return nil, badInput("message id %q is not an offset message id (32 hex digits)", id)
	}
	m, err := cl.ViewMessageByID(ctx, id)
	if err != nil {
		return nil, notFound("no message with id %s: %v", id, err)
	}
	out := toMessage(m, detailBytes, true)
	out.Consumption = map[string]string{}
	brokers, err := topicAddrs(ctx, cl, m.Topic)
	if err != nil {
		return out, nil // the topic is gone; the message is still shown
	}
	groups, err := consumersOf(ctx, cl, brokers, m.Topic)
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		state := "NOT_CONSUMED"
		for _, a := range brokers {
			cs, err := cl.ConsumeStats(ctx, a, g, m.Topic)
			if err != nil {
				continue
			}
			for mq, o := range cs.OffsetTable {
				if mq.QueueID == m.QueueID && o.ConsumerOffset > m.QueueOffset && a == m.StoreHost.String() {
					state = "CONSUMED"
				}
			}
		}
		out.Consumption[g] = state
	}
	return out, nil
}

// SendForm is the send-message form.
type SendForm struct {
	Topic string `json:"topic"`
	Tags  string `json:"tags"`
	Keys  string `json:"keys"`
	Body  string `json:"body"`
}

func (c *Console) sendMessage(r *http.Request, cl *admin.Client) (any, error) {
	var f SendForm
	if err := decodeBody(r, &f); err != nil {
		return nil, err
	}
	if f.Body == "" {
		return nil, badInput("the message body is empty")
	}
	brokers, err := topicAddrs(r.Context(), cl, f.Topic)
	if err != nil {
		return nil, err
	}
	name := slices.Sorted(maps.Keys(brokers))[0]
	props := map[string]string{"UNIQ_KEY": fmt.Sprintf("%X", time.Now().UnixNano()), "WAIT": "true"}
	if f.Tags != "" {
		props["TAGS"] = f.Tags
	}
	if f.Keys != "" {
		props["KEYS"] = f.Keys
	}
	res, err := cl.SendMessage(r.Context(), brokers[name], "CONSOLE_PRODUCER",
		&record.Message{Topic: f.Topic, QueueID: 0, Body: []byte(f.Body), Properties: props})
	if err != nil {
		return nil, err
	}
	return map[string]any{"msgId": res.MsgID, "broker": name, "queueId": res.QueueID, "queueOffset": res.QueueOffset}, nil
}

// dlq lists the messages of a group's dead-letter queue.
func (c *Console) dlq(r *http.Request, cl *admin.Client) (any, error) {
	ctx := r.Context()
	group := r.URL.Query().Get("group")
	if group == "" {
		return nil, badInput("no group given")
	}
	topic := record.DLQGroupTopicPrefix + group
	brokers, err := topicAddrs(ctx, cl, topic)
	if err != nil {
		return nil, notFound("group %s has no dead-letter queue", group)
	}
	out := []Message{}
	for _, name := range slices.Sorted(maps.Keys(brokers)) {
		ts, err := cl.TopicStats(ctx, brokers[name], topic)
		if admin.IsCode(err, 17) {
			return nil, notFound("group %s has no dead-letter queue", group)
		}
		if err != nil {
			return nil, err
		}
		for mq, o := range ts.OffsetTable {
			off := o.MinOffset
			for off < o.MaxOffset && len(out) < maxResults {
				pr, err := cl.Pull(ctx, brokers[name], "TOOLS_CONSUMER", topic, mq.QueueID, off, 32)
				if err != nil {
					return nil, err
				}
				if pr.Status != "FOUND" {
					break
				}
				for _, m := range pr.Messages {
					mm := toMessage(m, previewBytes, true)
					mm.Broker = name
					out = append(out, mm)
				}
				off = pr.NextBeginOffset
			}
		}
	}
	return out, nil
}

// resend sends a copy of a dead-letter message to its original topic.
func (c *Console) resend(r *http.Request, cl *admin.Client) (any, error) {
	var f struct {
		MsgID string `json:"msgId"`
	}
	if err := decodeBody(r, &f); err != nil {
		return nil, err
	}
	if _, _, err := record.ParseOffsetMsgID(f.MsgID); err != nil {
		return nil, badInput("message id %q is not an offset message id", f.MsgID)
	}
	m, err := cl.ViewMessageByID(r.Context(), f.MsgID)
	if err != nil {
		return nil, notFound("no message with id %s: %v", f.MsgID, err)
	}
	origin := m.Properties[record.PropertyRetryTopic]
	if origin == "" {
		return nil, badInput("message %s has no RETRY_TOPIC property: it is not a dead letter", f.MsgID)
	}
	brokers, err := topicAddrs(r.Context(), cl, origin)
	if err != nil {
		return nil, err
	}
	props := maps.Clone(m.Properties)
	for _, k := range []string{record.PropertyRetryTopic, record.PropertyRealTopic, record.PropertyRealQueueID, record.PropertyDelayTimeLevel, "MAX_OFFSET", "MIN_OFFSET"} {
		delete(props, k)
	}
	props[record.PropertyUniqClientMsgID] = fmt.Sprintf("%X", time.Now().UnixNano())
	props[record.PropertyOriginMessageID] = f.MsgID
	name := slices.Sorted(maps.Keys(brokers))[0]
	res, err := cl.SendMessage(r.Context(), brokers[name], "CONSOLE_PRODUCER",
		&record.Message{Topic: origin, Body: m.Body, Flag: m.Flag, Properties: props})
	if err != nil {
		return nil, err
	}
	c.log.Info("console: dead letter resent", "msgId", f.MsgID, "topic", origin, "newMsgId", res.MsgID)
	return map[string]any{"msgId": res.MsgID, "topic": origin}, nil
}
