package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/internal/engineops"
	"github.com/rocketstore/rocketstore/internal/hooks"
)

// TestForeignFilesInQueueDirectories: names the store never writes, left
// in the CommitLog's and a ConsumeQueue's directory, are skipped with a
// warning that names them; they are neither read as segments nor deleted.
// FUSE leaves .fuse_hidden<N> (a file unlinked while open, kept by a
// crash), NFS .nfs<N>; either may be empty or a second name of a segment.
func TestForeignFilesInQueueDirectories(t *testing.T) {
	const seg0 = "00000000000000000000"
	cqDir := "consumequeue/T/0/"
	for _, tc := range []struct {
		name, dir, file string
		copyOf          string // "" leaves the file empty
	}{
		{"fuse hidden, empty, in a consume queue", cqDir, ".fuse_hidden0000000a00000001", ""},
		{"fuse hidden, a segment's second name", cqDir, ".fuse_hidden0000000b00000002", cqDir + seg0},
		{"nfs silly rename in the commitlog", "commitlog/", ".nfs000000000012345600000001", "commitlog/" + seg0},
		{"a backup copy of a segment", "commitlog/", seg0 + ".bak", "commitlog/" + seg0},
		{"a 20-character name that is no offset", cqDir, "0000000000000000000x", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			afs := afero.NewMemMapFs()
			var logged bytes.Buffer
			cfg := hooks.Manual(engine.Config{CommitLogFileSize: 64 << 10,
				Logger: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))})
			s := openDispatched(t, afs, cfg, 3)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			var content []byte
			var err error
			if tc.copyOf != "" {
				if content, err = afero.ReadFile(afs, tc.copyOf); err != nil {
					t.Fatal(err)
				}
			}
			stray := tc.dir + tc.file
			if err := afero.WriteFile(afs, stray, content, 0o644); err != nil {
				t.Fatal(err)
			}

			s, err = engine.Open(memfs.New(afs), cfg)
			if err != nil {
				t.Fatalf("open with %s in the store: %v", stray, err)
			}
			defer s.Close()
			if lo, hi := s.MinOffsetInQueue("T", 0), s.MaxOffsetInQueue("T", 0); lo != 0 || hi != 3 {
				t.Fatalf("T/0 offsets [%d, %d), want [0, 3)", lo, hi)
			}
			res, err := s.GetMessage("T", 0, 0, 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(res.Messages); n != 3 {
				t.Fatalf("read %d messages, want 3", n)
			}
			res.Release()
			if !strings.Contains(logged.String(), "level=WARN") || !strings.Contains(logged.String(), stray) {
				t.Fatalf("no warning naming %s; log:\n%s", stray, logged.String())
			}
			if ok, _ := afero.Exists(afs, stray); !ok {
				t.Fatalf("%s was deleted: it is not the store's", stray)
			}
		})
	}
}

// TestShortFileBeforeDataRefused: a short file followed by one that holds
// data is no power cut's doing (data is synced in offset order): the
// store refuses to open rather than read past a hole.
func TestShortFileBeforeDataRefused(t *testing.T) {
	afs := afero.NewMemMapFs()
	cfg := hooks.Manual(engine.Config{CommitLogFileSize: 64 << 10, ConsumeQueueUnits: 4})
	s := openDispatched(t, afs, cfg, 6)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := afero.WriteFile(afs, "consumequeue/T/0/00000000000000000000", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if s, err := engine.Open(memfs.New(afs), cfg); !errors.Is(err, engine.ErrCorruptStore) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("open with an empty file before one holding units: %v, want ErrCorruptStore", err)
	}
}

// TestEmptyQueueFilesAfterPowerCut: new segments whose preallocation a
// power cut took back (the name survived, the size did not: a file system
// that does not journal the size with the name, or LazyFS) are empty
// files, and there may be several: every file a queue made since its last
// sync. They end the queue, are padded at open to the configured size (or
// RocketMQ's default, when nothing else says), and the store recovers
// their content from the CommitLog.
func TestEmptyQueueFilesAfterPowerCut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		units int64 // ConsumeQueueUnits; 0 is the default
		empty []string
		size  int64 // each emptied file's size after open
	}{
		{"lone consume queue file, default size", 0,
			[]string{"consumequeue/T/0/00000000000000000000"}, engine.DefaultConsumeQueueUnits * engine.CQUnitSize},
		{"two consume queue files made between flushes", 4,
			[]string{"consumequeue/T/0/00000000000000000000", "consumequeue/T/0/00000000000000000080"}, 80},
		{"the last of two consume queue files", 4,
			[]string{"consumequeue/T/0/00000000000000000080"}, 80},
		{"an empty file before one made and synced empty", 4,
			[]string{"consumequeue/T/0/00000000000000000080"}, 80},
	} {
		t.Run(tc.name, func(t *testing.T) {
			afs := afero.NewMemMapFs()
			cfg := hooks.Manual(engine.Config{CommitLogFileSize: 64 << 10, ConsumeQueueUnits: tc.units})
			s := openDispatched(t, afs, cfg, 6)
			if err := s.FlushCommitLog(0); err != nil {
				t.Fatal(err)
			}
			engineops.Of(s).Abandon() // a crash: the queue was never flushed
			for _, f := range tc.empty {
				if err := afero.WriteFile(afs, f, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if strings.Contains(tc.name, "synced empty") {
				if err := afero.WriteFile(afs, "consumequeue/T/0/00000000000000000160", make([]byte, 80), 0o644); err != nil {
					t.Fatal(err)
				}
			}

			s, err := engine.Open(memfs.New(afs), cfg)
			if err != nil {
				t.Fatalf("open with empty %v: %v", tc.empty, err)
			}
			defer s.Close()
			if hi := s.MaxOffsetInQueue("T", 0); hi != 6 {
				t.Fatalf("T/0 max offset %d after recovery, want 6", hi)
			}
			n := 0
			for off := int64(0); off < 6; {
				res, err := s.GetMessage("T", 0, off, 10, nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Messages) == 0 {
					t.Fatalf("nothing read at offset %d (status %v)", off, res.Status)
				}
				n += len(res.Messages)
				off = res.NextBeginOffset
				res.Release()
			}
			if n != 6 {
				t.Fatalf("read %d messages, want 6", n)
			}
			for _, f := range tc.empty {
				if b, _ := afero.ReadFile(afs, f); int64(len(b)) != tc.size {
					t.Fatalf("%s is %d bytes after open, want %d", f, len(b), tc.size)
				}
			}
		})
	}
}

// openDispatched opens a store on afs, puts n messages m0, m1, ... into
// T and dispatches them.
func openDispatched(t *testing.T, afs afero.Fs, cfg engine.Config, n int) *engine.Store {
	t.Helper()
	s, err := engine.Open(memfs.New(afs), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := s.Put(context.Background(), &engine.Message{Topic: "T", Body: fmt.Appendf(nil, "m%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := engineops.Of(s).Dispatch(); err != nil {
		t.Fatal(err)
	}
	return s
}
