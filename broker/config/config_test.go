package config_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/broker/configfile"
	"github.com/rocketstore/rocketstore/record"
)

func clock() *clockwork.FakeClock { return clockwork.NewFakeClockAt(time.UnixMilli(1000)) }

func opts(auto bool) config.TopicOptions {
	return config.TopicOptions{AutoCreateTopicEnable: auto, DefaultTopicQueueNums: 8, ScheduleQueueNums: 18, Clock: clock()}
}

func TestPerm(t *testing.T) {
	for perm, want := range map[int][2]bool{0: {false, false}, 2: {false, true}, 4: {true, false}, 6: {true, true}, 7: {true, true}, 1: {false, false}} {
		if config.IsReadable(perm) != want[0] || config.IsWritable(perm) != want[1] {
			t.Errorf("perm %d: readable %v writable %v", perm, config.IsReadable(perm), config.IsWritable(perm))
		}
	}
}

func TestSystemTopicsAndAutoCreate(t *testing.T) {
	m, err := config.LoadTopics(memfs.New(nil), opts(true))
	if err != nil {
		t.Fatal(err)
	}
	def, ok := m.Get(record.DefaultTopic)
	if !ok || def.ReadQueueNums != 8 || def.WriteQueueNums != 8 || def.Perm != 7 {
		t.Fatalf("TBW102 %+v %v", def, ok)
	}
	for _, n := range []string{record.SelfTestTopic, record.OffsetMovedEventTopic} {
		if tc, ok := m.Get(n); !ok || tc.ReadQueueNums != 1 || tc.Perm != 6 {
			t.Fatalf("%s %+v", n, tc)
		}
	}
	if tc, _ := m.Get(record.ScheduleTopic); tc.ReadQueueNums != 18 {
		t.Fatalf("schedule topic %+v", tc)
	}
	// A producer's first send: min(client queues, template queues),
	// the template's perm without inherit.
	tc, ok, err := m.CreateInSendMessage("New", record.DefaultTopic, 4, 0)
	if err != nil || !ok || tc.WriteQueueNums != 4 || tc.ReadQueueNums != 4 || tc.Perm != 6 {
		t.Fatalf("%+v %v %v", tc, ok, err)
	}
	tc, ok, _ = m.CreateInSendMessage("Big", record.DefaultTopic, 100, 0)
	if !ok || tc.WriteQueueNums != 8 {
		t.Fatalf("%+v", tc)
	}
	// A template without record.PermInherit cannot create topics.
	if _, ok, _ := m.CreateInSendMessage("X", record.SelfTestTopic, 4, 0); ok {
		t.Fatal("created from a template without inherit")
	}

	off, err := config.LoadTopics(memfs.New(nil), opts(false))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := off.Get(record.DefaultTopic); ok {
		t.Fatal("TBW102 exists with autoCreateTopicEnable off")
	}
	if _, ok, _ := off.CreateInSendMessage("New", record.DefaultTopic, 4, 0); ok {
		t.Fatal("auto-created with the switch off")
	}
}

func TestTopicValidation(t *testing.T) {
	m, _ := config.LoadTopics(memfs.New(nil), opts(true))
	bad := []config.TopicConfig{
		{TopicName: ""},
		{TopicName: strings.Repeat("a", 128), ReadQueueNums: 1, WriteQueueNums: 1},
		{TopicName: "q", ReadQueueNums: -1, WriteQueueNums: 1},
		{TopicName: "q", ReadQueueNums: 1, WriteQueueNums: 65536},
	}
	for _, tc := range bad {
		if err := m.Update(tc); !errors.Is(err, config.ErrBadConfig) {
			t.Errorf("Update(%q, %d/%d) = %v", tc.TopicName, tc.ReadQueueNums, tc.WriteQueueNums, err)
		}
	}
	if err := m.Delete("nope"); !errors.Is(err, config.ErrNoTopic) {
		t.Fatal(err)
	}
}

func TestTopicsPersistAndDataVersion(t *testing.T) {
	afs := afero.NewMemMapFs()
	o := opts(true)
	m, _ := config.LoadTopics(memfs.New(afs), o)
	_, v0 := m.All()
	tc := config.NewTopicConfig("T")
	tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm, tc.Order = 3, 2, record.PermRead, true
	if err := m.Update(tc); err != nil {
		t.Fatal(err)
	}
	_, v1 := m.All()
	o.Clock.(*clockwork.FakeClock).Advance(time.Millisecond)
	m.CreateInSendMessageBack("%RETRY%g", 1, 6, 0)
	m.CreateInSendMessageBack("%RETRY%g", 5, 2, 0) // exists: unchanged, no save
	_, v2 := m.All()
	if v1.Counter != v0.Counter+1 || v2.Counter != v1.Counter+1 || v2.Timestamp <= v1.Timestamp {
		t.Fatalf("data versions %+v %+v %+v", v0, v1, v2)
	}
	if err := m.Delete("T"); err != nil {
		t.Fatal(err)
	}
	m.Update(tc)
	// A power cut after the calls returned keeps everything.
	again, err := config.LoadTopics(memfs.New(afs), opts(true))
	if err != nil {
		t.Fatal(err)
	}
	all, v := again.All()
	if got := all["T"]; !got.Equal(tc) {
		t.Fatalf("T = %+v, want %+v", got, tc)
	}
	if r := all["%RETRY%g"]; r.ReadQueueNums != 1 || r.Perm != 6 {
		t.Fatalf("retry %+v", r)
	}
	_, mine := m.All()
	if v != mine {
		t.Fatalf("data version %+v, saved %+v", v, mine)
	}
	data, _ := backend.ReadFile(memfs.New(afs), config.TopicsFile)
	if !strings.Contains(string(data), `"topicConfigTable"`) || !strings.Contains(string(data), `"readQueueNums": 3`) {
		t.Fatalf("topics.json:\n%s", data)
	}
}

func TestGroups(t *testing.T) {
	afs := afero.NewMemMapFs()
	m, err := config.LoadGroups(memfs.New(afs), true, clock(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, sys := range []string{"TOOLS_CONSUMER", "SELF_TEST_C_GROUP", "CID_ONSAPI_OWNER"} {
		if _, ok, _ := m.Find(sys); !ok {
			t.Fatalf("system group %s missing", sys)
		}
	}
	g, ok, err := m.Find("new")
	want := config.SubscriptionGroupConfig{GroupName: "new", ConsumeEnable: true, ConsumeFromMinEnable: true,
		ConsumeBroadcastEnable: true, RetryQueueNums: 1, RetryMaxTimes: 16, WhichBrokerWhenConsumeSlowly: 1,
		NotifyConsumerIdsChangedEnable: true}
	if err != nil || !ok || g != want {
		t.Fatalf("auto-created %+v %v %v", g, ok, err)
	}
	if _, ok, _ := m.Find(""); ok {
		t.Fatal("empty group auto-created")
	}
	for _, bad := range []config.SubscriptionGroupConfig{{}, {GroupName: "x", RetryQueueNums: -1}, {GroupName: "x", RetryMaxTimes: -1}} {
		if err := m.Update(bad); !errors.Is(err, config.ErrBadConfig) {
			t.Errorf("Update(%+v) = %v", bad, err)
		}
	}
	g.RetryMaxTimes, g.ConsumeEnable = 3, false
	if err := m.Update(g); err != nil {
		t.Fatal(err)
	}
	if err := m.Delete("nope"); !errors.Is(err, config.ErrNoGroup) {
		t.Fatal(err)
	}
	again, err := config.LoadGroups(memfs.New(afs), false, clock(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok, _ := again.Find("new"); !ok || got != g {
		t.Fatalf("after reload %+v", got)
	}
	if _, ok, _ := again.Find("other"); ok {
		t.Fatal("auto-created with the switch off")
	}
	if err := again.Delete("new"); err != nil {
		t.Fatal(err)
	}
	third, _ := config.LoadGroups(memfs.New(afs), false, clock(), nil)
	if _, ok, _ := third.Find("new"); ok {
		t.Fatal("deleted group came back")
	}
	_, v2 := again.All()
	_, v3 := third.All()
	if v2 != v3 || v3.Counter < 3 {
		t.Fatalf("data versions %+v %+v", v2, v3)
	}
}

// A group entry with only some fields keeps RocketMQ's defaults for the
// rest; a corrupt entry is an error, not a silently empty table.
func TestGroupsPartialAndCorrupt(t *testing.T) {
	afs := afero.NewMemMapFs()
	afs.MkdirAll("config", 0o755)
	afero.WriteFile(afs, config.GroupsFile, []byte(`{"subscriptionGroupTable":{"g":{"groupName":"g","retryMaxTimes":5}},"dataVersion":{"counter":7,"timestamp":1}}`), 0o644)
	m, err := config.LoadGroups(memfs.New(afs), false, clock(), nil)
	if err != nil {
		t.Fatal(err)
	}
	g, _, _ := m.Find("g")
	if g.RetryMaxTimes != 5 || g.RetryQueueNums != 1 || !g.ConsumeEnable {
		t.Fatalf("%+v", g)
	}
	if _, v := m.All(); v.Counter != 7 {
		t.Fatalf("version %+v", v)
	}
	afero.WriteFile(afs, config.GroupsFile, []byte(`{"subscriptionGroupTable":{"g":{"retryMaxTimes":"x"}}}`), 0o644)
	if _, err := config.LoadGroups(memfs.New(afs), false, clock(), nil); !errors.Is(err, configfile.ErrCorrupt) {
		t.Fatal(err)
	}
	afero.WriteFile(afs, config.TopicsFile, []byte(`{"topicConfigTable":{"t":{"perm":"x"}}}`), 0o644)
	if _, err := config.LoadTopics(memfs.New(afs), opts(true)); !errors.Is(err, configfile.ErrCorrupt) {
		t.Fatal(err)
	}
}

// A table whose fields have the wrong type is a corrupt main file: the
// backup is read instead, and without a backup it is an error.
func TestTableWrongFieldTypeUsesBackup(t *testing.T) {
	for _, bad := range []string{`{"topicConfigTable":5}`, `{"dataVersion":"x","topicConfigTable":{}}`} {
		afs := afero.NewMemMapFs()
		afs.MkdirAll("config", 0o755)
		afero.WriteFile(afs, config.TopicsFile, []byte(bad), 0o644)
		if _, err := config.LoadTopics(memfs.New(afs), opts(true)); !errors.Is(err, configfile.ErrCorrupt) {
			t.Fatalf("%s without a backup: %v", bad, err)
		}
		afero.WriteFile(afs, config.TopicsFile+backend.BackupSuffix,
			[]byte(`{"topicConfigTable":{"t":{"topicName":"t","readQueueNums":3}},"dataVersion":{"counter":4}}`), 0o644)
		m, err := config.LoadTopics(memfs.New(afs), opts(true))
		if err != nil {
			t.Fatalf("%s with a backup: %v", bad, err)
		}
		if tc, ok := m.Get("t"); !ok || tc.ReadQueueNums != 3 {
			t.Fatalf("%s: topic from the backup = %+v, %v", bad, tc, ok)
		}
		if _, v := m.All(); v.Counter != 4 {
			t.Fatalf("%s: version %+v", bad, v)
		}
	}
}

// A topics.json that does not decode is replaced by its backup, and that
// is said on the broker's structured logger (it once went to Go's standard
// logger, outside the broker's log format and level).
func TestTopicsBackupLoggedOnBrokerLogger(t *testing.T) {
	afs := afero.NewMemMapFs()
	afs.MkdirAll("config", 0o755)
	afero.WriteFile(afs, config.TopicsFile, []byte(`{"topicConfigTable":`), 0o644)
	afero.WriteFile(afs, config.TopicsFile+".bak", []byte(`{"topicConfigTable":{"T":{"topicName":"T"}}}`), 0o644)
	var buf bytes.Buffer
	m, err := config.LoadTopics(memfs.New(afs), config.TopicOptions{Clock: clock(),
		Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Get("T"); !ok {
		t.Fatal("the backup's topic is missing")
	}
	if !strings.Contains(buf.String(), `"level":"ERROR"`) || !strings.Contains(buf.String(), "loaded its backup") ||
		!strings.Contains(buf.String(), `"file":"config/topics.json"`) {
		t.Fatalf("broker log: %q", buf.String())
	}
}
