package main

import (
	"testing"

	"github.com/rocketstore/rocketstore/broker/config"
)

// TestAdminCLITopicAttributesAndFIFOGroup: updateTopic -a sets a topic's
// 5.x message type (mqadmin's flag), refused modifications name the
// problem, and updateSubGroup -o makes a FIFO group.
func TestAdminCLITopicAttributesAndFIFOGroup(t *testing.T) {
	n := adminNode(t)
	a := n.Addr
	ok(t, a, "updateTopic", "-t", "Orders", "-c", "DefaultCluster", "-r", "2", "-w", "2", "-a", "+message.type=FIFO")
	if tc, _ := n.Broker.Topics().Get("Orders"); tc.MessageType() != config.MessageTypeFIFO {
		t.Fatalf("Orders after -a +message.type=FIFO: %+v", tc)
	}
	fails(t, a, "unsupported key", "updateTopic", "-t", "Orders", "-c", "DefaultCluster", "-a", "+colour=red")
	fails(t, a, "MIXED message type is not supported", "updateTopic", "-t", "Orders", "-c", "DefaultCluster",
		"-a", "+message.type=MIXED")
	ok(t, a, "updateTopic", "-t", "Orders", "-c", "DefaultCluster", "-r", "2", "-w", "2", "-a", "-message.type")
	if tc, _ := n.Broker.Topics().Get("Orders"); tc.MessageType() != config.MessageTypeNormal || len(tc.Attributes) != 0 {
		t.Fatalf("Orders after -a -message.type: %+v", tc)
	}
	ok(t, a, "updateSubGroup", "-g", "Fifo", "-b", n.BrokerAddr, "-o", "true")
	if g, found, _ := n.Broker.Groups().Find("Fifo"); !found || !g.ConsumeMessageOrderly {
		t.Fatalf("group after -o: %+v %v", g, found)
	}
}
