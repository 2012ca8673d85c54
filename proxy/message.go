package proxy

import (
	"bytes"
	"compress/zlib"
	"hash/crc32"
	"io"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/proxy/rmqpb"
	"github.com/rocketstore/rocketstore/record"
)

// properties returns a stored message's properties as a map.
func properties(m *record.MessageExt) map[string]string {
	if m.Properties != nil {
		return m.Properties
	}
	return record.ParseProperties(m.EncodedProperties)
}

// messageID is the message id a 5.x client sees: the client's UNIQ_KEY,
// or the offset message id of a message sent without one.
func messageID(m *record.MessageExt, props map[string]string) string {
	if id := props[record.PropertyUniqClientMsgID]; id != "" {
		return id
	}
	return m.MsgID()
}

// toMessage converts a stored message to what a 5.x consumer receives
// (GrpcConverter.buildMessage): user properties apart from the system
// ones, tag, keys, message id, born and store host and time, the
// message group, the delivery time, and a CRC32 body digest. A body
// compressed by a 4.x producer (zlib) is delivered decompressed; a 5.x
// producer's gzip body is delivered as GZIP, as it was sent.
func toMessage(m *record.MessageExt, topic string) *rmqpb.Message {
	props := properties(m)
	body, enc := m.Body, rmqpb.Encoding_IDENTITY
	if m.SysFlag&record.FlagCompressed != 0 {
		if len(body) > 1 && body[0] == 0x1f && body[1] == 0x8b {
			enc = rmqpb.Encoding_GZIP
		} else if r, err := zlib.NewReader(bytes.NewReader(body)); err == nil {
			if b, err := io.ReadAll(r); err == nil {
				body = b
			}
		}
	}
	sp := &rmqpb.SystemProperties{
		MessageId:      messageID(m, props),
		BodyDigest:     &rmqpb.Digest{Type: rmqpb.DigestType_CRC32, Checksum: strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10)},
		BodyEncoding:   enc,
		MessageType:    messageType(props),
		BornTimestamp:  timestamppb.New(time.UnixMilli(m.BornTimestamp)),
		BornHost:       m.BornHost.Addr().String(),
		StoreTimestamp: timestamppb.New(time.UnixMilli(m.StoreTimestamp)),
		StoreHost:      m.StoreHost.String(),
		QueueId:        m.QueueID,
	}
	if t := props[record.PropertyTags]; t != "" {
		sp.Tag = &t
	}
	if k := props[record.PropertyKeys]; k != "" {
		sp.Keys = strings.Fields(k)
	}
	if g := props[record.PropertyShardingKey]; g != "" {
		sp.MessageGroup = &g
	}
	if tc := props[propTraceContext]; tc != "" {
		sp.TraceContext = &tc
	}
	if ms, err := strconv.ParseInt(props[record.PropertyTimerDeliverMS], 10, 64); err == nil {
		sp.DeliveryTimestamp = timestamppb.New(time.UnixMilli(ms))
	}
	user := make(map[string]string, len(props))
	for k, v := range props {
		if !systemProperties[k] && !strings.HasPrefix(k, "__") && k != propBornTimestamp {
			user[k] = v
		}
	}
	return &rmqpb.Message{Topic: &rmqpb.Resource{Name: topic}, UserProperties: user, SystemProperties: sp, Body: body}
}

// messageType is the 5.x type a stored message was sent as.
func messageType(props map[string]string) rmqpb.MessageType {
	switch config.MessageTypeOf(props) {
	case config.MessageTypeTransaction:
		return rmqpb.MessageType_TRANSACTION
	case config.MessageTypeDelay:
		return rmqpb.MessageType_DELAY
	case config.MessageTypeFIFO:
		return rmqpb.MessageType_FIFO
	}
	return rmqpb.MessageType_NORMAL
}

// transactionTopic is the real topic of a half message.
func transactionTopic(props map[string]string) string { return props[record.PropertyRealTopic] }
