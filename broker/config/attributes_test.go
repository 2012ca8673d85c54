package config_test

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/record"
)

func TestParseAttributes(t *testing.T) {
	got, err := config.ParseAttributes("+message.type=FIFO,-reserve.time")
	if err != nil || !maps.Equal(got, map[string]string{"+message.type": "FIFO", "-reserve.time": ""}) {
		t.Fatalf("ParseAttributes = %v, %v", got, err)
	}
	for _, bad := range []string{"message.type=FIFO", "+message.type", "+a=1,+a=2"} {
		if _, err := config.ParseAttributes(bad); !errors.Is(err, config.ErrBadAttribute) {
			t.Errorf("ParseAttributes(%q): %v, want ErrBadAttribute", bad, err)
		}
	}
}

func TestAlterAttributes(t *testing.T) {
	mods := func(s string) map[string]string {
		m, err := config.ParseAttributes(s)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	got, err := config.AlterAttributes(true, nil, mods("+message.type=FIFO,+queue.type=SimpleCQ"))
	if err != nil || !maps.Equal(got, map[string]string{"message.type": "FIFO", "queue.type": "SimpleCQ"}) {
		t.Fatalf("create: %v, %v", got, err)
	}
	cur := got
	if got, err = config.AlterAttributes(false, cur, mods("+message.type=DELAY")); err != nil || got["message.type"] != "DELAY" {
		t.Fatalf("change message.type: %v, %v", got, err)
	}
	if cur["message.type"] != "FIFO" {
		t.Fatalf("AlterAttributes changed its input: %v", cur)
	}
	if got, err = config.AlterAttributes(false, cur, mods("-message.type")); err != nil || len(got) != 1 {
		t.Fatalf("delete message.type: %v, %v", got, err)
	}
	for _, c := range []struct {
		create bool
		mods   string
	}{
		{true, "-message.type"},                     // creating takes only additions
		{false, "+queue.type=BatchCQ"},              // unchangeable
		{false, "+cleanup.policy=DELETE"},           // unchangeable, even when absent
		{false, "+message.type=QUEUE"},              // not a type
		{false, "+colour=red"},                      // unknown key
		{false, "-reserve.time"},                    // not there
		{false, "+reserve.time=soon"},               // not a number
		{false, "+message.type=FIFO,-message.type"}, // twice
	} {
		if _, err := config.AlterAttributes(c.create, cur, mods(c.mods)); !errors.Is(err, config.ErrBadAttribute) {
			t.Errorf("AlterAttributes(create %v, %q): %v, want ErrBadAttribute", c.create, c.mods, err)
		}
	}
}

func TestMessageTypes(t *testing.T) {
	for _, c := range []struct {
		props map[string]string
		want  config.MessageType
	}{
		{nil, config.MessageTypeNormal},
		{map[string]string{"__SHARDINGKEY": "g"}, config.MessageTypeFIFO},
		{map[string]string{"TIMER_DELIVER_MS": "1"}, config.MessageTypeDelay},
		{map[string]string{"DELAY": "3", "__SHARDINGKEY": "g"}, config.MessageTypeDelay},
		{map[string]string{"TRAN_MSG": "true", "DELAY": "3"}, config.MessageTypeTransaction},
	} {
		if got := config.MessageTypeOf(c.props); got != c.want {
			t.Errorf("MessageTypeOf(%v) = %s, want %s", c.props, got, c.want)
		}
	}
	if err := config.CheckMessageType(config.MessageTypeFIFO, config.MessageTypeFIFO); err != nil {
		t.Fatal(err)
	}
	if err := config.CheckMessageType(config.MessageTypeMixed, config.MessageTypeDelay); err != nil {
		t.Fatal(err)
	}
	err := config.CheckMessageType(config.MessageTypeNormal, config.MessageTypeFIFO)
	if !errors.Is(err, config.ErrMessageTypeConflict) ||
		err.Error() != "TopicMessageType validate failed, the expected type is NORMAL, but actual type is FIFO" {
		t.Fatalf("NORMAL topic, FIFO message: %v", err)
	}
	if tc := config.NewTopicConfig("T"); tc.MessageType() != config.MessageTypeNormal {
		t.Fatalf("a topic without attributes is %s", tc.MessageType())
	}
}

// TestTopicAttributesPersist: UpdateAndAlter keeps the attributes in
// topics.json (RocketMQ 5.x's "attributes" map), and a later update
// without modifications keeps them.
func TestTopicAttributesPersist(t *testing.T) {
	fs := memfs.New(nil)
	load := func() *config.TopicManager {
		m, err := config.LoadTopics(fs, config.TopicOptions{AutoCreateTopicEnable: true, DefaultTopicQueueNums: 8,
			ScheduleQueueNums: 2, Clock: clockwork.NewFakeClockAt(time.UnixMilli(1))})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := load()
	tc := config.NewTopicConfig("F")
	if err := m.UpdateAndAlter(tc, map[string]string{"+message.type": "FIFO"}); err != nil {
		t.Fatal(err)
	}
	tc.Perm = record.PermRead
	if err := m.UpdateAndAlter(tc, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := load().Get("F")
	if got.MessageType() != config.MessageTypeFIFO || got.Perm != record.PermRead {
		t.Fatalf("reloaded F: %+v", got)
	}
	if err := m.UpdateAndAlter(tc, map[string]string{"-cleanup.policy": ""}); !errors.Is(err, config.ErrBadAttribute) {
		t.Fatalf("deleting a missing attribute: %v", err)
	}
}
