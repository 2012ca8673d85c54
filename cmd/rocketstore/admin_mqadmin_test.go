package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/admin"
)

// TestAdminCLIPrintsWhatMqadminPrints holds the commands to mqadmin's
// output and flags, so scripts written for mqadmin read rocketstore's.
func TestAdminCLIPrintsWhatMqadminPrints(t *testing.T) {
	n := adminNode(t)
	a, b := n.Addr, n.BrokerAddr

	got := ok(t, a, "updateTopic", "-t", "Orders", "-b", b, "-r", "2", "-w", "2", "-o", "false")
	want := "create topic to " + b + " success.\n" +
		"TopicConfig [topicName=Orders, readQueueNums=2, writeQueueNums=2, perm=RW-, topicFilterType=SINGLE_TAG, topicSysFlag=0, order=false]\n"
	if got != want {
		t.Errorf("updateTopic printed\n%q\nwant\n%q", got, want)
	}
	got = ok(t, a, "updateSubGroup", "-g", "Billing", "-c", "DefaultCluster", "-s", "true", "-d", "false", "-r", "3")
	want = "create subscription group to " + b + " success.\n" +
		"SubscriptionGroupConfig [groupName=Billing, consumeEnable=true, consumeFromMinEnable=false, consumeBroadcastEnable=false, " +
		"retryQueueNums=1, retryMaxTimes=3, brokerId=0, whichBrokerWhenConsumeSlowly=1, notifyConsumerIdsChangedEnable=true]\n"
	if got != want {
		t.Errorf("updateSubGroup printed\n%q\nwant\n%q", got, want)
	}
	fails(t, a, `"maybe" is not true or false`, "updateSubGroup", "-g", "Billing", "-b", b, "-s", "maybe")

	// topicList -c is mqadmin's clusterModel switch: cluster, topic and
	// consumer group columns, one row a group.
	c, err := admin.NewClient([]string{a}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.UpdateConsumerOffset(context.Background(), b, "Billing", "Orders", 0, 0); err != nil {
		t.Fatal(err)
	}
	got = ok(t, a, "topicList", "-c")
	wantLine(t, got, `#Cluster Name\s+#Topic\s+#Consumer Group`)
	wantLine(t, got, `DefaultCluster\s+Orders\s+Billing`)
	wantLine(t, got, `DefaultCluster\s+TBW102`)

	// clusterList -m: the put and get totals of yesterday and today.
	wantLine(t, ok(t, a, "clusterList", "-m"), `#Cluster Name\s+#Broker Name\s+#InTotalYest\s+#OutTotalYest\s+#InTotalToday\s+#OutTotalToday`)
	wantLine(t, ok(t, a, "clusterList", "-m"), `DefaultCluster\s+broker-a\s+\d+\s+\d+\s+\d+\s+\d+`)

	// topicStatus -c: the queues on that cluster's brokers.
	wantLine(t, ok(t, a, "topicStatus", "-t", "Orders", "-c", "DefaultCluster"), `broker-a\s+1\s+0\s+0`)
	fails(t, a, "cluster Nope not found", "topicStatus", "-t", "Orders", "-c", "Nope")

	// sendMessage to a topic nobody created: the broker creates it from
	// TBW102, as it does for a producer, since auto-create is on.
	wantLine(t, ok(t, a, "sendMessage", "-t", "Fresh", "-p", "hello"), `broker-a\s+[0-3]\s+SEND_OK`)
	if _, found := n.Broker.Topics().Get("Fresh"); !found {
		t.Fatal("sendMessage did not create the topic")
	}

	if got := ok(t, a, "topicRoute", "-t", "Orders"); !strings.HasSuffix(got, "}\n") {
		t.Errorf("topicRoute does not end with a newline: %q", got[max(0, len(got)-20):])
	}
}

// wantLine fails unless some line of out matches the regular expression.
func wantLine(t *testing.T, out, re string) {
	t.Helper()
	r := regexp.MustCompile(re)
	for _, l := range strings.Split(out, "\n") {
		if r.MatchString(l) {
			return
		}
	}
	t.Errorf("no line matches %s:\n%s", re, out)
}
