package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend"
	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/backend/mmap"
)

// A message body may hold what looks like a record written where it lies
// (the magic code and a PHYSICALOFFSET naming its own position): here a
// whole valid record, copied from the log with its PHYSICALOFFSET patched,
// just after the start of the parsers' second region. The parser of that
// region takes it for the region's first record; the scan must not, since
// the chain of records never reaches it. The broken variant, which takes a
// region's records wherever its first one was guessed, dispatches the fake
// record and then finds the zeros after it inside the body: it takes them
// for damage followed by intact records and refuses to open the store (or,
// configured to, would truncate every record after them).
//
// On mmap the parsers read regions through the mapping or with pread (each
// forced in turn, and as they choose); on memfs (over the OS's files here,
// so that the test can edit them) they check the mapping.
func TestRecoveryIgnoresGuessedStartInABody(t *testing.T) {
	backends := map[string]func(dir string) (backend.FS, error){
		"mmap": func(dir string) (backend.FS, error) { return mmap.New(dir) },
		"memfs": func(dir string) (backend.FS, error) {
			return memfs.New(afero.NewBasePathFs(afero.NewOsFs(), dir)), nil
		},
	}
	for _, be := range []string{"mmap", "memfs"} {
		for _, broken := range []bool{false, true} {
			name := be + "/" + map[bool]string{false: "checked", true: "broken"}[broken]
			t.Run(name, func(t *testing.T) {
				trustGuessedStarts = broken
				defer func() { trustGuessedStarts = false }()
				forEachRegionRead(t, func(t *testing.T) {
					err := recoverWithRecordInBody(t, backends[be])
					if !broken && err != "" {
						t.Fatal(err)
					}
					if broken {
						t.Logf("broken variant: %s", err)
					}
					if broken && err == "" {
						t.Fatal("the broken variant recovered the log as the checked one: the test cannot tell them apart")
					}
				})
			})
		}
	}
}

// recoverWithRecordInBody writes the log described above, recovers it as
// after a crash with nothing but the CommitLog, and returns what recovery
// got wrong ("" for nothing).
func recoverWithRecordInBody(t *testing.T, newFS func(dir string) (backend.FS, error)) string {
	dir := t.TempDir()
	try := func() (*Store, error) {
		fs, err := newFS(dir)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{CommitLogFileSize: 16 << 20, ConsumeQueueUnits: 1 << 16}
		cfg.hooks.Manual = true
		return Open(fs, cfg)
	}
	open := func() *Store {
		s, err := try()
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	const bodyStart = 88 // of a record with IPv4 hosts
	filler := &Message{Topic: "g", Body: make([]byte, 1000)}
	var puts []PutResult
	put := func(s *Store, m *Message) int64 {
		res, err := s.Put(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		puts = append(puts, res)
		return res.WroteOffset + int64(res.WroteBytes)
	}
	s := open()
	var end int64
	for end < parseAheadRegion-4000 {
		end = put(s, filler)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The fake: the first record, moved to just after the region start.
	log, err := os.ReadFile(filepath.Join(dir, "commitlog", "00000000000000000000"))
	if err != nil {
		t.Fatal(err)
	}
	fakeAt := int64(parseAheadRegion + 8)
	fake := append([]byte(nil), log[:puts[0].WroteBytes]...)
	binary.BigEndian.PutUint64(fake[28:], uint64(fakeAt))
	body := make([]byte, fakeAt-(end+bodyStart)+int64(len(fake))+100)
	copy(body[fakeAt-(end+bodyStart):], fake)
	s = open()
	put(s, &Message{Topic: "g", Body: body})
	if at := puts[len(puts)-1].WroteOffset; at != end {
		t.Fatalf("the carrier was written at %d, want %d", at, end)
	}
	for end < 6<<20 { // enough for the parsers to run
		end = put(s, filler)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	MarkCrashedKeepingCommitLog(t, dir)
	s, err = try()
	if err != nil {
		return "recovery failed: " + err.Error()
	}
	defer s.Close()
	rep := s.Recovery()
	if rep.CommitLogEnd != end || rep.Redispatched != len(puts) || rep.ConsumeQueuesRebuilt || len(rep.Damaged) > 0 {
		return fmt.Sprintf("recovered to %d with %d records re-dispatched (queues rebuilt: %v, damaged: %v), want %d and %d, no rebuild, nothing damaged",
			rep.CommitLogEnd, rep.Redispatched, rep.ConsumeQueuesRebuilt, rep.Damaged, end, len(puts))
	}
	for _, p := range puts {
		r, err := s.GetMessage("g", 0, p.QueueOffset, 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		ok := len(r.Messages) == 1 && r.Messages[0].CommitLogOffset == p.WroteOffset
		r.Release()
		if !ok {
			return fmt.Sprintf("queue offset %d does not hold the record at %d", p.QueueOffset, p.WroteOffset)
		}
	}
	return ""
}
