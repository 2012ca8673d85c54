package broker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/record"
)

func TestOffsetMovedEventPublished(t *testing.T) {
	cfg := testConfig()
	cfg.BrokerName = "broker-a"
	b := open(t, memfs.New(nil), cfg)
	defer b.Close()
	createTopic(t, b, "T", 1)
	put(t, b, msg("T", 0, "A", ""))
	resp, err := b.Pull(context.Background(), pullReq("g", "T", 0, 1<<40))
	if err != nil || resp.Code != broker.PullOffsetMoved || resp.NextBeginOffset != 1 {
		t.Fatalf("%+v %v", resp, err)
	}
	m := waitMessage(t, b, record.OffsetMovedEventTopic, 0, 0, 5*time.Second)
	if m.Properties["TAGS"] != "g" || m.Properties["KEYS"] != "g" || m.SysFlag != 0 {
		t.Fatalf("%+v", m.Properties)
	}
	var ev map[string]any
	if err := json.Unmarshal(m.Body, &ev); err != nil {
		t.Fatal(err)
	}
	want := `{"consumerGroup":"g","messageQueue":{"brokerName":"broker-a","queueId":0,"topic":"T"},"offsetNew":1,"offsetRequest":1099511627776}`
	if string(m.Body) != want {
		t.Fatalf("body %s\nwant %s", m.Body, want)
	}
}
