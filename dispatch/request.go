package dispatch

import (
	"bytes"
	"fmt"
	"strconv"
	"time"

	ihooks "github.com/rocketstore/rocketstore/internal/hooks"

	"github.com/rocketstore/rocketstore/record"
)

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
	// switches are the test switches (internal/hooks):
	// NoPhysicalOffsetCheck accepts records whose PHYSICALOFFSET is not
	// their position, for the engine's broken-variant tests.
	switches ihooks.Dispatch
}

func init() {
	ihooks.RegisterDispatch(func(v any) *ihooks.Dispatch {
		switch v := v.(type) {
		case *Parser:
			return &v.switches
		case *Service:
			return &v.switches
		}
		panic(fmt.Sprintf("dispatch: %T has no switches", v))
	})
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
	err = record.CheckInto(&info, buf, pos, record.Checks{CRC: checkCRC, NoPhysicalOffset: p.switches.NoPhysicalOffsetCheck})
	if err != nil || info.Blank {
		*req = Request{}
		return info.Size, err == nil, err
	}
	// Field by field: a composite literal is built on the stack and
	// copied, which stalled on store forwarding (recovery parses every
	// record of the CommitLog).
	req.Topic = info.Topic
	req.QueueID = info.QueueID
	req.CommitLogOffset = info.PhysicalOffset
	req.MsgSize = info.Size
	req.TagsCode = 0
	req.StoreTimestamp = info.StoreTimestamp
	req.ConsumeQueueOffset = info.QueueOffset
	req.SysFlag = info.SysFlag
	req.PreparedTransactionOffset = info.PreparedTransactionOffset
	req.Keys, req.UniqKey = nil, nil
	req.Properties = info.Properties
	tags, delay := dispatchProperties(req, info.Properties)
	if len(tags) > 0 {
		// The []byte variant: string(tags) would allocate per record.
		req.TagsCode = int64(record.JavaStringHashCodeBytes(tags))
	}
	if delay != nil && string(info.Topic) == record.ScheduleTopic {
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
// property: recovery parses every record of the CommitLog. A name holds
// no NAME_VALUE_SEPARATOR, so an item is one of the four exactly when it
// starts with that name and the separator; other items are skipped without
// looking for their separator.
func dispatchProperties(req *Request, b []byte) (tags, delay []byte) {
	for len(b) > 0 {
		end := bytes.IndexByte(b, propertySeparator)
		if end < 0 {
			end = len(b)
		}
		item := b[:end]
		b = b[min(end+1, len(b)):]
		if len(item) < 3 {
			continue
		}
		switch item[0] {
		case 'T':
			if v, ok := propertyValue(item, record.PropertyTags); ok {
				tags = v
			}
		case 'K':
			if v, ok := propertyValue(item, record.PropertyKeys); ok {
				req.Keys = v
			}
		case 'U':
			if v, ok := propertyValue(item, record.PropertyUniqClientMsgID); ok {
				req.UniqKey = v
			}
		case 'D':
			if v, ok := propertyValue(item, record.PropertyDelayTimeLevel); ok {
				delay = v
			}
		}
	}
	return tags, delay
}

// propertyValue returns the value of item when item is name, the
// NAME_VALUE_SEPARATOR and a value that is not empty.
func propertyValue(item []byte, name string) ([]byte, bool) {
	n := len(name)
	if len(item) <= n+1 || item[n] != nameValueSeparator || string(item[:n]) != name {
		return nil, false
	}
	return item[n+1:], true
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
