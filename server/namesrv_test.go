package server_test

import (
	"bytes"
	"compress/zlib"
	"context"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

// newFakeClock is the injected clock of the expiry tests.
func newFakeClock() *clockwork.FakeClock {
	return clockwork.NewFakeClockAt(time.Unix(1_700_000_000, 0))
}

// nameServer starts a name-server-only server on 127.0.0.1:0.
func nameServer(t testing.TB, clock *clockwork.FakeClock) (*server.Server, string) {
	t.Helper()
	cfg := server.Config{Role: server.RoleNameServer, Logger: quiet, ScanInterval: 5 * time.Millisecond}
	if clock != nil {
		cfg.Clock = clock
	}
	s, err := server.New(nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s, a.String()
}

func dialAddr(t testing.TB, addr string) *remoting.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl, err := remoting.Dial(ctx, addr, remoting.ClientOptions{Options: remoting.Options{Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// javaRegisterBody is RegisterBrokerBody as a Java 4.9 broker encodes it
// (fastjson: dataVersion with a counter object, topicFilterType by name).
func javaRegisterBody(counter int64, topics map[string]int) []byte {
	table := map[string]any{}
	for name, n := range topics {
		table[name] = map[string]any{"topicName": name, "readQueueNums": n, "writeQueueNums": n, "perm": 6,
			"topicFilterType": "SINGLE_TAG", "topicSysFlag": 0, "order": false}
	}
	b, _ := json.Marshal(map[string]any{
		"topicConfigSerializeWrapper": map[string]any{"topicConfigTable": table,
			"dataVersion": map[string]any{"counter": counter, "timestamp": 1700000000000}},
		"filterServerList": []string{},
	})
	return b
}

func registerBroker(t testing.TB, cl *remoting.Client, cluster, name, addr string, id int64, ha string, body []byte) *remoting.RemotingCommand {
	t.Helper()
	return call(t, cl, 103, body, "brokerName", name, "brokerAddr", addr, "clusterName", cluster,
		"haServerAddr", ha, "brokerId", strconv.FormatInt(id, 10), "compressed", "false",
		"bodyCrc32", strconv.FormatInt(int64(crc32.ChecksumIEEE(body)&0x7FFFFFFF), 10))
}

type routeJSON struct {
	QueueDatas []struct {
		BrokerName     string `json:"brokerName"`
		ReadQueueNums  int    `json:"readQueueNums"`
		WriteQueueNums int    `json:"writeQueueNums"`
		Perm           int    `json:"perm"`
	} `json:"queueDatas"`
	BrokerDatas []struct {
		Cluster     string            `json:"cluster"`
		BrokerName  string            `json:"brokerName"`
		BrokerAddrs map[string]string `json:"brokerAddrs"`
	} `json:"brokerDatas"`
}

// getRoute returns topic's route, or nil for TOPIC_NOT_EXIST.
func getRoute(t testing.TB, cl *remoting.Client, topic string) *routeJSON {
	t.Helper()
	resp := call(t, cl, remoting.CodeGetRouteInfoByTopic, nil, "topic", topic)
	if resp.Code == remoting.CodeTopicNotExist {
		return nil
	}
	wantCode(t, resp, remoting.CodeSuccess)
	var rd routeJSON
	if err := json.Unmarshal(resp.Body, &rd); err != nil {
		t.Fatal(err)
	}
	return &rd
}

// addrsOf returns broker group name's members in rd.
func (rd *routeJSON) addrsOf(name string) map[string]string {
	if rd == nil {
		return nil
	}
	for _, bd := range rd.BrokerDatas {
		if bd.BrokerName == name {
			return bd.BrokerAddrs
		}
	}
	return nil
}

// waitUntil polls cond with a deadline: brokers register with the name
// servers over TCP from their registrar's own ticker, and the name server
// reports a registration only through its routes.
func waitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestNameServerMergesBrokerGroups(t *testing.T) {
	_, ns := nameServer(t, nil)
	a, b := dialAddr(t, ns), dialAddr(t, ns)
	wantCode(t, registerBroker(t, a, "C1", "broker-a", "127.0.0.1:10911", 0, "127.0.0.1:10912",
		javaRegisterBody(1, map[string]int{"T": 4, "OnlyA": 2})), remoting.CodeSuccess)
	wantCode(t, registerBroker(t, b, "C1", "broker-b", "127.0.0.1:20911", 0, "127.0.0.1:20912",
		javaRegisterBody(1, map[string]int{"T": 8})), remoting.CodeSuccess)

	rd := getRoute(t, a, "T")
	if rd == nil || len(rd.QueueDatas) != 2 || len(rd.BrokerDatas) != 2 ||
		rd.QueueDatas[0].BrokerName != "broker-a" || rd.QueueDatas[0].WriteQueueNums != 4 ||
		rd.QueueDatas[1].BrokerName != "broker-b" || rd.QueueDatas[1].WriteQueueNums != 8 ||
		rd.addrsOf("broker-a")["0"] != "127.0.0.1:10911" || rd.addrsOf("broker-b")["0"] != "127.0.0.1:20911" {
		t.Fatalf("route of T: %+v", rd)
	}
	if rd := getRoute(t, a, "OnlyA"); rd == nil || len(rd.QueueDatas) != 1 || rd.addrsOf("broker-b") != nil {
		t.Fatalf("route of OnlyA: %+v", rd)
	}
	if getRoute(t, a, "Nope") != nil {
		t.Fatal("route for an unregistered topic")
	}

	// A slave of broker-a learns its master and the master's HA address.
	slave := dialAddr(t, ns)
	resp := registerBroker(t, slave, "C1", "broker-a", "127.0.0.1:30911", 1, "127.0.0.1:30912", javaRegisterBody(1, map[string]int{"T": 4}))
	wantCode(t, resp, remoting.CodeSuccess)
	if resp.ExtFields["masterAddr"] != "127.0.0.1:10911" || resp.ExtFields["haServerAddr"] != "127.0.0.1:10912" {
		t.Fatalf("slave registration answer %v", resp.ExtFields)
	}
	if got := getRoute(t, a, "T").addrsOf("broker-a"); got["0"] != "127.0.0.1:10911" || got["1"] != "127.0.0.1:30911" {
		t.Fatalf("broker-a members %v", got)
	}

	// Cluster info lists both groups and the cluster.
	resp = call(t, a, remoting.CodeGetBrokerClusterInfo, nil)
	wantCode(t, resp, remoting.CodeSuccess)
	var ci struct {
		BrokerAddrTable  map[string]struct{ BrokerAddrs map[string]string } `json:"brokerAddrTable"`
		ClusterAddrTable map[string][]string                                `json:"clusterAddrTable"`
	}
	if err := json.Unmarshal(resp.Body, &ci); err != nil {
		t.Fatal(err)
	}
	if len(ci.BrokerAddrTable) != 2 || len(ci.BrokerAddrTable["broker-a"].BrokerAddrs) != 2 ||
		len(ci.ClusterAddrTable["C1"]) != 2 {
		t.Fatalf("cluster info %s", resp.Body)
	}

	// The slave's connection closes: it stays in the group until it stops
	// registering for the expiry (TestNameServerKeepsBrokerWhoseConnectionCloses).
	_ = slave.Close()
	<-slave.Conn().Done()
	if got := getRoute(t, a, "T").addrsOf("broker-a"); got["1"] != "127.0.0.1:30911" {
		t.Fatalf("slave forgotten with its connection: broker-a members %v", got)
	}

	// broker-b unregisters: its queues leave T's route.
	wantCode(t, call(t, b, 104, nil, "brokerName", "broker-b", "brokerAddr", "127.0.0.1:20911",
		"clusterName", "C1", "brokerId", "0"), remoting.CodeSuccess)
	if rd := getRoute(t, a, "T"); rd == nil || len(rd.QueueDatas) != 1 || rd.addrsOf("broker-b") != nil {
		t.Fatalf("route after unregister: %+v", rd)
	}

	// A master's new topic table replaces its old one.
	wantCode(t, registerBroker(t, a, "C1", "broker-a", "127.0.0.1:10911", 0, "", javaRegisterBody(2, map[string]int{"T": 4})), remoting.CodeSuccess)
	if getRoute(t, a, "OnlyA") != nil {
		t.Fatal("a topic the broker no longer has is still routed")
	}
}

func TestNameServerBrokerIDSwitch(t *testing.T) {
	_, ns := nameServer(t, nil)
	cl := dialAddr(t, ns)
	body := javaRegisterBody(1, map[string]int{"T": 4})
	wantCode(t, registerBroker(t, cl, "C1", "g", "127.0.0.1:1", 0, "", body), remoting.CodeSuccess)
	wantCode(t, registerBroker(t, cl, "C1", "g", "127.0.0.1:2", 1, "", body), remoting.CodeSuccess)
	// Failover: the slave becomes the master, the old master a slave.
	wantCode(t, registerBroker(t, cl, "C1", "g", "127.0.0.1:2", 0, "", body), remoting.CodeSuccess)
	wantCode(t, registerBroker(t, cl, "C1", "g", "127.0.0.1:1", 1, "", body), remoting.CodeSuccess)
	got := getRoute(t, cl, "T").addrsOf("g")
	if len(got) != 2 || got["0"] != "127.0.0.1:2" || got["1"] != "127.0.0.1:1" {
		t.Fatalf("members after switch %v", got)
	}
}

func TestNameServerExpiresSilentBrokers(t *testing.T) {
	clock := newFakeClock()
	srv, ns := nameServer(t, clock)
	a, b := dialAddr(t, ns), dialAddr(t, ns)
	wantCode(t, registerBroker(t, a, "C1", "broker-a", "127.0.0.1:1", 0, "", javaRegisterBody(1, map[string]int{"T": 1})), remoting.CodeSuccess)
	wantCode(t, registerBroker(t, b, "C1", "broker-b", "127.0.0.1:2", 0, "", javaRegisterBody(1, map[string]int{"T": 1})), remoting.CodeSuccess)

	// broker-a re-registers every 30 s (its heartbeat); broker-b is silent.
	for range 4 {
		clock.Advance(30 * time.Second)
		wantCode(t, registerBroker(t, a, "C1", "broker-a", "127.0.0.1:1", 0, "", javaRegisterBody(1, map[string]int{"T": 1})), remoting.CodeSuccess)
	}
	server.Housekeep(srv) // a scan at 120 s: nothing expires yet
	if rd := getRoute(t, a, "T"); rd.addrsOf("broker-b") == nil {
		t.Fatal("broker-b expired at exactly 120 s")
	}
	clock.Advance(time.Second)
	server.Housekeep(srv)
	if getRoute(t, a, "T").addrsOf("broker-b") != nil {
		t.Fatal("broker-b still routed 121 s after its registration")
	}
	if getRoute(t, a, "T").addrsOf("broker-a") == nil {
		t.Fatal("the live broker expired too")
	}
	// The expired broker's connection was closed by the name server.
	select {
	case <-b.Conn().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("expired broker's connection still open")
	}
}

func TestNameServerRefusesBadRegistrations(t *testing.T) {
	_, ns := nameServer(t, nil)
	cl := dialAddr(t, ns)
	body := javaRegisterBody(1, map[string]int{"T": 4})
	base := []string{"brokerName", "g", "brokerAddr", "127.0.0.1:1", "clusterName", "C", "haServerAddr", "", "brokerId", "0"}
	for _, tc := range []struct {
		name string
		body []byte
		kv   []string
	}{
		{"crc mismatch", body, append(base, "bodyCrc32", "12345")},
		{"compressed", body, append(base, "compressed", "true")},
		{"no brokerName", body, base[2:]},
		{"negative id", body, []string{"brokerName", "g", "brokerAddr", "127.0.0.1:1", "clusterName", "C", "haServerAddr", "", "brokerId", "-1"}},
		{"not json", []byte("{"), base},
		{"bad queue count", []byte(`{"topicConfigSerializeWrapper":{"topicConfigTable":{"T":{"readQueueNums":"x"}}}}`), base},
	} {
		resp := call(t, cl, 103, tc.body, tc.kv...)
		if resp.Code != remoting.CodeSystemError || resp.Remark == "" {
			t.Errorf("%s: code %d %q", tc.name, resp.Code, resp.Remark)
		}
	}
	if getRoute(t, cl, "T") != nil {
		t.Fatal("a refused registration created a route")
	}
	// The broker-only codes are not served by a name-server-only server.
	wantCode(t, call(t, cl, remoting.CodeSendMessage, nil), remoting.CodeRequestCodeNotSupported)
}

// brokerEnv starts a broker-only server registering with name servers.
func brokerEnv(t testing.TB, name string, ns ...string) *env {
	return newEnv(t, func(_ *broker.Config, sc *server.Config) {
		sc.Role, sc.BrokerName, sc.NamesrvAddr, sc.HAServerAddr = server.RoleBroker, name, ns, "127.0.0.1:10912"
	})
}

func TestBrokerRegistersAndSetBrokerID(t *testing.T) {
	_, ns1 := nameServer(t, nil)
	_, ns2 := nameServer(t, nil)
	n1, n2 := dialAddr(t, ns1), dialAddr(t, ns2)
	a := brokerEnv(t, "broker-a", ns1, ns2)
	b := brokerEnv(t, "broker-b", ns1)
	for _, e := range []*env{a, b} {
		wantCode(t, e.call(remoting.CodeUpdateAndCreateTopic, nil, "topic", "Shared", "readQueueNums", "4",
			"writeQueueNums", "4", "perm", "6"), remoting.CodeSuccess)
	}
	// The topic-table change is registered within a second or so.
	waitUntil(t, "both groups in Shared's route", func() bool {
		rd := getRoute(t, n1, "Shared")
		return rd != nil && len(rd.QueueDatas) == 2 && rd.addrsOf("broker-a")["0"] == a.adr && rd.addrsOf("broker-b")["0"] == b.adr
	})
	waitUntil(t, "broker-a on the second name server", func() bool { return getRoute(t, n2, "Shared").addrsOf("broker-a")["0"] == a.adr })
	if rd := getRoute(t, n2, "Shared"); rd.addrsOf("broker-b") != nil {
		t.Fatal("broker-b registered with a name server it was not given")
	}
	// The broker role does not answer name-server codes.
	wantCode(t, a.call(remoting.CodeGetRouteInfoByTopic, nil, "topic", "Shared"), remoting.CodeRequestCodeNotSupported)

	// SetBrokerID re-registers with every name server before it returns.
	a.s.SetBrokerID(1)
	if a.s.BrokerID() != 1 {
		t.Fatalf("BrokerID %d", a.s.BrokerID())
	}
	for _, cl := range []*remoting.Client{n1, n2} {
		if got := getRoute(t, cl, "Shared").addrsOf("broker-a"); got["1"] != a.adr || got["0"] != "" {
			t.Fatalf("after SetBrokerID(1): broker-a members %v", got)
		}
	}
	a.s.SetBrokerID(0)
	if got := getRoute(t, n2, "Shared").addrsOf("broker-a"); got["0"] != a.adr || len(got) != 1 {
		t.Fatalf("after SetBrokerID(0): broker-a members %v", got)
	}

	// Shutdown unregisters from every name server.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, cl := range []*remoting.Client{n1, n2} {
		if got := getRoute(t, cl, "Shared").addrsOf("broker-a"); got != nil {
			t.Fatalf("broker-a still routed after shutdown: %v", got)
		}
	}
}

func TestSetBrokerIDSingleNode(t *testing.T) {
	e := newEnv(t)
	e.s.SetBrokerID(2)
	if got := getRoute(t, e.cl, "TBW102").addrsOf("broker-a"); got["2"] != e.adr || len(got) != 1 {
		t.Fatalf("members %v", got)
	}
}

func TestSingleNodeAcceptsOtherBrokers(t *testing.T) {
	// The default server (both roles, no namesrvAddr) is also a name server
	// for brokers that register with it.
	e := newEnv(t)
	b := brokerEnv(t, "broker-b", e.adr)
	wantCode(t, b.call(remoting.CodeUpdateAndCreateTopic, nil, "topic", "TBW102x", "readQueueNums", "2",
		"writeQueueNums", "2", "perm", "6"), remoting.CodeSuccess)
	waitUntil(t, "both groups in TBW102's route", func() bool {
		rd := getRoute(t, e.cl, "TBW102")
		return rd != nil && len(rd.QueueDatas) == 2 && rd.addrsOf("broker-a")["0"] == e.adr && rd.addrsOf("broker-b")["0"] == b.adr
	})
}

func TestRoleConfig(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{"127.0.0.1:9876", []string{"127.0.0.1:9876"}, true},
		{"127.0.0.1:9876;10.0.0.2:9877;", []string{"127.0.0.1:9876", "10.0.0.2:9877"}, true},
		{" ns1.example:9876 ; ns2.example:9876", []string{"ns1.example:9876", "ns2.example:9876"}, true},
		{"127.0.0.1", nil, false},
		{"127.0.0.1:0", nil, false},
		{":9876", nil, false},
	} {
		got, err := server.ParseNamesrvAddr(tc.in)
		if (err == nil) != tc.ok || (tc.ok && !slices.Equal(got, tc.want)) {
			t.Errorf("ParseNamesrvAddr(%q) = %v, %v", tc.in, got, err)
		}
	}
	for _, r := range []string{"both", "broker", "namesrv"} {
		if role, err := server.ParseRole(r); err != nil || role.String() != r {
			t.Errorf("ParseRole(%q) = %v, %v", r, role, err)
		}
	}
	if _, err := server.ParseRole("slave"); err == nil {
		t.Error("ParseRole accepted slave")
	}
	if _, err := server.New(nil, server.Config{Role: server.RoleBroker, NamesrvAddr: []string{"127.0.0.1:1"}}); err == nil {
		t.Error("a broker role without a broker")
	}
	if err := (server.Config{Role: server.RoleBroker}).Validate(); err == nil {
		t.Error("a broker-only role without namesrvAddr")
	}
	if err := (server.Config{Role: server.RoleNameServer, NamesrvAddr: []string{"127.0.0.1:1"}}).Validate(); err == nil {
		t.Error("a name server with namesrvAddr")
	}
	fc, err := server.ParseFileConfig([]byte("namesrvAddr: 127.0.0.1:9876;127.0.0.1:9877\nbrokerId: 1\nbrokerIP1: 127.0.0.2\nhaListenPort: 10912\n"))
	if err != nil {
		t.Fatal(err)
	}
	var nc server.NodeConfig
	if err := fc.Apply(&nc); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(nc.Server.NamesrvAddr, []string{"127.0.0.1:9876", "127.0.0.1:9877"}) || nc.Server.BrokerID != 1 ||
		nc.Server.HAServerAddr != "127.0.0.2:10912" {
		t.Fatalf("applied %+v", nc.Server)
	}
}

func TestSendCreatingTopicRegistersBeforeAnswer(t *testing.T) {
	_, ns := nameServer(t, nil)
	n := dialAddr(t, ns)
	a := brokerEnv(t, "broker-a", ns)
	waitUntil(t, "first registration", func() bool { return getRoute(t, n, "TBW102") != nil })
	// An auto-created topic is routed as soon as the send is answered.
	wantCode(t, a.send("Fresh", 0, "x", ""), remoting.CodeSuccess)
	if got := getRoute(t, n, "Fresh").addrsOf("broker-a"); got["0"] != a.adr {
		t.Fatalf("Fresh not routed right after the send: %v", got)
	}
}

func TestNameServerOnlyServesKVConfig(t *testing.T) {
	_, ns := nameServer(t, nil)
	cl := dialAddr(t, ns)
	wantCode(t, call(t, cl, 100, nil, "namespace", "ORDER_TOPIC_CONFIG", "key", "T", "value", "broker-a:4"), remoting.CodeSuccess)
	resp := call(t, cl, 101, nil, "namespace", "ORDER_TOPIC_CONFIG", "key", "T")
	wantCode(t, resp, remoting.CodeSuccess)
	if resp.ExtFields["value"] != "broker-a:4" {
		t.Fatalf("kv %v", resp.ExtFields)
	}
	// Codes that read a local broker are not served without one. (205, 224
	// and 322 are name-server codes: package namesrv answers them from the
	// registered brokers.)
	for _, code := range []int32{remoting.CodeHeartBeat, remoting.CodePullMessage} {
		wantCode(t, call(t, cl, code, nil, "brokerName", "b", "cluster", "c"), remoting.CodeRequestCodeNotSupported)
	}
}

// javaCompressedRegisterBody is RegisterBrokerBody.encode(true) of a Java
// 4.9 broker (compressedRegister=true).
func javaCompressedRegisterBody(t testing.TB, lines ...string) []byte {
	t.Helper()
	var raw bytes.Buffer
	chunk := func(b []byte) {
		_ = binary.Write(&raw, binary.BigEndian, int32(len(b)))
		raw.Write(b)
	}
	chunk([]byte(`{"counter":7,"timestamp":1700000000000}`))
	_ = binary.Write(&raw, binary.BigEndian, int32(len(lines)))
	for _, l := range lines {
		chunk([]byte(l))
	}
	chunk([]byte(`[]`))
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	_, _ = zw.Write(raw.Bytes())
	_ = zw.Close()
	return z.Bytes()
}

func TestNameServerCompressedRegistration(t *testing.T) {
	_, ns := nameServer(t, nil)
	cl := dialAddr(t, ns)
	// An order topic configured in the KV config comes back in the answer.
	wantCode(t, call(t, cl, 100, nil, "namespace", "ORDER_TOPIC_CONFIG", "key", "Ordered", "value", "broker-z:4"), remoting.CodeSuccess)
	body := javaCompressedRegisterBody(t, "Zipped 3 5 6 SINGLE_TAG", "Multi 1 1 4 MULTI_TAG")
	resp := call(t, cl, 103, body, "brokerName", "broker-z", "brokerAddr", "127.0.0.1:4", "clusterName", "C",
		"haServerAddr", "", "brokerId", "0", "compressed", "true",
		"bodyCrc32", strconv.FormatInt(int64(crc32.ChecksumIEEE(body)&0x7FFFFFFF), 10))
	wantCode(t, resp, remoting.CodeSuccess)
	if !strings.Contains(string(resp.Body), `"Ordered":"broker-z:4"`) {
		t.Fatalf("answer body %s", resp.Body)
	}
	rd := getRoute(t, cl, "Zipped")
	if rd == nil || rd.QueueDatas[0].ReadQueueNums != 3 || rd.QueueDatas[0].WriteQueueNums != 5 || rd.QueueDatas[0].Perm != 6 {
		t.Fatalf("route %+v", rd)
	}
	for _, bad := range [][]byte{
		javaCompressedRegisterBody(t, "Zipped 3 5 6"),              // 4 fields
		javaCompressedRegisterBody(t, "Zipped 3 5 6 NO_SUCH_TYPE"), // unknown filter type
		javaCompressedRegisterBody(t, "Zipped x 5 6 SINGLE_TAG"),   // not a number
		body[:len(body)/2], // truncated stream
	} {
		resp := call(t, cl, 103, bad, "brokerName", "broker-y", "brokerAddr", "127.0.0.1:5", "clusterName", "C",
			"haServerAddr", "", "brokerId", "0", "compressed", "true")
		if resp.Code != remoting.CodeSystemError {
			t.Fatalf("bad compressed body: code %d", resp.Code)
		}
	}
	if getRoute(t, cl, "Zipped").addrsOf("broker-y") != nil {
		t.Fatal("a refused body registered")
	}
}

func TestReadOnlyBrokerRegistersItsPermission(t *testing.T) {
	_, ns := nameServer(t, nil)
	n := dialAddr(t, ns)
	newEnv(t, func(bc *broker.Config, sc *server.Config) {
		bc.BrokerPermission = 4 // read only
		sc.Role, sc.NamesrvAddr = server.RoleBroker, []string{ns}
	})
	waitUntil(t, "registration", func() bool { return getRoute(t, n, "TBW102") != nil })
	if rd := getRoute(t, n, "TBW102"); rd.QueueDatas[0].Perm != 4 {
		t.Fatalf("TBW102 routed with perm %d, want the broker's 4", rd.QueueDatas[0].Perm)
	}
	single := newEnv(t, func(bc *broker.Config, _ *server.Config) { bc.BrokerPermission = 4 })
	if rd := getRoute(t, single.cl, "TBW102"); rd.QueueDatas[0].Perm != 4 {
		t.Fatalf("single node routes TBW102 with perm %d", rd.QueueDatas[0].Perm)
	}
}

func TestCloseDoesNotWaitForSilentNameServer(t *testing.T) {
	addr, accepted := silentNameServer(t, 0)
	bc := broker.Config{Store: engine.Config{CommitLogFileSize: 1 << 20, ConsumeQueueUnits: 1000, Logger: quiet}}
	b, err := broker.Open(memfs.New(afero.NewMemMapFs()), bc)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// A registration would wait an hour for the silent name server; Close
	// must cancel it instead of waiting.
	s, err := server.New(b, server.Config{Logger: quiet, Role: server.RoleBroker, NamesrvAddr: []string{addr},
		BrokerAddr: "127.0.0.1:1", RegisterTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	select { // the first registration is in flight
	case <-accepted:
	case <-time.After(time.Minute):
		t.Fatal("the broker never connected to its name server")
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Close still waits for a registration the silent name server never answers (RegisterTimeout is an hour)")
	}
}
