package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/rocketstore/rocketstore/admin"
)

// mqBool is a boolean flag that takes its value as mqadmin's do
// (`-o true`, `-s false`): commons-cli options with an argument, not
// switches. A bare `-o` is refused, as mqadmin refuses it.
type mqBool struct{ p *bool }

func (b mqBool) String() string {
	if b.p == nil {
		return "false"
	}
	return strconv.FormatBool(*b.p)
}

func (b mqBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("%q is not true or false", s)
	}
	*b.p = v
	return nil
}

func (mqBool) Type() string { return "true|false" }

// mqBoolVarP defines an mqBool flag.
func mqBoolVarP(f *pflag.FlagSet, p *bool, name, short string, def bool, usage string) {
	*p = def
	f.VarP(mqBool{p}, name, short, usage)
}

// perm2String is RocketMQ's PermName.perm2String: R, W and X (inherited)
// in place of dashes.
func perm2String(perm int) string {
	b := []byte("---")
	if perm&4 != 0 {
		b[0] = 'R'
	}
	if perm&2 != 0 {
		b[1] = 'W'
	}
	if perm&1 != 0 {
		b[2] = 'X'
	}
	return string(b)
}

// topicConfigString is what mqadmin 4.x prints for a topic it created
// (TopicConfig.toString).
func topicConfigString(tc admin.TopicConfig) string {
	filter := tc.TopicFilterType
	if filter == "" {
		filter = "SINGLE_TAG"
	}
	return fmt.Sprintf("TopicConfig [topicName=%s, readQueueNums=%d, writeQueueNums=%d, perm=%s, topicFilterType=%s, topicSysFlag=%d, order=%t]",
		tc.TopicName, tc.ReadQueueNums, tc.WriteQueueNums, perm2String(tc.Perm), filter, tc.TopicSysFlag, tc.Order)
}

// subGroupString is what mqadmin 4.x prints for a subscription group it
// created (SubscriptionGroupConfig.toString).
func subGroupString(sg admin.SubscriptionGroupConfig) string {
	return fmt.Sprintf("SubscriptionGroupConfig [groupName=%s, consumeEnable=%t, consumeFromMinEnable=%t, consumeBroadcastEnable=%t, "+
		"retryQueueNums=%d, retryMaxTimes=%d, brokerId=%d, whichBrokerWhenConsumeSlowly=%d, notifyConsumerIdsChangedEnable=%t]",
		sg.GroupName, sg.ConsumeEnable, sg.ConsumeFromMinEnable, sg.ConsumeBroadcastEnable, sg.RetryQueueNums, sg.RetryMaxTimes,
		sg.BrokerID, sg.WhichBrokerWhenConsumeSlowly, sg.NotifyConsumerIdsChangedEnable)
}
