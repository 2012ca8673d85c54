package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

// cppHeartbeat is the heartbeat of rocketmq-client-cpp 2.x's push
// consumer: enums as ordinals, subVersion as a string, tagsSet and codeSet
// arrays, no expressionType.
const cppHeartbeat = `{"clientID":"10.0.0.7@4242#1796134895","consumerDataSet":[{"consumeFromWhere":0,` +
	`"consumeType":1,"groupName":"CppGroup","messageModel":1,"subscriptionDataSet":[{"codeSet":[],` +
	`"subString":"*","subVersion":"1796134895301","tagsSet":[],"topic":"CppTopic"}]}],` +
	`"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"}]}` + "\n"

func TestCppHeartbeatRegistersTheConsumer(t *testing.T) {
	e := newEnv(t)
	wantCode(t, e.call(remoting.CodeHeartBeat, []byte(cppHeartbeat)), remoting.CodeSuccess)
	resp := e.call(remoting.CodeGetConsumerListByGroup, nil, "consumerGroup", "CppGroup")
	wantCode(t, resp, remoting.CodeSuccess)
	if !strings.Contains(string(resp.Body), "10.0.0.7@4242#1796134895") {
		t.Fatalf("consumer list %s", resp.Body)
	}
	g := e.b.ConsumerGroup("CppGroup")
	if g == nil || g.Subscriptions["CppTopic"] == nil || g.Subscriptions["CppTopic"].SubVersion != 1796134895301 {
		t.Fatalf("group %+v", g)
	}
}

// TestBatchFlagDecides: the C++ client sends a batch as
// SEND_MESSAGE_V2 (310) with m=true; the 4.x broker decides by the flag
// (requestHeader.isBatch()), so ten messages are stored, each with its own
// tags.
func TestBatchFlagDecides(t *testing.T) {
	e := newEnv(t)
	var msgs [][2]string
	for i := range 10 {
		msgs = append(msgs, [2]string{"m" + strconv.Itoa(i), props("TAGS", "T"+strconv.Itoa(i), "UNIQ_KEY", "u"+strconv.Itoa(i))})
	}
	v2 := func(code int32, batch string, body []byte) *remoting.RemotingCommand {
		kv := []string{"a", "PG", "b", "CppBatch", "c", "TBW102", "d", "4", "e", "0", "f", "0",
			"g", "1", "h", "0", "k", "false"}
		if batch != "" {
			kv = append(kv, "m", batch)
		}
		return e.call(code, body, kv...)
	}
	resp := v2(remoting.CodeSendMessageV2, "true", batchBody(msgs...))
	wantCode(t, resp, remoting.CodeSuccess)
	ids := strings.Split(resp.ExtFields["msgId"], ",")
	if len(ids) != 10 {
		t.Fatalf("batch stored as %d messages: %v", len(ids), resp.ExtFields)
	}
	for i, id := range ids {
		m, err := e.b.Store().LookMessageByMsgID(id)
		if err != nil || string(m.Body) != "m"+strconv.Itoa(i) || m.Tags() != "T"+strconv.Itoa(i) {
			t.Fatalf("message %d: %+v %v", i, m, err)
		}
	}
	waitDispatched(t, e.b, "CppBatch", 0, 10)

	// The V1 header's flag (SEND_MESSAGE 10, "batch") decides the same way.
	resp = e.send("CppBatch", 0, string(batchBody(msgs[:2]...)), "", "batch", "true")
	wantCode(t, resp, remoting.CodeSuccess)
	if n := len(strings.Split(resp.ExtFields["msgId"], ",")); n != 2 {
		t.Fatalf("V1 batch stored as %d messages", n)
	}

	// SEND_BATCH_MESSAGE (320) without the flag is one message, as in the
	// 4.x broker (logged at WARN).
	resp = v2(remoting.CodeSendBatchMessage, "false", []byte("plain body"))
	wantCode(t, resp, remoting.CodeSuccess)
	if strings.Contains(resp.ExtFields["msgId"], ",") {
		t.Fatalf("unflagged 320 stored as a batch: %v", resp.ExtFields)
	}

	// A batch flag on a body that is not a batch is refused, not stored
	// as something else.
	wantCode(t, v2(remoting.CodeSendMessageV2, "true", []byte("not a batch")), remoting.CodeMessageIllegal)
	// A flag that is neither true nor false is refused.
	for _, bad := range []string{"1", "yes"} {
		wantCode(t, v2(remoting.CodeSendMessageV2, bad, batchBody(msgs...)), remoting.CodeSystemError)
	}
	waitDispatched(t, e.b, "CppBatch", 0, 13)
	if got := e.b.Store().MaxOffsetInQueue("CppBatch", 0); got != 13 {
		t.Fatalf("queue holds %d messages, want 13", got)
	}
}

// TestRefusalsLoggedAtWarn: a body field the server refuses is logged at
// WARN with the field and the value.
func TestRefusalsLoggedAtWarn(t *testing.T) {
	var logs syncBuffer
	e := newEnv(t, func(_ *broker.Config, sc *server.Config) { sc.Logger = warnLogger(&logs) })
	body := strings.Replace(cppHeartbeat, `"consumeFromWhere":0`, `"consumeFromWhere":9`, 1)
	resp := e.call(remoting.CodeHeartBeat, []byte(body))
	wantCode(t, resp, remoting.CodeSystemError)
	if !strings.Contains(resp.Remark, "consumerDataSet[0].consumeFromWhere") || !strings.Contains(resp.Remark, "9") {
		t.Fatalf("remark %q", resp.Remark)
	}
	out := logs.String()
	for _, want := range []string{"level=WARN", "field=consumerDataSet[0].consumeFromWhere", "value=9"} {
		if !strings.Contains(out, want) {
			t.Fatalf("log lacks %q:\n%s", want, out)
		}
	}
	var anyJSON map[string]any
	if json.Unmarshal([]byte(body), &anyJSON) != nil {
		t.Fatal("test body is not JSON")
	}
	// A header field: logged with the field and the value too.
	wantCode(t, e.call(remoting.CodeQueryConsumerOffset, nil, "consumerGroup", "G", "topic", "T", "queueId", "zero"), remoting.CodeSystemError)
	if out := logs.String(); !strings.Contains(out, `\"queueId\" = \"zero\"`) {
		t.Fatalf("header refusal not logged:\n%s", out)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func warnLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// rawJSONRequest decodes a request from a JSON header as a client wrote
// it (numbers and booleans unquoted), the way the server's codec reads it.
func rawJSONRequest(t *testing.T, header string, body []byte) *remoting.RemotingCommand {
	t.Helper()
	frame := binary.BigEndian.AppendUint32(nil, uint32(4+len(header)+len(body)))
	frame = binary.BigEndian.AppendUint32(frame, uint32(len(header)))
	frame = append(append(frame, header...), body...)
	cmd, err := remoting.DecodeFrame(frame, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Opaque = remoting.NextOpaque()
	return cmd
}

// TestHeaderFieldForms: header fields as the clients write them. The C++
// client puts some numbers in extFields unquoted (PullMessageRequestHeader's
// queueId, maxMsgNums, sysFlag), others as strings; a lenient client may
// write the V2 batch flag as a JSON boolean. The Java broker reads every
// extFields value as a string, and so does this server.
func TestHeaderFieldForms(t *testing.T) {
	e := newEnv(t)
	invoke := func(cmd *remoting.RemotingCommand) *remoting.RemotingCommand {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := e.cl.Invoke(ctx, cmd)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	msgs := [][2]string{{"x0", props("TAGS", "A")}, {"x1", props("TAGS", "B")}}
	resp := invoke(rawJSONRequest(t, `{"code":310,"language":"CPP","version":0,"opaque":1,"flag":0,"extFields":{"a":"PG","b":"Hdr",`+
		`"c":"TBW102","d":4,"e":0,"f":0,"g":1700000000000,"h":0,"k":false,"m":true}}`, batchBody(msgs...)))
	wantCode(t, resp, remoting.CodeSuccess)
	if n := len(strings.Split(resp.ExtFields["msgId"], ",")); n != 2 {
		t.Fatalf("JSON-boolean batch flag stored %d messages", n)
	}
	waitDispatched(t, e.b, "Hdr", 0, 2)
	resp = invoke(rawJSONRequest(t, `{"code":11,"language":"CPP","version":0,"opaque":1,"flag":0,"extFields":{"consumerGroup":"G",`+
		`"topic":"Hdr","queueId":0,"queueOffset":"0","maxMsgNums":32,"sysFlag":4,"commitOffset":"0","suspendTimeoutMillis":"0",`+
		`"subscription":"*","subVersion":"1700000000000"}}`, nil))
	wantCode(t, resp, remoting.CodeSuccess)
	if got := records(t, resp.Body); len(got) != 2 {
		t.Fatalf("pulled %d", len(got))
	}
	resp = invoke(rawJSONRequest(t, `{"code":15,"language":"CPP","version":0,"opaque":1,"flag":0,"extFields":{"consumerGroup":"G",`+
		`"topic":"Hdr","queueId":0,"commitOffset":2}}`, nil))
	wantCode(t, resp, remoting.CodeSuccess)
	resp = invoke(rawJSONRequest(t, `{"code":14,"language":"CPP","version":0,"opaque":1,"flag":0,"extFields":{"consumerGroup":"G",`+
		`"topic":"Hdr","queueId":0}}`, nil))
	wantCode(t, resp, remoting.CodeSuccess)
	if resp.ExtFields["offset"] != "2" {
		t.Fatalf("offset %v", resp.ExtFields)
	}
	// A number where the broker wants an int32 that does not fit is refused
	// with the field named.
	resp = invoke(rawJSONRequest(t, `{"code":14,"language":"CPP","version":0,"opaque":1,"flag":0,"extFields":{"consumerGroup":"G",`+
		`"topic":"Hdr","queueId":4294967296}}`, nil))
	if resp.Code != remoting.CodeSystemError || !strings.Contains(resp.Remark, "queueId") {
		t.Fatalf("code %d %q", resp.Code, resp.Remark)
	}
}
