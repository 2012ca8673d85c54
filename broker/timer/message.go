package timer

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rocketstore/rocketstore/record"
)

// Errors of Transform, as RocketMQ's PutMessageStatus names them.
var (
	// ErrDisabled is WHEEL_TIMER_NOT_ENABLE: a timer message reached a
	// broker with timerWheelEnable false.
	ErrDisabled = errors.New("timer: timer messages are disabled (timerWheelEnable=false)")
	// ErrIllegal is WHEEL_TIMER_MSG_ILLEGAL: a delivery time that does
	// not parse or is too far ahead, or a recall of a due message.
	ErrIllegal = errors.New("timer: illegal timer message")
)

// IsTimer reports whether the encoded properties props name a delivery
// time (or a recall), without allocating: the send path checks every
// message. An entry with an empty value is no entry, as ParseProperties
// reads them.
func IsTimer(props string) bool {
	for len(props) > 0 {
		item := props
		if i := strings.IndexByte(props, 2); i >= 0 {
			item, props = props[:i], props[i+1:]
		} else {
			props = ""
		}
		k, v, ok := strings.Cut(item, "\x01")
		if !ok || v == "" {
			continue
		}
		switch k {
		case record.PropertyTimerDeliverMS, record.PropertyTimerDelaySec, record.PropertyTimerDelayMS,
			record.PropertyStartDeliverTime, record.PropertyTimerDelUniqKey:
			return true
		}
	}
	return false
}

// Transform is RocketMQ's HookUtils.handleScheduleMessage for timer
// messages. It returns the message to store instead of m (m is not
// modified): a future delivery time moves it to the timer topic, queue 0,
// with TIMER_OUT_MS (the time rounded up to the precision), REAL_TOPIC
// and REAL_QID. It returns m itself when m is no timer message (a delay
// level wins over a timer property, whose properties are then dropped,
// as RocketMQ does), and when its time has passed: it is then stored in
// its topic, delivered at once. now is the store's clock in ms.
func (c Config) Transform(m *record.Message, now int64) (*record.Message, error) {
	if t := record.TransactionType(m.SysFlag); t != record.TransactionNotType && t != record.TransactionCommit {
		return m, nil
	}
	if m.Topic == record.TimerTopic {
		return m, nil
	}
	props := m.Properties
	if m.EncodedProperties != nil {
		props = record.ParseProperties(m.EncodedProperties)
	}
	if lv, _ := strconv.Atoi(props[record.PropertyDelayTimeLevel]); lv > 0 {
		return withoutTimerProperties(m, props), nil
	}
	if props[record.PropertyTimerOutMS] != "" {
		return m, nil
	}
	deliverMs, isTimer, err := deliverTime(props, now)
	if !isTimer {
		return m, nil
	}
	if c.Disabled {
		return nil, ErrDisabled
	}
	if err != nil {
		return nil, err
	}
	_, recall := props[record.PropertyTimerDelUniqKey]
	if deliverMs <= now {
		if recall {
			return nil, fmt.Errorf("%w: recall of a message due at %d, now %d: it is delivered already", ErrIllegal, deliverMs, now)
		}
		return m, nil
	}
	c = c.withDefaults()
	if ahead := deliverMs - now; ahead > c.MaxDelay.Milliseconds() {
		return nil, fmt.Errorf("%w: the delivery time %d is %d ms ahead, more than timerMaxDelaySec %d s",
			ErrIllegal, deliverMs, ahead, int64(c.MaxDelay.Seconds()))
	}
	cp := *m
	cp.EncodedProperties = nil
	cp.Properties = make(map[string]string, len(props)+3)
	for k, v := range props {
		cp.Properties[k] = v
	}
	cp.Properties[record.PropertyTimerOutMS] = strconv.FormatInt(c.roundUp(deliverMs), 10)
	cp.Properties[record.PropertyRealTopic] = m.Topic
	cp.Properties[record.PropertyRealQueueID] = strconv.Itoa(int(m.QueueID))
	cp.Topic, cp.QueueID = record.TimerTopic, 0
	return &cp, nil
}

// roundUp returns the slot time of a delivery time: the next multiple of
// the precision at or after it.
func (c Config) roundUp(ms int64) int64 {
	p := c.PrecisionMs
	return (ms + p - 1) / p * p
}

// deliverTime reads the delivery time from the properties, in
// HookUtils's order (TIMER_DELAY_SEC, TIMER_DELAY_MS, TIMER_DELIVER_MS),
// then __STARTDELIVERTIME. isTimer is false when none is set.
func deliverTime(props map[string]string, now int64) (ms int64, isTimer bool, err error) {
	for _, f := range []struct {
		name  string
		scale int64
		base  int64
	}{
		{record.PropertyTimerDelaySec, 1000, now},
		{record.PropertyTimerDelayMS, 1, now},
		{record.PropertyTimerDeliverMS, 1, 0},
		{record.PropertyStartDeliverTime, 1, 0},
	} {
		v, ok := props[f.name]
		if !ok {
			continue
		}
		n, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil || n < 0 || n > (1<<62)/f.scale {
			return 0, true, fmt.Errorf("%w: %s %q is not a time", ErrIllegal, f.name, v)
		}
		return f.base + n*f.scale, true, nil
	}
	return 0, false, nil
}

// withoutTimerProperties returns m without the timer properties (a
// delayed message with both a level and a timer property).
func withoutTimerProperties(m *record.Message, props map[string]string) *record.Message {
	names := []string{record.PropertyTimerDeliverMS, record.PropertyTimerDelaySec, record.PropertyTimerDelayMS}
	found := false
	for _, k := range names {
		_, ok := props[k]
		found = found || ok
	}
	if !found {
		return m
	}
	cp := *m
	cp.EncodedProperties = nil
	cp.Properties = make(map[string]string, len(props))
	for k, v := range props {
		cp.Properties[k] = v
	}
	for _, k := range names {
		delete(cp.Properties, k)
	}
	return &cp
}
