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

// BenchmarkPopVsPull consumes the same backlog (4096 messages of 1 KiB,
// one queue) by pop (Receive 32 + AckBatch of the 32 handles), by pull
// (Pull 32 as views of the store, as the server asks for them, +
// UpdateConsumerOffset) and by pull decoding each message as pop does
// (record.Decode: the copy pop hands its caller), with a
// new group each time, and reports the rates in messages per second of
// the process's CPU time (the machine may be shared: wall time would
// measure the other processes) and pop's ratio to each pull, as
// min/median/max over the iterations (each iteration runs all three, so
// they share the machine's state):
//
//	go test ./broker -run '^$' -bench PopVsPull -benchtime 25x
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
	const backlog, batch = 4096, 32
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
				handles = append(handles, m.Handle.String())
			}
			for _, err := range br.Pop().AckBatch(ctx, group, "T", handles) {
				if err != nil {
					b.Fatal(err)
				}
			}
			n += len(ms)
		}
	}
	var pullRates, decRates, popRates, ratios, decRatios []float64
	// Each measurement consumes the backlog with groupsPerRun new groups
	// (tens of ms of CPU), after a GC so that none pays another's debt.
	const groupsPerRun = 8
	rate := func(f func(string) int, group string) float64 {
		// The groups exist beforehand, as a steady consumer's does (their
		// auto-creation rewrites the group table, a cost of neither path).
		for g := range groupsPerRun {
			if err := br.Groups().Update(config.NewSubscriptionGroupConfig(fmt.Sprint(group, "-", g))); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		start := cpuTime(b)
		for g := range groupsPerRun {
			if n := f(fmt.Sprint(group, "-", g)); n != backlog {
				b.Fatalf("%s consumed %d of %d", group, n, backlog)
			}
		}
		return groupsPerRun * backlog / (cpuTime(b) - start).Seconds()
	}
	// Warm up: the first writes of pop make the store prepare its next
	// CommitLog file, a one-off cost that is no pop's.
	pullAll("warm-pull", true)
	popAll("warm-pop")
	i := 0
	for b.Loop() {
		pl := rate(func(g string) int { return pullAll(g, false) }, fmt.Sprint("pull", i))
		pd := rate(func(g string) int { return pullAll(g, true) }, fmt.Sprint("pulldecode", i))
		pp := rate(popAll, fmt.Sprint("pop", i))
		pullRates, decRates, popRates = append(pullRates, pl), append(decRates, pd), append(popRates, pp)
		ratios, decRatios = append(ratios, pp/pl), append(decRatios, pp/pd)
		i++
	}
	for _, s := range []struct {
		name string
		v    []float64
	}{{"pull-msgs/cpu-s", pullRates}, {"pulldecode-msgs/cpu-s", decRates}, {"pop-msgs/cpu-s", popRates},
		{"pop/pull", ratios}, {"pop/pulldecode", decRatios}} {
		slices.Sort(s.v)
		b.ReportMetric(s.v[0], "min-"+s.name)
		b.ReportMetric(s.v[len(s.v)/2], "median-"+s.name)
		b.ReportMetric(s.v[len(s.v)-1], "max-"+s.name)
	}
}

// cpuTime is the CPU time the process has used (user + system).
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
