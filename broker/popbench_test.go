package broker_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/backend/mmap"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/broker/pop"
	"github.com/rocketstore/rocketstore/record"
)

// popBenchCPU is the process CPU time of each measurement of
// BenchmarkPopVsPull.
const popBenchCPU = time.Second

// BenchmarkPopVsPull consumes the same backlog (16384 messages of 1 KiB,
// one queue, 32 messages a call on every path) by pop (Receive 32 +
// AckBatch of the 32 receipt handles' texts, as a client sends them
// back, a new group each pass, since a pop group
// cannot go back; the groups are made before the measurement), by pull (Pull 32 as views of the store, as the server
// asks for them, + UpdateConsumerOffset, a pass from offset 0 with each of
// 8 existing groups in turn) and by pull decoding each message into the
// copy pop hands its caller (record.Decode, message by message; pop
// makes the same copies a batch at a time, record.Batch). Each measurement
// consumes whole passes until popBenchCPU of process CPU time has gone
// (the machine may be shared: wall time would measure the other
// processes), after a GC so that none pays another's debt, and gives a
// rate in messages per CPU-second. Each iteration measures the three in
// turn, starting with a different one each time (so that none always
// follows the same other), after one warm-up measurement of each; the
// rates and pop's ratio to each pull of the same iteration are reported
// as min/median/max over the iterations:
//
//	go test ./broker -run '^$' -bench PopVsPull -benchtime 7x
func BenchmarkPopVsPull(b *testing.B) {
	ctx := context.Background()
	cfg := testConfig()
	cfg.Store.CommitLogFileSize = 64 << 20
	cfg.Store.ConsumeQueueUnits = 1 << 16
	// The store on real files (mmap), as the server runs it: memfs
	// charges a new file's zeroing at Go speed to whoever writes.
	fs, err := mmap.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	br, err := broker.Open(fs, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = br.Close() })
	createTopic(b, br, "T", 1)
	const backlog, batch, pullGroups = 16384, 32, 8
	body := make([]byte, 1024)
	for range backlog {
		r := br.SendMessage(ctx, &broker.SendRequest{ProducerGroup: "PG", Topic: "T", DefaultTopic: "TBW102",
			DefaultTopicQueueNums: 4, QueueID: 0, Properties: "TAGS\x01A\x02KEYS\x01k\x02", Body: body})
		if r.Code != broker.Success {
			b.Fatal(r.Code, r.Remark)
		}
	}
	if err := br.Store().WaitDispatched(ctx, br.Store().CommitLog().MaxOffset()); err != nil {
		b.Fatal(err)
	}
	// The groups exist beforehand, as a steady consumer's does (their
	// auto-creation rewrites the group table, a cost of neither path).
	newGroup := func(name string) {
		if err := br.Groups().Update(config.NewSubscriptionGroupConfig(name)); err != nil {
			b.Fatal(err)
		}
	}
	for _, kind := range []string{"pull", "pulldecode"} {
		for g := range pullGroups {
			newGroup(fmt.Sprint(kind, "-", g))
		}
	}
	pullAll := func(group string, decode bool) int {
		n := 0
		for off := int64(0); off < backlog; {
			resp, err := br.Pull(ctx, &broker.PullRequest{ConsumerGroup: group, Topic: "T", QueueOffset: off,
				MaxMsgNums: batch, SysFlag: broker.FlagSubscription, Subscription: "*", ExpressionType: "TAG", Views: true})
			if err != nil || resp.Code != broker.Success || len(resp.Records) != resp.MsgCount {
				b.Fatal(err, resp.Code, len(resp.Records), resp.MsgCount)
			}
			n += int(resp.MsgCount)
			if decode {
				for _, rec := range resp.Records {
					if _, err := record.Decode(rec, -1, false); err != nil {
						b.Fatal(err)
					}
				}
			}
			off = resp.NextBeginOffset
			resp.Release()
			if code, remark := br.UpdateConsumerOffset("bench", group, "T", 0, off); code != broker.Success {
				b.Fatal(code, remark)
			}
		}
		return n
	}
	popAll := func(group string) int {
		n := 0
		handles := make([]string, 0, batch)
		for {
			ms, err := br.Pop().Receive(ctx, pop.ReceiveRequest{Group: group, Topic: "T", QueueID: 0, Max: batch,
				InvisibleTime: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			if len(ms) == 0 {
				return n
			}
			handles = handles[:0]
			for _, m := range ms {
				handles = append(handles, m.ReceiptHandle())
			}
			for _, err := range br.Pop().AckBatch(ctx, group, "T", handles) {
				if err != nil {
					b.Fatal(err)
				}
			}
			n += len(ms)
		}
	}
	type consumer struct {
		name   string
		passes int
		pass   func(i int) int // consumes the backlog once, the i-th time
		// prepare, if set, makes the groups of the passes before to.
		prepare func(to int)
		rates   []float64
	}
	popGroups := 0 // made: pop-0 up to pop-(popGroups-1)
	cs := []*consumer{
		{name: "pull", pass: func(i int) int { return pullAll(fmt.Sprint("pull-", i%pullGroups), false) }},
		{name: "pulldecode", pass: func(i int) int { return pullAll(fmt.Sprint("pulldecode-", i%pullGroups), true) }},
		{name: "pop", pass: func(i int) int { return popAll(fmt.Sprint("pop-", i)) },
			prepare: func(to int) {
				for ; popGroups < to; popGroups++ {
					newGroup(fmt.Sprint("pop-", popGroups))
				}
			}},
	}
	// popPassesAhead is more passes than a measurement of pop makes
	// (about 20 at 330,000 messages per CPU-second); should one make
	// more, the extra groups are auto-created in the measurement.
	const popPassesAhead = 64
	measure := func(c *consumer) float64 {
		if c.prepare != nil {
			c.prepare(c.passes + popPassesAhead)
		}
		runtime.GC()
		start := cpuTime(b)
		n := 0
		for {
			if got := c.pass(c.passes); got != backlog {
				b.Fatalf("%s consumed %d of %d", c.name, got, backlog)
			}
			c.passes++
			n += backlog
			if d := cpuTime(b) - start; d >= popBenchCPU {
				return float64(n) / d.Seconds()
			}
		}
	}
	// Warm up: the first writes of pop make the store prepare its next
	// CommitLog file, a one-off cost that is no pop's.
	for _, c := range cs {
		measure(c)
	}
	var ratios, decRatios []float64
	i := 0
	for b.Loop() {
		rate := map[string]float64{}
		for k := range cs {
			c := cs[(i+k)%len(cs)]
			rate[c.name] = measure(c)
			c.rates = append(c.rates, rate[c.name])
		}
		ratios, decRatios = append(ratios, rate["pop"]/rate["pull"]), append(decRatios, rate["pop"]/rate["pulldecode"])
		i++
	}
	report := func(name string, v []float64) {
		slices.Sort(v)
		b.ReportMetric(v[0], "min-"+name)
		b.ReportMetric(v[len(v)/2], "median-"+name)
		b.ReportMetric(v[len(v)-1], "max-"+name)
	}
	for _, c := range cs {
		report(c.name+"-msgs/cpu-s", c.rates)
	}
	report("pop/pull", ratios)
	report("pop/pulldecode", decRatios)
}

// cpuTime is the CPU time the process has used (user + system).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
