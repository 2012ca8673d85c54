package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/internal/fixture"
)

// copyFixture copies a RocketMQ fixture store into a writable temp dir.
func copyFixture(t *testing.T, name string) string {
	t.Helper()
	src := fixture.Path(t, name)
	dst := t.TempDir()
	err := filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatalf("copy fixture %s: %v", name, err)
	}
	return dst
}

func TestReadFixtureJSON(t *testing.T) {
	for _, fx := range []string{"store-2021-8k", "store-2019-unit"} {
		t.Run(fx, func(t *testing.T) {
			dir := copyFixture(t, fx)
			var out, errOut bytes.Buffer
			err := runRead(&out, &errOut, readOptions{dir: dir, topic: "abc", queue: 0, offset: -1, max: 100, json: true})
			if err != nil {
				t.Fatalf("read: %v\n%s", err, errOut.String())
			}
			sc := bufio.NewScanner(&out)
			n := 0
			for sc.Scan() {
				var m readMessage
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					t.Fatal(err)
				}
				if m.QueueOffset != int64(n) || m.Body != "Once, there was a chance for me!" || m.Tags != "TAG1" || m.Keys == "" {
					t.Fatalf("message %d: %+v", n, m)
				}
				if len(m.MsgID) != 32 {
					t.Fatalf("msgId %q", m.MsgID)
				}
				n++
			}
			if n != 47 {
				t.Fatalf("read %d messages, want 47", n)
			}
			// Read-only: no consumequeue directory was written to disk.
			if _, err := os.Stat(filepath.Join(dir, "consumequeue")); !os.IsNotExist(err) {
				t.Fatalf("read created %s/consumequeue (err %v)", dir, err)
			}
		})
	}
}

func TestReadText(t *testing.T) {
	dir := copyFixture(t, "store-2021-8k")
	var out, errOut bytes.Buffer
	if err := runRead(&out, &errOut, readOptions{dir: dir, topic: "abc", offset: 45, max: 10}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if strings.Count(s, "queueOffset=") != 2 || !strings.Contains(s, "2 message(s); queue abc/0 holds offsets [0, 47)") {
		t.Fatalf("unexpected output:\n%s", s)
	}
}

func TestStatsFixtureWithBrokerConfig(t *testing.T) {
	dir := copyFixture(t, "store-2021-8k")
	cfg := copyFixture(t, "broker-config")
	if err := os.Rename(filepath.Join(cfg, "config"), filepath.Join(dir, "config")); err != nil {
		t.Fatal(err)
	}
	st, err := collectStats(dir, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Queues) != 1 || st.Queues[0] != (queueStats{"abc", 0, 0, 47}) {
		t.Fatalf("queues = %+v", st.Queues)
	}
	if len(st.Consumers) == 0 {
		t.Fatal("no consumer offsets read from consumerOffset.json")
	}
	n := 0
	for _, c := range st.Consumers {
		if c.Topic != "TopicTest" {
			continue
		}
		n++
		// The fixture's CommitLog is not the broker's: no TopicTest queue
		// here, so the lag is 0 against a max of 0.
		if c.Offset != 250 || c.Max != 0 || c.Lag != 0 {
			t.Fatalf("consumer %+v: want offset 250 as in the fixture", c)
		}
	}
	if n != 4 {
		t.Fatalf("%d TopicTest offsets, want 4", n)
	}
	var out bytes.Buffer
	if err := printStats(&out, st); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "abc    0      0    47") {
		t.Fatalf("stats output:\n%s", out.String())
	}
}

// read names one queue: without --queue it is a usage error (exit 2), not
// a silent read of queue 0.
func TestReadRequiresQueue(t *testing.T) {
	var out, errOut bytes.Buffer
	code := execute([]string{"read", "--dir", t.TempDir(), "--topic", "abc"}, &out, &errOut)
	if code != exitError || !strings.Contains(errOut.String(), `"queue" not set`) {
		t.Fatalf("exit %d, stderr %q; want %d and a missing --queue", code, errOut.String(), exitError)
	}
}
