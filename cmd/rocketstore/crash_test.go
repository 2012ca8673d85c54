package main

// A real-process crash test on the mmap backend: a child process (this test
// binary, re-executed) puts messages with SyncFlush and prints each
// acknowledged one; the parent kills it with SIGKILL at a random moment,
// many times over the same directory, and checks that recovery keeps every
// acknowledged message, that the ConsumeQueues are complete, and that the
// offline verifier finds nothing wrong.
//
// SIGKILL loses nothing that reached the page cache, so this does not model
// a power cut (crashsim does); it checks the process-level claims: a kill
// at any instruction, including during recovery, never loses an
// acknowledged message nor leaves files that recovery cannot repair.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore"
	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/verify"
)

// Environment variables of the crash test.
const (
	// envCrashChild, set to a store directory, turns the test binary into
	// a crash child writing there.
	envCrashChild = "ROCKETSTORE_CRASH_CHILD"
	envCrashRun   = "ROCKETSTORE_CRASH_RUN"
	// envCrashIters sets the number of kills (default crashDefaultIters).
	envCrashIters = "ROCKETSTORE_CRASH_ITERATIONS"
	// envCrashSeed replays a run.
	envCrashSeed = "ROCKETSTORE_CRASH_SEED"
)

const (
	crashDefaultIters = 30
	// crashBudget stops the default run early on a slow machine (SIGKILL
	// waits for a sync in progress), to keep CI near its time budget.
	crashBudget  = 40 * time.Second
	crashWorkers = 4
	crashQueues  = 3
	crashMaxBody = 4000
	// crashChildLimit stops a child that nobody kills (a parent gone).
	crashChildLimit = 200000
)

var crashTopics = []string{"crashA", "crashB"}

func TestMain(m *testing.M) {
	if dir := os.Getenv(envCrashChild); dir != "" {
		os.Exit(crashChild(dir))
	}
	os.Exit(m.Run())
}

// crashConfig is the store configuration of child and parent: small files,
// so that kills land near file ends, BLANK records and file creation too.
func crashConfig() rocketstore.Config {
	return rocketstore.Config{
		FlushDiskType:     rocketstore.SyncFlush,
		CommitLogFileSize: 64 << 10,
		ConsumeQueueUnits: 64,
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// crashAck is one acknowledged put, as the child prints it.
type crashAck struct {
	run, worker, seq int
	topic            string
	qid              int32
	queueOffset      int64
	offset           int64
}

func (a crashAck) String() string {
	return fmt.Sprintf("ack %d %d %d %s %d %d %d", a.run, a.worker, a.seq, a.topic, a.qid, a.queueOffset, a.offset)
}

func parseAck(line string) (crashAck, error) {
	var a crashAck
	_, err := fmt.Sscanf(line, "ack %d %d %d %s %d %d %d", &a.run, &a.worker, &a.seq, &a.topic, &a.qid, &a.queueOffset, &a.offset)
	return a, err
}

// crashKeys is the KEYS property naming a message's origin.
func crashKeys(run, worker, seq int) string { return fmt.Sprintf("r%d-w%d-s%d", run, worker, seq) }

// crashBody derives a message body from its origin, so that the parent can
// check any stored message byte for byte without being told its content.
func crashBody(run, worker, seq int) []byte {
	r := rand.New(rand.NewPCG(uint64(run)<<32|uint64(worker), uint64(seq)))
	b := fmt.Appendf(nil, "%s|", crashKeys(run, worker, seq))
	for range r.IntN(crashMaxBody) {
		b = append(b, byte('a'+r.IntN(26)))
	}
	return b
}

// crashChild is the child process: it puts until killed and prints one
// line per acknowledged put, written with a single write so that the
// parent never sees half of one.
func crashChild(dir string) int {
	run, _ := strconv.Atoi(os.Getenv(envCrashRun))
	s, err := rocketstore.Open(dir, crashConfig())
	if err != nil {
		fmt.Fprintln(os.Stderr, "crash child: open:", err)
		return 3
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, crashWorkers)
	for w := range crashWorkers {
		wg.Go(func() {
			for seq := range crashChildLimit {
				a := crashAck{run: run, worker: w, seq: seq, topic: crashTopics[(w+seq)%len(crashTopics)], qid: int32(seq % crashQueues)}
				res, err := s.Put(context.Background(), &rocketstore.Message{Topic: a.topic, QueueID: a.qid,
					Body: crashBody(run, w, seq), Properties: map[string]string{
						"KEYS": crashKeys(run, w, seq), "TAGS": fmt.Sprint("T", seq%5)}})
				if err != nil {
					errs <- err
					return
				}
				a.queueOffset, a.offset = res.QueueOffset, res.WroteOffset
				mu.Lock()
				_, err = os.Stdout.WriteString(a.String() + "\n")
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		fmt.Fprintln(os.Stderr, "crash child: put:", err)
		return 4
	}
	return 0
}

func envInt(t *testing.T, name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}

func TestCrashSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("re-executes the test binary; skipped with -short")
	}
	seed := envInt(t, envCrashSeed, time.Now().UnixNano())
	iters := int(envInt(t, envCrashIters, crashDefaultIters))
	deadline := time.Now().Add(crashBudget)
	if os.Getenv(envCrashIters) != "" {
		deadline = time.Time{} // an explicit soak runs every iteration
	}
	t.Logf("seed %d, %d kills (replay with %s=%d; more kills with %s=N)", seed, iters, envCrashSeed, seed, envCrashIters)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	dir := t.TempDir()
	var acks []crashAck
	checks, silent := 0, 0
	for run := range iters {
		t0 := time.Now()
		got := runCrashChild(t, dir, run, rng)
		if d := time.Since(t0); d > time.Second {
			t.Logf("run %d took %s for %d acks", run, d, len(got))
		}
		acks = append(acks, got...)
		if len(got) == 0 {
			silent++ // killed while starting or recovering
		}
		last := run == iters-1 || !deadline.IsZero() && time.Now().After(deadline)
		// Most runs leave the killed store to the next child, so that
		// children also recover crashed stores and get killed doing it.
		if last || rng.IntN(3) == 0 {
			checkAfterCrash(t, dir, acks, seed, run)
			checks++
		}
		if last {
			iters = run + 1
			break
		}
	}
	t.Logf("%d kills (%d before the first ack), %d acknowledged messages, %d recoveries checked", iters, silent, len(acks), checks)
}

// runCrashChild starts a child on dir, kills it with SIGKILL either after
// a random delay (which may land in its recovery) or after a random number
// of acknowledgements, and returns the acknowledgements it printed.
func runCrashChild(t *testing.T, dir string, run int, rng *rand.Rand) []crashAck {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envCrashChild+"="+dir, envCrashRun+"="+strconv.Itoa(run))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	kill := sync.OnceFunc(func() { cmd.Process.Signal(syscall.SIGKILL) })
	killAfter := -1
	if rng.IntN(4) == 0 {
		// The delay is the point here (a random instant), not a wait for
		// an event.
		time.AfterFunc(time.Duration(rng.IntN(40_000))*time.Microsecond, kill)
	} else {
		killAfter = 1 + rng.IntN(300)
	}
	// A child that stops making progress is killed too, and reported.
	watchdog := time.AfterFunc(20*time.Second, kill)
	defer watchdog.Stop()
	acks := readAcks(t, stdout, killAfter, kill)
	err = cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return acks
		}
	}
	t.Fatalf("run %d: child ended by itself (%v) after %d acks:\n%s", run, err, len(acks), stderr.String())
	return nil
}

// readAcks reads the child's acknowledgements until it dies, calling kill
// after the killAfter-th (never if killAfter < 0). A last line without its
// newline was cut by the kill and does not count.
func readAcks(t *testing.T, r io.Reader, killAfter int, kill func()) []crashAck {
	t.Helper()
	var acks []crashAck
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return acks
		}
		a, perr := parseAck(strings.TrimSuffix(line, "\n"))
		if perr != nil {
			t.Fatalf("child printed %q: %v", line, perr)
		}
		acks = append(acks, a)
		if len(acks) == killAfter {
			kill()
		}
	}
}

// checkAfterCrash opens the killed store, checks every acknowledged message
// and every queue, closes it and runs the offline verifier.
func checkAfterCrash(t *testing.T, dir string, acks []crashAck, seed int64, run int) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d, after run %d: %s", seed, run, fmt.Sprintf(format, args...))
	}
	s, err := rocketstore.Open(dir, crashConfig())
	if err != nil {
		fail("reopen: %v", err)
	}
	defer s.Close()
	for _, a := range acks {
		if err := checkAck(s, a); err != nil {
			fail("acknowledged %v: %v (recovery %+v)", a, err, s.Recovery())
		}
	}
	for topic, qids := range s.Topics() {
		for _, qid := range qids {
			if err := checkQueue(s, topic, qid); err != nil {
				fail("queue %s/%d: %v", topic, qid, err)
			}
		}
	}
	if err := s.Close(); err != nil {
		fail("close: %v", err)
	}
	fs, err := mmap.NewReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := verify.Run(fs, verify.Options{})
	if err != nil {
		fail("verify: %v", err)
	}
	if !rep.OK() {
		for _, v := range rep.Violations {
			t.Log(v)
		}
		fail("verify found %d violations", rep.ViolationCount)
	}
}

// checkAck checks that an acknowledged message is stored, byte for byte,
// where its acknowledgement said, and indexed by its queue.
func checkAck(s *rocketstore.Store, a crashAck) error {
	m, err := s.LookMessageByOffset(a.offset)
	if err != nil {
		return err
	}
	switch {
	case m.Topic != a.topic || m.QueueID != a.qid || m.QueueOffset != a.queueOffset:
		return fmt.Errorf("found %s/%d queue offset %d", m.Topic, m.QueueID, m.QueueOffset)
	case m.Keys() != crashKeys(a.run, a.worker, a.seq):
		return fmt.Errorf("found the message with keys %q", m.Keys())
	case !bytes.Equal(m.Body, crashBody(a.run, a.worker, a.seq)):
		return fmt.Errorf("body differs")
	}
	off, err := s.CommitLogOffsetInQueue(a.topic, a.qid, a.queueOffset)
	if err != nil || off != a.offset {
		return fmt.Errorf("consume queue has commitlog offset %d (%v)", off, err)
	}
	return nil
}

// checkQueue reads a whole queue: every offset from min to max must hold a
// message this test wrote (no phantoms, no gaps).
func checkQueue(s *rocketstore.Store, topic string, qid int32) error {
	minOff, maxOff := s.MinOffsetInQueue(topic, qid), s.MaxOffsetInQueue(topic, qid)
	for off := minOff; off < maxOff; {
		res, err := s.GetMessage(topic, qid, off, 32)
		if err != nil {
			return err
		}
		if res.Status != rocketstore.Found {
			res.Release()
			return fmt.Errorf("offset %d of [%d, %d): status %s", off, minOff, maxOff, res.Status)
		}
		for _, v := range res.Messages {
			if v.QueueOffset != off {
				res.Release()
				return fmt.Errorf("expected offset %d, got %d", off, v.QueueOffset)
			}
			if err := checkStored(v.Record); err != nil {
				res.Release()
				return fmt.Errorf("offset %d: %w", off, err)
			}
			off++
		}
		res.Release()
	}
	return nil
}

// checkStored checks that a record is one the children wrote, intact.
func checkStored(rec []byte) error {
	m, err := rocketstore.DecodeMessage(rec)
	if err != nil {
		return err
	}
	var run, worker, seq int
	if _, err := fmt.Sscanf(m.Keys(), "r%d-w%d-s%d", &run, &worker, &seq); err != nil {
		return fmt.Errorf("not a message this test wrote: commitlog offset %d, %s/%d queue offset %d, %d-byte body, properties %v: %w",
			m.CommitLogOffset, m.Topic, m.QueueID, m.QueueOffset, len(m.Body), m.Properties, err)
	}
	if !bytes.Equal(m.Body, crashBody(run, worker, seq)) {
		return fmt.Errorf("message %s at commitlog offset %d: body differs from what was written", m.Keys(), m.CommitLogOffset)
	}
	return nil
}

// openForTest opens the store in dir with defaults (the file sizes come
// from the files).
func openForTest(dir string) (*rocketstore.Store, error) {
	return rocketstore.Open(dir, rocketstore.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
}
