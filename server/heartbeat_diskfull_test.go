package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/rocketstore/rocketstore/backend/memfs"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

// fullConfigFs is an afero FS whose file creations under config/ fail with
// ENOSPC while full is set: the disk filled up after the store opened.
type fullConfigFs struct {
	afero.Fs
	full *atomic.Bool
}

func (f fullConfigFs) refuse(name string) error {
	if f.full.Load() && strings.HasPrefix(strings.TrimPrefix(name, "/"), "config/") {
		return &os.PathError{Op: "create", Path: name, Err: syscall.ENOSPC}
	}
	return nil
}

func (f fullConfigFs) Create(name string) (afero.File, error) {
	if err := f.refuse(name); err != nil {
		return nil, err
	}
	return f.Fs.Create(name)
}

func (f fullConfigFs) OpenFile(name string, flag int, perm os.FileMode) (afero.File, error) {
	if flag&(os.O_CREATE|os.O_WRONLY|os.O_RDWR) != 0 {
		if err := f.refuse(name); err != nil {
			return nil, err
		}
	}
	return f.Fs.OpenFile(name, flag, perm)
}

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// A new consumer group's heartbeat is refused when subscriptionGroup.json
// cannot be written (a full disk): the client gets SYSTEM_ERROR naming the
// cause, and the server logs it at ERROR, once while it repeats, then once
// when heartbeats are accepted again.
func TestHeartbeatRefusedOnFullDiskIsLogged(t *testing.T) {
	var full atomic.Bool
	logs := &lockedBuffer{}
	e := fullConfigEnv(t, &full, quiet, slog.New(slog.NewTextHandler(logs, nil)))
	cl := e.dial(nil)
	defer cl.Close()

	full.Store(true)
	for i := range 5 {
		// A group is kept in memory after its save failed (as RocketMQ
		// keeps it): each refused heartbeat names a new group.
		resp := e.heartbeat(cl, "client-1", "NewGroup-"+strconv.Itoa(i), map[string]string{"T": "*"})
		if resp.Code != remoting.CodeSystemError || !strings.Contains(resp.Remark, "no space left on device") {
			t.Fatalf("heartbeat on a full disk: code %d remark %q, want SYSTEM_ERROR naming ENOSPC", resp.Code, resp.Remark)
		}
	}
	if n := strings.Count(logs.String(), "heartbeat refused"); n != 1 ||
		!strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "clientID=client-1") {
		t.Fatalf("%d log lines for 5 refused heartbeats, want 1 at ERROR naming the client:\n%s", n, logs.String())
	}
	full.Store(false)
	wantCode(t, e.heartbeat(cl, "client-1", "NewGroup-5", map[string]string{"T": "*"}), remoting.CodeSuccess)
	if !strings.Contains(logs.String(), "heartbeats accepted again") || !strings.Contains(logs.String(), "failures=5") {
		t.Fatalf("the end of the fault is not logged:\n%s", logs.String())
	}
}

// A send whose topic the broker would create is refused when topics.json
// cannot be written (a full disk): the producer gets SYSTEM_ERROR naming
// the cause, and the server logs it at ERROR, once while it repeats, then
// once when such topics are saved again. It used to be logged nowhere.
func TestTopicNotCreatedOnFullDiskIsLogged(t *testing.T) {
	var full atomic.Bool
	logs := &lockedBuffer{}
	e := fullConfigEnv(t, &full, slog.New(slog.NewTextHandler(logs, nil)), quiet)
	e.cl = e.dial(nil)
	defer e.cl.Close()

	full.Store(true)
	for i := range 5 {
		resp := e.send("NewTopic-"+strconv.Itoa(i), 0, "body", "")
		if resp.Code != remoting.CodeSystemError || !strings.Contains(resp.Remark, "no space left on device") {
			t.Fatalf("send creating a topic on a full disk: code %d remark %q, want SYSTEM_ERROR naming ENOSPC", resp.Code, resp.Remark)
		}
	}
	if n := strings.Count(logs.String(), "send refused: the topic it creates could not be saved"); n != 1 ||
		!strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "topic=NewTopic-0") {
		t.Fatalf("%d log lines for 5 refused sends, want 1 at ERROR naming the topic:\n%s", n, logs.String())
	}
	full.Store(false)
	wantCode(t, e.send("NewTopic-5", 0, "body", ""), remoting.CodeSuccess)
	if !strings.Contains(logs.String(), "topics created by sends are saved again") || !strings.Contains(logs.String(), "failures=5") {
		t.Fatalf("the end of the fault is not logged:\n%s", logs.String())
	}
}

// fullConfigEnv serves a broker on a memory file system whose config
// files cannot be written while full is set; brokerLog is the store's
// logger, serverLog the server's.
func fullConfigEnv(t *testing.T, full *atomic.Bool, brokerLog, serverLog *slog.Logger) *env {
	t.Helper()
	fs := memfs.New(fullConfigFs{Fs: afero.NewMemMapFs(), full: full})
	b, err := broker.Open(fs, broker.Config{Store: engine.Config{CommitLogFileSize: 1 << 20, ConsumeQueueUnits: 1000, Logger: brokerLog}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	s, err := server.New(b, server.Config{Logger: serverLog})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Shutdown(ctx)
	})
	a, err := s.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &env{t: t, b: b, s: s, adr: a.String()}
}
