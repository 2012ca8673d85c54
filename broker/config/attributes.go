package config

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/rocketstore/rocketstore/record"
)

// MessageType is a topic's message.type attribute (RocketMQ 5.x's
// TopicMessageType): which messages the topic accepts from 5.x clients.
type MessageType string

// Message types. A topic without the attribute is Normal (TopicConfig.
// getTopicMessageType), auto-created topics included: their config is
// made without attributes.
const (
	MessageTypeUnspecified MessageType = "UNSPECIFIED"
	MessageTypeNormal      MessageType = "NORMAL"
	MessageTypeFIFO        MessageType = "FIFO"
	MessageTypeDelay       MessageType = "DELAY"
	MessageTypeTransaction MessageType = "TRANSACTION"
	MessageTypeMixed       MessageType = "MIXED"
)

// AttrMessageType is the topic attribute that holds the message type.
const AttrMessageType = "message.type"

// ErrBadAttribute reports a topic attribute modification RocketMQ refuses.
var ErrBadAttribute = errors.New("config: bad topic attribute")

// ErrMessageTypeConflict reports a message whose type the topic does not
// accept (the proxy's MESSAGE_PROPERTY_CONFLICT_WITH_TYPE).
var ErrMessageTypeConflict = errors.New("TopicMessageType validate failed")

// topicAttribute is one of RocketMQ's TopicAttributes: an enum (values)
// or a long range (min..max).
type topicAttribute struct {
	changeable bool
	values     []string
	min, max   int64
}

// topicAttributes is TopicAttributes.ALL.
var topicAttributes = map[string]topicAttribute{
	"queue.type":     {values: []string{"BatchCQ", "SimpleCQ"}},
	"cleanup.policy": {values: []string{"DELETE", "COMPACTION"}},
	AttrMessageType: {changeable: true, values: []string{string(MessageTypeUnspecified), string(MessageTypeNormal),
		string(MessageTypeFIFO), string(MessageTypeDelay), string(MessageTypeTransaction), string(MessageTypeMixed)}},
	"reserve.time": {changeable: true, min: -1, max: 1<<63 - 1},
}

func (a topicAttribute) check(key, v string) error {
	if a.values != nil {
		if !slices.Contains(a.values, v) {
			return fmt.Errorf("%w: value %q of %s is not one of %v", ErrBadAttribute, v, key, a.values)
		}
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < a.min || n > a.max {
		return fmt.Errorf("%w: value %q of %s is not a number in %d..%d", ErrBadAttribute, v, key, a.min, a.max)
	}
	return nil
}

// ParseAttributes parses an attribute modification as mqadmin's -a flag
// and CreateTopicRequestHeader.attributes carry it (AttributeParser):
// "+key=value" adds or changes, "-key" deletes, comma-separated. The
// keys of the result keep their sign.
func ParseAttributes(s string) (map[string]string, error) {
	mods := map[string]string{}
	if s == "" {
		return mods, nil
	}
	for _, kv := range strings.Split(s, ",") {
		key, value, hasValue := strings.Cut(kv, "=")
		switch {
		case hasValue && !strings.HasPrefix(key, "+"):
			return nil, fmt.Errorf("%w: add/alter attribute format is wrong: %q", ErrBadAttribute, kv)
		case !hasValue && !strings.HasPrefix(key, "-"):
			return nil, fmt.Errorf("%w: delete attribute format is wrong: %q", ErrBadAttribute, kv)
		}
		if _, dup := mods[key]; dup {
			return nil, fmt.Errorf("%w: key duplication: %q", ErrBadAttribute, key)
		}
		mods[key] = value
	}
	return mods, nil
}

// AlterAttributes applies a parsed modification to a topic's current
// attributes (AttributeUtil.alterCurrentAttributes): creating a topic
// takes only additions; a change of an existing topic may add, change and
// delete (existing keys only) changeable attributes only. Unknown keys
// are refused.
func AlterAttributes(create bool, current, mods map[string]string) (map[string]string, error) {
	out := maps.Clone(current)
	if out == nil {
		out = map[string]string{}
	}
	seen := map[string]bool{}
	for _, key := range slices.Sorted(maps.Keys(mods)) {
		sign, real := key[:min(1, len(key))], key[min(1, len(key)):]
		if real == "" || strings.ContainsAny(real, "+-") {
			return nil, fmt.Errorf("%w: kv string format wrong: %q", ErrBadAttribute, key)
		}
		if seen[real] {
			return nil, fmt.Errorf("%w: alter duplication key: %q", ErrBadAttribute, real)
		}
		seen[real] = true
		attr, known := topicAttributes[real]
		if !known {
			return nil, fmt.Errorf("%w: unsupported key: %q", ErrBadAttribute, real)
		}
		_, exists := current[real]
		switch {
		case create && sign != "+":
			return nil, fmt.Errorf("%w: only add attribute is supported while creating topic. key: %q", ErrBadAttribute, real)
		case sign == "+":
			if !create && !attr.changeable {
				return nil, fmt.Errorf("%w: attempt to update an unchangeable attribute. key: %q", ErrBadAttribute, real)
			}
			if err := attr.check(real, mods[key]); err != nil {
				return nil, err
			}
			out[real] = mods[key]
		case sign == "-":
			if !exists {
				return nil, fmt.Errorf("%w: attempt to delete a nonexistent key: %q", ErrBadAttribute, real)
			}
			if !attr.changeable {
				return nil, fmt.Errorf("%w: attempt to delete an unchangeable attribute. key: %q", ErrBadAttribute, real)
			}
			delete(out, real)
		default:
			return nil, fmt.Errorf("%w: wrong format key: %q", ErrBadAttribute, key)
		}
	}
	return out, nil
}

// MessageType returns the topic's message type: its message.type
// attribute, NORMAL when it has none.
func (tc TopicConfig) MessageType() MessageType {
	if v := tc.Attributes[AttrMessageType]; v != "" {
		return MessageType(v)
	}
	return MessageTypeNormal
}

// MessageTypeOf returns the type of a message from its properties
// (TopicMessageType.parseFromMessageProperty): TRANSACTION when
// TRAN_MSG is "true", DELAY with a delay level or a 5.x timer property,
// FIFO with a message group (__SHARDINGKEY), NORMAL otherwise.
func MessageTypeOf(props map[string]string) MessageType {
	_, delayed := props[record.PropertyDelayTimeLevel]
	for _, k := range []string{record.PropertyTimerDeliverMS, record.PropertyTimerDelaySec, record.PropertyTimerDelayMS} {
		_, t := props[k]
		delayed = delayed || t
	}
	_, grouped := props[record.PropertyShardingKey]
	switch {
	case props[record.PropertyTransactionPrep] == "true":
		return MessageTypeTransaction
	case delayed:
		return MessageTypeDelay
	case grouped:
		return MessageTypeFIFO
	}
	return MessageTypeNormal
}

// CheckMessageType refuses a message of type msg on a topic of type
// topic as RocketMQ 5.x's proxy does (DefaultTopicMessageTypeValidator,
// when enableTopicMessageTypeCheck is on, its default): the types must
// be equal, unless the topic is MIXED; an UNSPECIFIED message is always
// refused. The error wraps ErrMessageTypeConflict with the proxy's text.
// Sends through the 4.x remoting protocol are not checked (the broker
// does not check them either).
func CheckMessageType(topic, msg MessageType) error {
	if msg == MessageTypeUnspecified || (msg != topic && topic != MessageTypeMixed) {
		return fmt.Errorf("%w, the expected type is %s, but actual type is %s", ErrMessageTypeConflict, topic, msg)
	}
	return nil
}
