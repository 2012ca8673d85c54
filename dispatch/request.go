package dispatch

import (
	"bytes"
	"strconv"
	"time"

	"github.com/rocketstore/rocketstore/engine/record"
)

// ScheduleTopic is the topic of delayed messages, whose ConsumeQueue
// tagsCode is the deliver time instead of a tag hash.
const ScheduleTopic = "SCHEDULE_TOPIC_XXXX"

// Request is one record to dispatch (RocketMQ's DispatchRequest). Its byte
// slices alias the CommitLog and are valid only during Dispatch; copy what
// must outlive the call.
type Request struct {
	Topic                     []byte
	QueueID                   int32
	CommitLogOffset           int64
	MsgSize                   int32
	TagsCode                  int64
	StoreTimestamp            int64
	ConsumeQueueOffset        int64
	SysFlag                   int32
	PreparedTransactionOffset int64
	// Keys is the KEYS property (space-separated), UniqKey UNIQ_KEY.
	Keys    []byte
	UniqKey []byte
	// Properties is the encoded property string (record.ForEachProperty
	// walks it).
	Properties []byte
}

// Dispatchable reports whether the record belongs in a ConsumeQueue:
// prepared and rolled-back transaction records do not.
func (r *Request) Dispatchable() bool {
	switch record.TransactionType(r.SysFlag) {
	case record.TransactionPrepared, record.TransactionRollback:
		return false
	}
	return true
}

// Parser turns CommitLog bytes into Requests.
type Parser struct {
	// DelayLevels are the delay durations of levels 1..n, for the deliver
	// time of schedule-topic messages.
	DelayLevels []time.Duration
	// NoPhysicalOffsetCheck accepts records whose PHYSICALOFFSET is not
	// their position: for the engine's broken-variant tests only.
	NoPhysicalOffsetCheck bool
}

// Parse checks the record at the start of buf, expected at CommitLog
// offset pos, and returns it as a Request. For a BLANK record it returns
// blank = true and the size it fills. Errors come from record.Check.
func (p *Parser) Parse(buf []byte, pos int64, checkCRC bool) (req Request, size int32, blank bool, err error) {
	size, blank, err = p.ParseInto(&req, buf, pos, checkCRC)
	return req, size, blank, err
}

// ParseInto is Parse writing the Request into *req (every field, also on
// failure) instead of returning it: a caller parsing many records into a
// slice spares copies of the Request.
func (p *Parser) ParseInto(req *Request, buf []byte, pos int64, checkCRC bool) (size int32, blank bool, err error) {
	var info record.Info
	err = record.CheckInto(&info, buf, pos, record.Checks{CRC: checkCRC, NoPhysicalOffset: p.NoPhysicalOffsetCheck})
	if err != nil || info.Blank {
		*req = Request{}
		return info.Size, err == nil, err
	}
	*req = Request{
		Topic:                     info.Topic,
		QueueID:                   info.QueueID,
		CommitLogOffset:           info.PhysicalOffset,
		MsgSize:                   info.Size,
		StoreTimestamp:            info.StoreTimestamp,
		ConsumeQueueOffset:        info.QueueOffset,
		SysFlag:                   info.SysFlag,
		PreparedTransactionOffset: info.PreparedTransactionOffset,
		Properties:                info.Properties,
	}
	tags, delay := dispatchProperties(req, info.Properties)
	if len(tags) > 0 {
		// The []byte variant: string(tags) would allocate per record.
		req.TagsCode = int64(record.JavaStringHashCodeBytes(tags))
	}
	if delay != nil && string(info.Topic) == ScheduleTopic {
		req.TagsCode = p.deliverTime(delay, info.StoreTimestamp)
	}
	return info.Size, false, nil
}

// Separators of the encoded property string (RocketMQ's
// NAME_VALUE_SEPARATOR and PROPERTY_SEPARATOR).
const (
	nameValueSeparator = 1
	propertySeparator  = 2
)

// dispatchProperties sets req.Keys and req.UniqKey from the encoded
// properties b and returns the TAGS and DELAY values, the only properties
// dispatch reads. It walks b as record.ForEachProperty does (the same
// pairs are valid, a later duplicate wins) in one pass without a call per
// property: recovery parses every record of the CommitLog.
func dispatchProperties(req *Request, b []byte) (tags, delay []byte) {
	for len(b) > 0 {
		end := bytes.IndexByte(b, propertySeparator)
		if end < 0 {
			end = len(b)
		}
		item := b[:end]
		b = b[min(end+1, len(b)):]
		kv := bytes.IndexByte(item, nameValueSeparator)
		if kv <= 0 || kv >= len(item)-1 {
			continue // also an item shorter than 3 bytes
		}
		v := item[kv+1:]
		switch string(item[:kv]) {
		case record.PropertyTags:
			tags = v
		case record.PropertyKeys:
			req.Keys = v
		case record.PropertyUniqClientMsgID:
			req.UniqKey = v
		case record.PropertyDelayTimeLevel:
			delay = v
		}
	}
	return tags, delay
}

// deliverTime is RocketMQ's computeDeliverTimestamp: the store time plus
// the level's delay; an unknown level gives store time + 1 s.
func (p *Parser) deliverTime(level []byte, storeTs int64) int64 {
	lv, err := strconv.Atoi(string(level))
	if err != nil || lv <= 0 {
		return storeTs + 1000
	}
	lv = min(lv, len(p.DelayLevels))
	if lv == 0 {
		return storeTs + 1000
	}
	return storeTs + p.DelayLevels[lv-1].Milliseconds()
}
