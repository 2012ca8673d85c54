package timer

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrBadHandle reports a recall handle that does not decode.
var ErrBadHandle = errors.New("timer: recall handle is invalid")

// RecallHandle is RocketMQ 5.x's RecallMessageHandle.HandleV1: what a
// send of a timer message answers, and what a recall names the message
// by. Encoded, it is the URL-safe base64 of "v1 topic brokerName
// timestamp messageId".
type RecallHandle struct {
	Topic      string
	BrokerName string
	// DeliverMs is the message's slot time (its TIMER_OUT_MS).
	DeliverMs int64
	// MessageID is the message's UNIQ_KEY.
	MessageID string
}

const handleVersion = "v1"

// String encodes the handle (HandleV1.buildHandle).
func (h RecallHandle) String() string {
	raw := strings.Join([]string{handleVersion, h.Topic, h.BrokerName, strconv.FormatInt(h.DeliverMs, 10), h.MessageID}, " ")
	return base64.URLEncoding.EncodeToString([]byte(raw))
}

// ParseRecallHandle decodes a handle (RecallMessageHandle.decodeHandle).
func ParseRecallHandle(s string) (RecallHandle, error) {
	raw, err := base64.URLEncoding.DecodeString(s)
	if err != nil || s == "" {
		return RecallHandle{}, fmt.Errorf("%w: not URL-safe base64", ErrBadHandle)
	}
	items := strings.Split(string(raw), " ")
	if len(items) < 5 || items[0] != handleVersion {
		return RecallHandle{}, fmt.Errorf("%w: want \"v1 topic broker timestamp id\", got %d fields", ErrBadHandle, len(items))
	}
	ms, err := strconv.ParseInt(items[3], 10, 64)
	if err != nil {
		return RecallHandle{}, fmt.Errorf("%w: timestamp %q", ErrBadHandle, items[3])
	}
	return RecallHandle{Topic: items[1], BrokerName: items[2], DeliverMs: ms, MessageID: items[4]}, nil
}
