package server_test

import (
	"errors"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/broker/timer"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

func TestTimerFileConfigKeys(t *testing.T) {
	fc, err := server.ParseFileConfig([]byte("timerWheelEnable: false\ntimerMaxDelaySec: 3600\ntimerPrecisionMs: 100\n"))
	if err != nil {
		t.Fatal(err)
	}
	var nc server.NodeConfig
	if err := fc.Apply(&nc); err != nil {
		t.Fatal(err)
	}
	if tc := nc.Broker.Timer; !tc.Disabled || tc.MaxDelay != time.Hour || tc.PrecisionMs != 100 {
		t.Fatalf("timer keys: %+v", tc)
	}
	fc, _ = server.ParseFileConfig([]byte("timerPrecisionMs: 5\n"))
	if err := fc.Apply(&server.NodeConfig{}); !errors.Is(err, timer.ErrBadConfig) {
		t.Fatalf("timerPrecisionMs 5: %v", err)
	}
}

// TestTimerSendAndRecallRemoting: a remoting send with TIMER_DELAY_SEC
// answers a recall handle; RECALL_MESSAGE with it succeeds and names the
// message; a malformed handle answers ILLEGAL_OPERATION (604).
func TestTimerSendAndRecallRemoting(t *testing.T) {
	e := newEnv(t)
	resp := e.send("E", 0, "b", props("UNIQ_KEY", "ID1", "TIMER_DELAY_SEC", "600"))
	wantCode(t, resp, remoting.CodeSuccess)
	handle := resp.ExtFields["recallHandle"]
	if handle == "" {
		t.Fatalf("no recall handle: %v", resp.ExtFields)
	}
	r := e.call(remoting.CodeRecallMessage, nil, "producerGroup", "PG", "topic", "E", "recallHandle", handle)
	wantCode(t, r, remoting.CodeSuccess)
	if r.ExtFields["msgId"] != "ID1" {
		t.Fatalf("recall answer %v", r.ExtFields)
	}
	wantCode(t, e.call(remoting.CodeRecallMessage, nil, "topic", "E", "recallHandle", "bad"), 604)
	// A plain send carries no handle.
	if resp := e.send("E", 0, "b", props("UNIQ_KEY", "ID2")); resp.ExtFields["recallHandle"] != "" {
		t.Fatalf("plain send answered %v", resp.ExtFields)
	}
}
