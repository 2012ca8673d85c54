package proptest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/broker/configfile"
	"github.com/rocketstore/rocketstore/broker/offset"
	"github.com/rocketstore/rocketstore/crashsim"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/fixture"
	"github.com/rocketstore/rocketstore/internal/hooks"
	"github.com/rocketstore/rocketstore/record"
)

// addFixture seeds f with a RocketMQ-written file from the shared
// fixtures (see internal/fixture). The committed corpus under testdata/fuzz
// holds the same seeds, so a missing file only loses a duplicate.
func addFixture(f *testing.F, name string, limit int) {
	p, err := fixture.Find(name)
	if err != nil {
		return
	}
	if b, err := os.ReadFile(p); err == nil {
		f.Add(b[:min(len(b), limit)])
	}
}

// FuzzRecordCheck: the CommitLog record decoder never panics or reads out
// of bounds, and a record it accepts re-checks the same way.
func FuzzRecordCheck(f *testing.F) {
	addFixture(f, "store-2021-8k/commitlog/00000000000000000000", 8192)
	addFixture(f, "store-2019-unit/commitlog/00000000000000000000", 200)
	f.Fuzz(func(t *testing.T, b []byte) {
		info, err := record.Check(b, -1, true)
		if err != nil || info.Blank {
			return
		}
		if int(info.Size) > len(b) {
			t.Fatalf("accepted a record of %d bytes from %d", info.Size, len(b))
		}
		if _, err := record.Decode(b[:info.Size], info.PhysicalOffset, true); err != nil {
			t.Fatalf("Check accepted, Decode refused: %v", err)
		}
	})
}

// FuzzDecodeUnit: the ConsumeQueue unit reader round-trips any 20 bytes:
// the unit it returns, written back in RocketMQ's layout (8-byte
// CommitLog offset, 4-byte size, 8-byte tags code, big-endian; encoded
// here independently of the engine), gives the same 20 bytes, and bytes
// past the unit do not change it.
func FuzzDecodeUnit(f *testing.F) {
	f.Add(make([]byte, engine.CQUnitSize))
	f.Add(bytes.Repeat([]byte{0xff}, engine.CQUnitSize+3))
	// RocketMQ's blank unit: offset 0, size Integer.MAX_VALUE, tags 0.
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < engine.CQUnitSize {
			return
		}
		u := engine.DecodeUnit(b)
		back := binary.BigEndian.AppendUint64(nil, uint64(u.CommitLogOffset))
		back = binary.BigEndian.AppendUint32(back, uint32(u.Size))
		back = binary.BigEndian.AppendUint64(back, uint64(u.TagsCode))
		if !bytes.Equal(back, b[:engine.CQUnitSize]) {
			t.Fatalf("unit %x decodes to %+v, which encodes to %x", b[:engine.CQUnitSize], u, back)
		}
		tail := append(append([]byte(nil), b[:engine.CQUnitSize]...), 0xa5, 0x5a)
		if v := engine.DecodeUnit(tail); v != u {
			t.Fatalf("bytes past the unit changed it: %+v, want %+v", v, u)
		}
	})
}

// openFuzzStore opens a 4096-byte-file store whose file name holds data.
// Open must neither panic nor hang; it may refuse the data. A store it
// opens must hold invariants: a second recovery (after a kill) changes no
// byte (P4), the CommitLog ends inside its one file, and every message a
// queue serves decodes at the offset its unit names and belongs to that
// queue.
func openFuzzStore(t *testing.T, name string, data []byte) {
	afs := afero.NewMemMapFs()
	if err := afs.MkdirAll(pathDir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := afero.WriteFile(afs, name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := hooks.Manual(engine.Config{CommitLogFileSize: 4096, ConsumeQueueUnits: 16, Logger: quiet})
	fs, err := crashsim.New(afs, crashsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Open(fs, cfg); err != nil {
		return
	}
	if _, err := engine.Open(fs, cfg); err == nil {
		t.Fatal("a second store opened on a locked directory")
	}
	fs.Kill()
	first := storeFiles(fs)
	s, err := engine.Open(fs, cfg)
	if err != nil {
		t.Fatalf("a recovered store does not open again after a kill: %v", err)
	}
	if second := storeFiles(fs); !sameFiles(first, second, false) {
		t.Fatalf("recovering a recovered store changed its files:\n%s", diffFiles(first, second))
	}
	if end := s.CommitLog().MaxOffset(); end < 0 || end > 4096 {
		t.Fatalf("recovered CommitLog ends at %d, outside its one 4096-byte file", end)
	}
	for topic, ids := range s.Topics() {
		for _, id := range ids {
			checkFuzzQueue(t, s, topic, id)
		}
	}
	_ = s.Close()
}

// checkFuzzQueue reads a queue from its first offset and checks each
// message against its unit.
func checkFuzzQueue(t *testing.T, s *engine.Store, topic string, id int32) {
	r, err := s.GetMessage(topic, id, s.MinOffsetInQueue(topic, id), 32, nil)
	if err != nil {
		return
	}
	defer r.Release()
	for _, v := range r.Messages {
		ext, err := record.Decode(v.Record, v.CommitLogOffset, true)
		if err != nil {
			t.Fatalf("queue %s/%d serves a record at %d that does not decode: %v", topic, id, v.CommitLogOffset, err)
		}
		if ext.Topic != topic || ext.QueueID != id || ext.QueueOffset != v.QueueOffset {
			t.Fatalf("queue %s/%d#%d serves a record of %s/%d#%d", topic, id, v.QueueOffset, ext.Topic, ext.QueueID, ext.QueueOffset)
		}
	}
}

func pathDir(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			return name[:i]
		}
	}
	return "."
}

// FuzzRecoverCommitLog: recovery of an arbitrary first CommitLog file.
func FuzzRecoverCommitLog(f *testing.F) {
	addFixture(f, "store-2021-8k/commitlog/00000000000000000000", 4096)
	f.Add(make([]byte, 4096))
	f.Fuzz(func(t *testing.T, b []byte) {
		img := make([]byte, 4096) // the store's file size; other sizes are refused
		copy(img, b)
		openFuzzStore(t, "commitlog/00000000000000000000", img)
	})
}

// FuzzRecoverConsumeQueue: a store whose only file is a ConsumeQueue file
// holding arbitrary units.
func FuzzRecoverConsumeQueue(f *testing.F) {
	f.Add(make([]byte, 16*engine.CQUnitSize))
	f.Fuzz(func(t *testing.T, b []byte) {
		img := make([]byte, 16*engine.CQUnitSize)
		copy(img, b)
		openFuzzStore(t, "consumequeue/T/0/00000000000000000000", img)
	})
}

// FuzzConfigJSON: the broker's readers of RocketMQ's JSON config files
// (fastjson output with bare integer keys, .bak fallback) never panic on
// any content, and what they accept they write back as standard JSON that
// loads again to the same table.
func FuzzConfigJSON(f *testing.F) {
	for _, n := range []string{"consumerOffset.json", "topics.json", "delayOffset.json", "subscriptionGroup.json", "consumerFilter.json"} {
		addFixture(f, "broker-config/config/"+n, 1<<20)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var v map[string]any
		if configfile.Decode(b, &v) == nil && !json.Valid(configfile.QuoteBareKeys(b)) {
			t.Fatal("Decode accepted bytes that do not quote to valid JSON")
		}
		fuzzOffsets(t, b)
		for _, name := range []string{config.TopicsFile, config.GroupsFile} {
			fs := memfs.New(nil)
			writeConfig(t, fs, name, b)
			switch name {
			case config.TopicsFile:
				_, _ = config.LoadTopics(fs, config.TopicOptions{})
			default:
				_, _ = config.LoadGroups(fs, true, clockwork.NewFakeClockAt(time.UnixMilli(0)), nil)
			}
		}
	})
}

// fuzzOffsets loads b as consumerOffset.json; an accepted table must
// survive a persist and reload unchanged.
func fuzzOffsets(t *testing.T, b []byte) {
	fs := memfs.New(nil)
	writeConfig(t, fs, offset.File, b)
	m, err := offset.Load(fs, "", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return
	}
	want := m.Table()
	m.Commit("fuzz", "fuzz-group", "fuzz-topic", 0, 1) // Persist writes only a changed table
	if err := m.Persist(); err != nil {
		t.Fatal(err)
	}
	again, err := offset.Load(fs, "", slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("a persisted offset table does not load: %v", err)
	}
	got := again.Table()
	for k, qs := range want {
		for q, off := range qs {
			if got[k][q] != off {
				t.Fatalf("offset %s/%d: %d after a round trip, want %d", k, q, got[k][q], off)
			}
		}
	}
}

func writeConfig(t *testing.T, fs backend.FS, name string, b []byte) {
	t.Helper()
	if err := fs.MkdirAll(path.Dir(name)); err != nil {
		t.Fatal(err)
	}
	if err := backend.WriteFileAtomic(fs, name, b); err != nil {
		t.Fatal(err)
	}
}
