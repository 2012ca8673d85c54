package broker_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/broker/offset"
	"github.com/rocketstore/rocketstore/internal/fixture"
)

// fixtureFS loads testdata/rocketmq-4x/broker-config (written by a
// real RocketMQ broker) into a memfs, optionally replacing files.
func fixtureFS(t *testing.T, replace map[string][]byte) *memfs.FS {
	t.Helper()
	src := fixture.Path(t, "broker-config")
	afs := afero.NewMemMapFs()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if fi.IsDir() {
			return afs.MkdirAll(filepath.ToSlash(rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if r, ok := replace[filepath.ToSlash(rel)]; ok {
			data = r
		}
		return afero.WriteFile(afs, filepath.ToSlash(rel), data, 0o644)
	})
	if err != nil {
		t.Fatalf("load fixture: %v", err)
	}
	return memfs.New(afs)
}

func TestRocketMQConfigFixturesLoad(t *testing.T) {
	fs := fixtureFS(t, nil)
	topics, err := config.LoadTopics(fs, config.TopicOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tc, ok := topics.Get("TopicTest")
	if !ok || tc.ReadQueueNums != 4 || tc.WriteQueueNums != 4 || tc.Perm != 6 {
		t.Fatalf("TopicTest = %+v, %v", tc, ok)
	}
	groups, err := config.LoadGroups(fs, false, clockwork.NewFakeClockAt(time.UnixMilli(0)), nil)
	if err != nil {
		t.Fatal(err)
	}
	g, ok, err := groups.Find("please_rename_unique_group_name_4")
	if err != nil || !ok || g.RetryMaxTimes != 16 || g.RetryQueueNums != 1 || !g.ConsumeEnable {
		t.Fatalf("group = %+v, %v, %v", g, ok, err)
	}
	offs, err := offset.Load(fs, "", quiet)
	if err != nil {
		t.Fatal(err)
	}
	for q := int32(0); q < 4; q++ {
		if got := offs.Query("please_rename_unique_group_name_4", "TopicTest", q); got != 250 {
			t.Fatalf("offset of queue %d = %d, want 250", q, got)
		}
	}
}

// Saving what was loaded writes standard JSON that loads back the same.
func TestRocketMQConfigFixturesRoundTrip(t *testing.T) {
	fs := fixtureFS(t, nil)
	offs, err := offset.Load(fs, "", quiet)
	if err != nil {
		t.Fatal(err)
	}
	offs.Commit("h", "g2", "TopicTest", 1, 7) // a change makes Persist write
	if err := offs.Persist(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{offset.File} {
		data, err := backend.ReadFile(fs, name)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(data) {
			t.Fatalf("%s is not standard JSON:\n%s", name, data)
		}
	}
	again, err := offset.Load(fs, "", quiet)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Query("please_rename_unique_group_name_4", "TopicTest", 3); got != 250 {
		t.Fatalf("after round trip: %d", got)
	}
	if got := again.Query("g2", "TopicTest", 1); got != 7 {
		t.Fatalf("after round trip: %d", got)
	}
}

// A main file cut short falls back to the .bak beside it.
func TestRocketMQConfigCutShortUsesBackup(t *testing.T) {
	full, err := os.ReadFile(fixture.Path(t, "broker-config/config/consumerOffset.json"))
	if err != nil {
		t.Fatal(err)
	}
	fs := fixtureFS(t, map[string][]byte{"config/consumerOffset.json": full[:len(full)/2]})
	offs, err := offset.Load(fs, "", quiet)
	if err != nil {
		t.Fatal(err)
	}
	if got := offs.Query("please_rename_unique_group_name_4", "TopicTest", 0); got != 250 {
		t.Fatalf("offset from .bak = %d, want 250", got)
	}
	topicsFull, err := os.ReadFile(fixture.Path(t, "broker-config/config/topics.json"))
	if err != nil {
		t.Fatal(err)
	}
	fs = fixtureFS(t, map[string][]byte{"config/topics.json": topicsFull[:100]})
	topics, err := config.LoadTopics(fs, config.TopicOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := topics.Get("TopicTest"); !ok {
		t.Fatal("TopicTest missing after falling back to topics.json.bak")
	}
}
