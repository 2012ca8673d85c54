package dispatch

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rocketstore/rocketstore/record"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var host = netip.MustParseAddrPort("127.0.0.1:10911")

// rec encodes a record at offset pos.
func rec(t *testing.T, m *record.Message, pos, qoff, ts int64) []byte {
	t.Helper()
	var e record.Encoder
	p, err := e.Prepare(m, host, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	h, b, tl := e.Encode(p, record.Stamp{QueueOffset: qoff, PhysicalOffset: pos, StoreTimestamp: ts, StoreHost: host})
	return append(append(append([]byte(nil), h...), b...), tl...)
}

func TestParse(t *testing.T) {
	p := &Parser{DelayLevels: []time.Duration{time.Second, 5 * time.Second}}
	m := &record.Message{Topic: "orders", QueueID: 3, Body: []byte("b"), SysFlag: record.TransactionCommit,
		PreparedTransactionOffset: 9, Properties: map[string]string{"TAGS": "TagA", "KEYS": "k1 k2", "UNIQ_KEY": "U1"}}
	b := rec(t, m, 500, 7, 1000)
	req, size, blank, err := p.Parse(append(b, 0, 0, 0), 500, true)
	if err != nil || blank || int(size) != len(b) {
		t.Fatalf("parse: %v blank %v size %d", err, blank, size)
	}
	if string(req.Topic) != "orders" || req.QueueID != 3 || req.CommitLogOffset != 500 || int(req.MsgSize) != len(b) ||
		req.TagsCode != 2598919 || req.StoreTimestamp != 1000 || req.ConsumeQueueOffset != 7 ||
		req.SysFlag != record.TransactionCommit || req.PreparedTransactionOffset != 9 ||
		string(req.Keys) != "k1 k2" || string(req.UniqKey) != "U1" || !req.Dispatchable() {
		t.Fatalf("request %+v", req)
	}
	// No tags: tagsCode 0.
	req, _, _, _ = p.Parse(rec(t, &record.Message{Topic: "t"}, 0, 0, 1), 0, true)
	if req.TagsCode != 0 {
		t.Fatalf("tagsCode without tags: %d", req.TagsCode)
	}
	// Schedule topic: tagsCode is the deliver time.
	for lv, want := range map[string]int64{"1": 2000, "2": 6000, "9": 6000, "0": 2000, "x": 2000} {
		req, _, _, err = p.Parse(rec(t, &record.Message{Topic: record.ScheduleTopic, Properties: map[string]string{"DELAY": lv, "TAGS": "A"}}, 0, 0, 1000), 0, true)
		if err != nil || req.TagsCode != want {
			t.Fatalf("DELAY %s: tagsCode %d, want %d (%v)", lv, req.TagsCode, want, err)
		}
	}
	// Prepared and rollback records are not for the ConsumeQueue.
	for _, sys := range []int32{record.TransactionPrepared, record.TransactionRollback} {
		req, _, _, _ = p.Parse(rec(t, &record.Message{Topic: "t", SysFlag: sys}, 0, 0, 1), 0, true)
		if req.Dispatchable() {
			t.Fatalf("sysflag %#x dispatchable", sys)
		}
	}
	// Blank.
	_, size, blank, err = p.Parse(record.PutBlank(make([]byte, 8), 8), 0, false)
	if err != nil || !blank || size != 8 {
		t.Fatalf("blank: %v %v %d", err, blank, size)
	}
	// Zeros and stale bytes are errors.
	if _, _, _, err = p.Parse(make([]byte, 100), 0, false); !errors.Is(err, record.ErrNoRecord) {
		t.Fatalf("zeros: %v", err)
	}
	if _, _, _, err = p.Parse(b, 501, false); !errors.Is(err, record.ErrCorrupt) {
		t.Fatalf("wrong position: %v", err)
	}
}

// memLog is a Log of fixed-size files in memory.
type memLog struct {
	mu       sync.Mutex
	fileSize int64
	data     []byte // from offset 0
	wrote    int64  // published end
}

type nopRelease struct{}

func (nopRelease) Release() {}

func (l *memLog) Data(off int64) ([]byte, Releaser) {
	l.mu.Lock()
	defer l.mu.Unlock()
	end := min(l.wrote, off-off%l.fileSize+l.fileSize)
	if off < 0 || off >= end {
		return nil, nil
	}
	return l.data[off:end], nopRelease{}
}
func (l *memLog) MinOffset() int64 { return 0 }
func (l *memLog) MaxOffset() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.wrote
}
func (l *memLog) RollNextFile(off int64) int64 { return off - off%l.fileSize + l.fileSize }

// append adds a record (rolling with a BLANK when it does not fit) and
// returns its offset.
func (l *memLog) append(t *testing.T, m *record.Message, qoff int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	size := int64(len(rec(t, m, 0, 0, 1)))
	if room := l.fileSize - l.wrote%l.fileSize; size+8 > room {
		l.data = append(l.data, record.PutBlank(make([]byte, 8), int32(room))...)
		l.data = append(l.data, make([]byte, room-8)...)
		l.wrote += room
	}
	pos := l.wrote
	l.data = append(l.data, rec(t, m, pos, qoff, 1)...)
	l.wrote += size
	return pos
}

type collector struct {
	mu   sync.Mutex
	offs []int64
	fail error
}

func (c *collector) Dispatch(r *Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fail != nil {
		return c.fail
	}
	c.offs = append(c.offs, r.CommitLogOffset)
	return nil
}

func (c *collector) got() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int64(nil), c.offs...)
}

func TestServiceDispatchesInOrderAcrossFiles(t *testing.T) {
	l := &memLog{fileSize: 512}
	var want []int64
	for i := 0; i < 20; i++ {
		want = append(want, l.append(t, &record.Message{Topic: "t", Body: make([]byte, 50)}, int64(i)))
	}
	c := &collector{}
	s := NewService(l, &Parser{}, 0, c)
	n, err := s.DoReput()
	if err != nil || n != 20 {
		t.Fatalf("DoReput: %d %v", n, err)
	}
	if got := c.got(); len(got) != 20 || got[19] != want[19] || got[0] != 0 {
		t.Fatalf("dispatched %v, want %v", got, want)
	}
	if s.ReputFromOffset() != l.MaxOffset() || s.BehindBytes() != 0 {
		t.Fatalf("reputFrom %d, max %d", s.ReputFromOffset(), l.MaxOffset())
	}
	// A second pass has nothing to do.
	if n, _ := s.DoReput(); n != 0 {
		t.Fatalf("second pass dispatched %d", n)
	}
	// Replaying from the start dispatches everything again.
	s.SetReputFrom(0)
	if n, _ := s.DoReput(); n != 20 {
		t.Fatalf("replay dispatched %d", n)
	}
}

func TestServiceWakeWaitClose(t *testing.T) {
	l := &memLog{fileSize: 4096}
	c := &collector{}
	s := NewService(l, &Parser{}, 0, c)
	s.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 0; i < 100; i++ {
		off := l.append(t, &record.Message{Topic: "t", Body: []byte("x")}, int64(i))
		s.Wake()
		if err := s.WaitFor(ctx, off+1); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.got()) != 100 {
		t.Fatalf("dispatched %d", len(c.got()))
	}
	// Concurrent waiters all wake.
	var wg sync.WaitGroup
	end := l.MaxOffset() + 1
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.WaitFor(ctx, end)
		}()
	}
	l.append(t, &record.Message{Topic: "t", Body: []byte("y")}, 100)
	s.Wake()
	wg.Wait()
	for i := 0; i < 8; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// A waiter for something never published is released by Close; the
	// final pass dispatches what was published without a Wake.
	l.append(t, &record.Message{Topic: "t", Body: []byte("z")}, 101)
	waitErr := make(chan error, 1)
	go func() { waitErr <- s.WaitFor(context.Background(), 1<<40) }()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-waitErr; !errors.Is(err, ErrStopped) {
		t.Fatalf("waiter after close: %v", err)
	}
	if len(c.got()) != 102 {
		t.Fatalf("dispatched %d after close", len(c.got()))
	}
	// A cancelled wait returns the context's error.
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	s2 := NewService(l, &Parser{}, 0)
	if err := s2.WaitFor(cctx, 1<<40); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
}

func TestServiceFailureStops(t *testing.T) {
	l := &memLog{fileSize: 4096}
	l.append(t, &record.Message{Topic: "t"}, 0)
	boom := errors.New("boom")
	c := &collector{fail: boom}
	s := NewService(l, &Parser{}, 0, c)
	s.Start()
	if err := s.WaitFor(context.Background(), 1); !errors.Is(err, boom) {
		t.Fatalf("wait on a failed service: %v", err)
	}
	if s.ReputFromOffset() != 0 {
		t.Fatalf("reputFrom moved past a failed record: %d", s.ReputFromOffset())
	}
	if err := s.Close(); !errors.Is(err, boom) {
		t.Fatalf("close: %v", err)
	}
	// Corrupt bytes in the log stop the service too.
	bad := &memLog{fileSize: 4096, data: make([]byte, 200), wrote: 200}
	s = NewService(bad, &Parser{}, 0, &collector{})
	if _, err := s.DoReput(); !errors.Is(err, record.ErrCorrupt) {
		t.Fatalf("zeros: %v", err)
	}
}

// lateLog is a memLog that publishes one more record right after the
// service's look at the log's end once it announced that it parks (the
// look in parkOrRun): the service saw nothing new and waits for a wake
// that never comes, so only a final pass can dispatch that record.
type lateLog struct {
	*memLog
	armed     atomic.Bool
	late      func() int64
	lateOff   atomic.Int64
	published chan struct{}
}

func (l *lateLog) MaxOffset() int64 {
	end := l.memLog.MaxOffset()
	if l.armed.CompareAndSwap(true, false) {
		l.lateOff.Store(l.late())
		close(l.published)
	}
	return end
}

// TestHaltSkipsFinalPass dispatches records, then publishes one the
// service has not seen, with no wake, and stops it. Close's final pass
// dispatches that record; Halt (a killed process) must dispatch nothing
// more, and its log must end before that record.
func TestHaltSkipsFinalPass(t *testing.T) {
	for _, halt := range []bool{false, true} {
		l := &lateLog{memLog: &memLog{fileSize: 4096}, published: make(chan struct{})}
		var want []int64
		for i := range 3 {
			want = append(want, l.append(t, &record.Message{Topic: "t", Body: []byte("early")}, int64(i)))
		}
		l.late = func() int64 { return l.append(t, &record.Message{Topic: "t", Body: []byte("late")}, 3) }
		c := &collector{}
		s := NewService(l, &Parser{}, 0, c)
		var once sync.Once
		s.beforePark = func() { once.Do(func() { l.armed.Store(true) }) }
		s.Start()
		<-l.published
		if got := c.got(); !reflect.DeepEqual(got, want) {
			t.Fatalf("before the stop: dispatched %v, want %v", got, want)
		}
		stop, name := s.Close, "Close"
		if halt {
			stop, name = s.Halt, "Halt"
		}
		if err := stop(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		late := l.lateOff.Load()
		if !halt {
			want = append(want, late)
		}
		if got := c.got(); !reflect.DeepEqual(got, want) {
			t.Fatalf("after %s: dispatched %v, want %v (the late record is at %d)", name, got, want, late)
		}
		if halt && s.ReputFromOffset() > late {
			t.Fatalf("after Halt: reputFrom %d passed the late record at %d", s.ReputFromOffset(), late)
		}
	}
}

func TestDispatchAllocs(t *testing.T) {
	l := &memLog{fileSize: 1 << 20}
	m := &record.Message{Topic: "t", Body: make([]byte, 128), Properties: map[string]string{"TAGS": "A", "KEYS": "k"}}
	for i := 0; i < 1000; i++ {
		l.append(t, m, int64(i))
	}
	s := NewService(l, &Parser{}, 0, DispatcherFunc(func(*Request) error { return nil }))
	allocs := testing.AllocsPerRun(10, func() {
		s.SetReputFrom(0)
		if n, err := s.DoReput(); err != nil || n != 1000 {
			t.Fatal(n, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per pass of 1000 records", allocs)
	}
}

// TestWakeDuringPassEnd publishes a record, and wakes the service, right
// after a pass has ended and before the service announces that it parks:
// the moment a Wake finds the service running and sends nothing. The
// record must still be dispatched without another put. The broken variant
// (noRecheck: park without looking at the log again) loses that wake, and
// the test shows that it would catch it.
func TestWakeDuringPassEnd(t *testing.T) {
	for _, broken := range []bool{false, true} {
		l := &memLog{fileSize: 1 << 16}
		c := &collector{}
		s := NewService(l, &Parser{}, 0, c)
		s.noRecheck = broken
		var off int64
		published := make(chan struct{})
		var once sync.Once
		s.beforePark = func() {
			once.Do(func() {
				// The service has dispatched everything it saw and
				// has not announced its wait yet.
				off = l.append(t, &record.Message{Topic: "t", Body: []byte("late")}, 0)
				s.Wake()
				close(published)
			})
		}
		s.Start()
		<-published
		wait := 10 * time.Second
		if broken {
			wait = 300 * time.Millisecond // only to show the record stays behind
		}
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		err := s.WaitFor(ctx, off+1)
		cancel()
		switch {
		case !broken && err != nil:
			t.Fatalf("record published as the pass ended: %v (dispatched %v)", err, c.got())
		case broken && !errors.Is(err, context.DeadlineExceeded):
			t.Fatalf("broken variant (no second look): wait returned %v, want the wake lost", err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		// Close's final pass dispatches it in either case.
		if got := c.got(); len(got) != 1 || got[0] != off {
			t.Fatalf("broken=%v: dispatched %v, want [%d]", broken, got, off)
		}
	}
}

// TestWakeStress runs putters that publish and wake while the service
// parks and runs, each waiting for its own record: a lost wake leaves a
// putter waiting for a record nothing dispatches.
func TestWakeStress(t *testing.T) {
	l := &memLog{fileSize: 1 << 20}
	c := &collector{}
	s := NewService(l, &Parser{}, 0, c)
	s.Start()
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				off := l.append(t, &record.Message{Topic: "t", Body: []byte("x")}, 0)
				s.Wake()
				if err := s.WaitFor(ctx, off+1); err != nil {
					errs <- fmt.Errorf("record at %d: %w", off, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// ParseInto writes every field of the Request it is given, so that a
// caller reusing one (recovery's batches) never keeps a previous record's
// keys or tags. Every field of the reused Request starts non-zero (found
// by reflection, so a field added later is covered), and the result must
// equal a parse into a zero Request.
func TestParseIntoOverwritesEveryField(t *testing.T) {
	p := &Parser{}
	for _, m := range []*record.Message{
		{Topic: "t"}, // no properties: tags, keys and uniq key must be cleared
		{Topic: "orders", QueueID: 2, Body: []byte("x"), Properties: map[string]string{"TAGS": "A", "KEYS": "k", "UNIQ_KEY": "U"}},
	} {
		b := rec(t, m, 64, 5, 7)
		var want Request
		if _, _, err := p.ParseInto(&want, b, 64, true); err != nil {
			t.Fatal(err)
		}
		var dirty Request
		v := reflect.ValueOf(&dirty).Elem()
		for i := range v.NumField() {
			switch f := v.Field(i); f.Kind() {
			case reflect.Slice:
				f.Set(reflect.ValueOf([]byte("stale")))
			case reflect.Int32, reflect.Int64:
				f.SetInt(-99)
			default:
				t.Fatalf("field %s of kind %s: extend this test", v.Type().Field(i).Name, f.Kind())
			}
		}
		if _, _, err := p.ParseInto(&dirty, b, 64, true); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(dirty, want) {
			t.Fatalf("reused request %+v, want %+v", dirty, want)
		}
	}
}
