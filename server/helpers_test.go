package server_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/spf13/afero"
	"go.uber.org/goleak"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/index"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type env struct {
	t   testing.TB
	b   *broker.Broker
	s   *server.Server
	cl  *remoting.Client
	fs  *memfs.FS
	adr string
}

// newEnv starts a broker on an in-memory FS and a server on 127.0.0.1:0
// with one connected client.
func newEnv(t testing.TB, mod ...func(*broker.Config, *server.Config)) *env {
	t.Helper()
	bc := broker.Config{
		Store: engine.Config{CommitLogFileSize: 1 << 20, ConsumeQueueUnits: 1000, Logger: quiet,
			DelayLevels: []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 60 * time.Millisecond, 80 * time.Millisecond}},
		Index: index.Config{MaxHashSlotNum: 64, MaxIndexNum: 256},
	}
	sc := server.Config{Logger: quiet, ScanInterval: 20 * time.Millisecond}
	for _, f := range mod {
		f(&bc, &sc)
	}
	fs := memfs.New(afero.NewMemMapFs())
	b, err := broker.Open(fs, bc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(b, sc)
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, b: b, s: s, fs: fs, adr: a.String()}
	e.cl = e.dial(nil)
	t.Cleanup(func() {
		_ = e.cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	})
	return e
}

func (e *env) dial(h remoting.Handler) *remoting.Client {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl, err := remoting.Dial(ctx, e.adr, remoting.ClientOptions{Options: remoting.Options{Logger: quiet}, Handler: h})
	if err != nil {
		e.t.Fatal(err)
	}
	return cl
}

// call sends a request with ext fields (name, value, name, value ...) and body.
func call(t testing.TB, cl *remoting.Client, code int32, body []byte, kv ...string) *remoting.RemotingCommand {
	t.Helper()
	req := remoting.NewRequest(code, body)
	for i := 0; i+1 < len(kv); i += 2 {
		req.SetExt(kv[i], kv[i+1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.Invoke(ctx, req)
	if err != nil {
		t.Fatalf("invoke %d: %v", code, err)
	}
	return resp
}

func (e *env) call(code int32, body []byte, kv ...string) *remoting.RemotingCommand {
	e.t.Helper()
	return call(e.t, e.cl, code, body, kv...)
}

func wantCode(t testing.TB, resp *remoting.RemotingCommand, code int32) {
	t.Helper()
	if resp.Code != code {
		t.Fatalf("code %d (%s), want %d", resp.Code, resp.Remark, code)
	}
}

func props(kv ...string) string {
	var b []byte
	for i := 0; i+1 < len(kv); i += 2 {
		b = append(b, kv[i]...)
		b = append(b, 1)
		b = append(b, kv[i+1]...)
		b = append(b, 2)
	}
	return string(b)
}

// send sends one message with SEND_MESSAGE (V1 header names).
func (e *env) send(topic string, qid int, body string, properties string, extra ...string) *remoting.RemotingCommand {
	e.t.Helper()
	kv := append([]string{"producerGroup", "PG", "topic", topic, "defaultTopic", "TBW102", "defaultTopicQueueNums", "4",
		"queueId", strconv.Itoa(qid), "sysFlag", "0", "bornTimestamp", "1", "flag", "0", "properties", properties,
		"reconsumeTimes", "0", "unitMode", "false", "batch", "false"}, extra...)
	return e.call(remoting.CodeSendMessage, []byte(body), kv...)
}

func (e *env) heartbeat(cl *remoting.Client, clientID, group string, subs map[string]string) *remoting.RemotingCommand {
	e.t.Helper()
	type sub struct {
		Topic      string `json:"topic"`
		SubString  string `json:"subString"`
		SubVersion int64  `json:"subVersion"`
		ExprType   string `json:"expressionType"`
	}
	var ss []sub
	for t, s := range subs {
		ss = append(ss, sub{t, s, time.Now().UnixMilli(), "TAG"})
	}
	body, _ := json.Marshal(map[string]any{
		"clientID":        clientID,
		"producerDataSet": []any{},
		"consumerDataSet": []any{map[string]any{"groupName": group, "consumeType": "CONSUME_PASSIVELY",
			"messageModel": "CLUSTERING", "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET", "subscriptionDataSet": ss}},
	})
	return call(e.t, cl, remoting.CodeHeartBeat, body)
}

// batchBody encodes messages as the clients' batch body.
func batchBody(msgs ...[2]string) []byte {
	var b []byte
	for _, m := range msgs {
		body, p := m[0], m[1]
		size := 20 + len(body) + 2 + len(p)
		b = binary.BigEndian.AppendUint32(b, uint32(size))
		b = binary.BigEndian.AppendUint32(b, 0)
		b = binary.BigEndian.AppendUint32(b, 0)
		b = binary.BigEndian.AppendUint32(b, 0)
		b = binary.BigEndian.AppendUint32(b, uint32(len(body)))
		b = append(b, body...)
		b = binary.BigEndian.AppendUint16(b, uint16(len(p)))
		b = append(b, p...)
	}
	return b
}

func pullReq(group, topic string, qid int, off int64, sysFlag int, suspendMs int) []string {
	return []string{"consumerGroup", group, "topic", topic, "queueId", strconv.Itoa(qid),
		"queueOffset", strconv.FormatInt(off, 10), "maxMsgNums", "32", "sysFlag", strconv.Itoa(sysFlag),
		"commitOffset", "0", "suspendTimeoutMillis", strconv.Itoa(suspendMs), "subscription", "*",
		"subVersion", "0", "expressionType", "TAG"}
}
