package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"

	"github.com/rocketstore/rocketstore/internal/testport"
)

// TestSIGKILLRestartLosesNothingAcknowledged is the end-to-end crash
// test: `rocketstore serve` (a real process, SYNC_FLUSH) is killed
// with SIGKILL while the official Go client sends, restarted on the same
// directory, and every send the client saw acknowledged is then consumed.
func TestSIGKILLRestartLosesNothingAcknowledged(t *testing.T) {
	t.Parallel()
	start, addr := serveProcess(t, "flushDiskType: SYNC_FLUSH\nmapedFileSizeCommitLog: 1048576\nmessageIndexEnable: false\n")
	srv := start()
	p := newProducer(t, addr)
	var mu sync.Mutex
	acked := map[string]bool{}
	send := func(from, to int) {
		for i := from; i < to; i++ {
			m := primitive.NewMessage("TopicKill", []byte(fmt.Sprintf("body-%d", i)))
			m.WithProperty("seq", strconv.Itoa(i))
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			r, err := p.SendSync(ctx, m)
			cancel()
			if err == nil && r.Status == primitive.SendOK {
				mu.Lock()
				acked[strconv.Itoa(i)] = true
				mu.Unlock()
			}
		}
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); send(0, 400) }()
	// Kill while the producer is sending.
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 100 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := srv.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	srv.Wait()
	wg.Wait()
	srv = start()
	defer func() {
		srv.Process.Signal(syscall.SIGTERM)
		srv.Wait()
	}()
	mu.Lock()
	want := len(acked)
	mu.Unlock()
	col, c := collect(t, consumerOpts(addr, "GroupKill"), "TopicKill", consumer.MessageSelector{})
	defer c.Shutdown()
	if lost := col.waitForKeys(t, 60*time.Second, acked); len(lost) > 0 {
		t.Fatalf("%d of %d acknowledged sends not consumed after SIGKILL and restart: %v", len(lost), want, lost)
	}
	t.Logf("%d sends acknowledged before and around the kill, all consumed after the restart", want)
}

// freeAddr returns a 127.0.0.1 address reserved for this test process,
// outside the ephemeral range, so that a restarted serve finds it free.
func freeAddr(t testing.TB) string {
	t.Helper()
	return testport.Addr(t, "127.0.0.1")
}

// serveProcess builds the command and returns a start function for
// `rocketstore serve` on a new store directory at addr, with the broker
// YAML yaml: each call starts a process on that same store and returns
// once its port answers.
func serveProcess(t *testing.T, yaml string) (start func() *exec.Cmd, addr string) {
	t.Helper()
	bin := buildRocketstore(t)
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "broker.yaml")
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	addr = freeAddr(t)
	return func() *exec.Cmd {
		cmd := exec.Command(bin, "serve", "--dir", dir, "--listen", addr, "--config", cfg, "--log-level", "warn")
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				return cmd
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatal("server did not start listening")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}, addr
}
