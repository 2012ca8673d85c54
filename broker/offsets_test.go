package broker_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/configfile"
	"github.com/rocketstore/rocketstore/broker/offset"
	"github.com/rocketstore/rocketstore/internal/fixture"
)

func TestOffsetsSurviveRestart(t *testing.T) {
	fs := memfs.New(nil)
	b := open(t, fs, testConfig())
	createTopic(t, b, "T", 2)
	for i := 0; i < 5; i++ {
		put(t, b, msg("T", 0, "A", ""))
	}
	b.UpdateConsumerOffset("h", "g", "T", 0, 4)
	if code, off := b.QueryConsumerOffset("g", "T", 1); code != broker.Success || off != 0 {
		t.Fatalf("absent offset on a young queue: %v %d", code, off)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = open(t, fs, testConfig())
	defer b.Close()
	if code, off := b.QueryConsumerOffset("g", "T", 0); code != broker.Success || off != 4 {
		t.Fatalf("after restart: %v %d", code, off)
	}
	if got := b.Offsets().Query("g", "T", 1); got != -1 {
		t.Fatalf("absent offset = %d, want -1", got)
	}
	b.DeleteSubscriptionGroup("g", true)
	if got := b.Offsets().Query("g", "T", 0); got != -1 {
		t.Fatalf("after group removal %d", got)
	}
}

func TestOffsetsCrashWithinPersistInterval(t *testing.T) {
	fs := memfs.New(nil)
	b := open(t, fs, testConfig())
	createTopic(t, b, "T", 1)
	r := put(t, b, msg("T", 0, "A", ""))
	for i := 0; i < 9; i++ {
		r = put(t, b, msg("T", 0, "A", ""))
	}
	if err := b.Store().FlushCommitLog(0); err != nil {
		t.Fatal(err)
	}
	if err := b.Store().FlushConsumeQueues(0); err != nil {
		t.Fatal(err)
	}
	_ = r
	b.UpdateConsumerOffset("h", "g", "T", 0, 7)
	if err := b.PersistOffsets(); err != nil { // the 5 s task
		t.Fatal(err)
	}
	b.UpdateConsumerOffset("h", "g", "T", 0, 9) // lost: not yet persisted
	crashed := crashCopy(t, fs)
	b2 := open(t, crashed, testConfig())
	if got := b2.Offsets().Query("g", "T", 0); got != 7 {
		t.Fatalf("after crash: %d, want 7", got)
	}
	b2.Close()
	b.Close()
}

func TestOffsetsClampedToQueueMax(t *testing.T) {
	fs := memfs.New(nil)
	b := open(t, fs, testConfig())
	createTopic(t, b, "T", 1)
	put(t, b, msg("T", 0, "A", ""))
	b.UpdateConsumerOffset("h", "g", "T", 0, 1000)
	b.Close()
	b = open(t, fs, testConfig())
	defer b.Close()
	if got := b.Offsets().Query("g", "T", 0); got != 1 {
		t.Fatalf("offset %d, want clamped to 1", got)
	}
}

func TestOffsetsCorruptFile(t *testing.T) {
	fs := memfs.New(nil)
	b := open(t, fs, testConfig())
	createTopic(t, b, "T", 1)
	put(t, b, msg("T", 0, "A", ""))
	b.UpdateConsumerOffset("h", "g", "T", 0, 0)
	b.Close()
	// Corrupt main, good backup → the backup is used.
	good, _ := backend.ReadFile(fs, offset.File)
	writeRaw(t, fs, offset.File+".bak", good)
	writeRaw(t, fs, offset.File, []byte("{\"offsetTable\":{garbage"))
	b = open(t, fs, testConfig())
	b.Close()
	// Both corrupt → a clear error, nothing overwritten.
	writeRaw(t, fs, offset.File, []byte("{{"))
	writeRaw(t, fs, offset.File+".bak", []byte("}}"))
	if _, err := broker.Open(fs, testConfig()); !errors.Is(err, configfile.ErrCorrupt) {
		t.Fatalf("err %v, want ErrCorrupt", err)
	}
	if got, _ := backend.ReadFile(fs, offset.File); string(got) != "{{" {
		t.Fatal("corrupt file was overwritten")
	}
}

func writeRaw(t *testing.T, fs *memfs.FS, name string, data []byte) {
	t.Helper()
	fs.Remove(name)
	if err := backend.WriteFileAtomic(fs, name, data); err != nil {
		t.Fatal(err)
	}
	fs.Remove(name + ".bak.bak")
}

// TestReadsRocketMQConfigFiles opens a broker on the config files of a real
// RocketMQ 4.x broker (fastjson, bare integer keys).
func TestReadsRocketMQConfigFiles(t *testing.T) {
	dir := fixture.Path(t, "broker-config/config")
	afs := afero.NewMemMapFs()
	afs.MkdirAll("config", 0o755)
	for _, n := range []string{"topics.json", "subscriptionGroup.json", "consumerOffset.json", "delayOffset.json"} {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		afero.WriteFile(afs, "config/"+n, data, 0o644)
	}
	off, err := offset.Load(memfs.New(afs), "", quiet)
	if err != nil {
		t.Fatal(err)
	}
	if got := off.Query("please_rename_unique_group_name_4", "TopicTest", 3); got != 250 {
		t.Fatalf("offset %d, want 250", got)
	}
	b := open(t, memfs.New(afs), testConfig())
	defer b.Close()
	tc, ok := b.Topics().Get("TopicTest")
	if !ok || tc.ReadQueueNums != 4 || tc.Perm != 6 {
		t.Fatalf("%+v %v", tc, ok)
	}
	g, ok, _ := b.Groups().Find("SELF_TEST_C_GROUP")
	if !ok || g.RetryMaxTimes != 16 || g.WhichBrokerWhenConsumeSlowly != 1 {
		t.Fatalf("%+v", g)
	}
	// No CommitLog came with these files: offsets are clamped to 0.
	if got := b.Offsets().Query("please_rename_unique_group_name_4", "TopicTest", 0); got != 0 {
		t.Fatalf("clamped offset %d", got)
	}
	_ = context.Background()
}

// TestOffsetCommitsThatCannotBeReadBack: a negative
// offset, an empty group or topic, and a topic the broker does not have
// are refused with RocketMQ codes and never persisted.
func TestOffsetCommitsThatCannotBeReadBack(t *testing.T) {
	fs := memfs.New(nil)
	b := open(t, fs, testConfig())
	defer b.Close()
	createTopic(t, b, "T", 1)
	put(t, b, msg("T", 0, "A", ""))
	for _, c := range []struct {
		group, topic string
		off          int64
		want         broker.ResponseCode
	}{
		{"g", "T", -5, broker.SystemError},
		{"", "T", 1, broker.SystemError},
		{"g", "", 1, broker.SystemError},
		{"g", "NoSuchTopic", 1, broker.TopicNotExist},
	} {
		if code, _ := b.UpdateConsumerOffset("h", c.group, c.topic, 0, c.off); code != c.want {
			t.Errorf("commit %q/%q %d: %v, want %v", c.group, c.topic, c.off, code, c.want)
		}
	}
	if tab := b.Offsets().Table(); len(tab) != 0 {
		t.Fatalf("refused commits were stored: %v", tab)
	}
	b.Offsets().Commit("h", "g", "T", 0, -5) // the pull path's commit
	if got := b.Offsets().Query("g", "T", 0); got != -1 {
		t.Fatalf("negative offset stored through Commit: %d", got)
	}
}
