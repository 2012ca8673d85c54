package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/cluster"
	"github.com/rocketstore/rocketstore/console"
	"github.com/rocketstore/rocketstore/console/internal/consoletest"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/server"
)

// chromium finds the browser; the test fails (not skips) without one,
// since CI installs it.
func chromium(t *testing.T) string {
	for _, name := range []string{os.Getenv("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium found: apt-get install -y chromium (or set CHROMIUM)")
	return ""
}

// fixture is a server with data and the console in front of it.
type fixture struct {
	n   *server.Node
	url string
	adm *admin.Client
}

// replication is the replicated group the console shows on its
// replication page: a leader, a follower behind it, and a member down.
func replication(context.Context) (cluster.GroupInfo, []cluster.MemberStatus, error) {
	return cluster.GroupInfo{GroupID: "3f2a", BrokerName: "broker-a", Leader: "127.0.0.1:7001"}, []cluster.MemberStatus{
		{ID: "n1", Addr: "127.0.0.1:7001", Role: "leader", Health: "ok",
			Status: &cluster.Status{State: "Leader", Term: 3, AppliedIndex: 1200, AppliedOffset: 65536, ElectionsWon: 1, Repaired: 0}},
		{ID: "n2", Addr: "127.0.0.1:7002", Role: "follower", Health: "ok", LagEntries: 17, LagBytes: 4096,
			Status: &cluster.Status{State: "Follower", Term: 3, AppliedIndex: 1183, AppliedOffset: 61440, LastContactMs: 40,
				SnapshotInstalls: 1, Repaired: 2, ScrubRuns: 30, ScrubbedBytes: 61440}},
		{ID: "n3", Addr: "127.0.0.1:7003", Role: "follower", Health: "unreachable: dial tcp 127.0.0.1:7003: connect: connection refused"},
	}, nil
}

func newFixture(t *testing.T) *fixture {
	ce := consoletest.Start(t, consoletest.Config{CommitLogFileSize: 4 << 20, Console: console.Config{Replication: replication}})
	f := &fixture{n: ce.Node, url: ce.HTTP.URL + "/", adm: ce.Admin}
	f.seed(t)
	return f
}

// seed puts real data in: an Orders topic with 40 messages consumed in
// part by Billing (which has a retry topic), and a dead letter of Payers.
func (f *fixture) seed(t *testing.T) {
	ctx := context.Background()
	for _, tp := range []string{"Orders", "Pay", "%DLQ%Payers"} {
		if err := f.adm.CreateTopic(ctx, f.n.BrokerAddr, admin.TopicConfig{TopicName: tp, ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 40 {
		m := &record.Message{Topic: "Orders", QueueID: int32(i % 4), Body: []byte(`{"order":` + string(rune('0'+i%10)) + `}`),
			Properties: map[string]string{"TAGS": "created", "KEYS": "order-" + string(rune('a'+i%26)), "UNIQ_KEY": "U" + string(rune('A'+i%26))}}
		if _, err := f.adm.SendMessage(ctx, f.n.BrokerAddr, "P", m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.adm.SendMessage(ctx, f.n.BrokerAddr, "P", &record.Message{Topic: "%DLQ%Payers", Body: []byte("poison pill"),
		Properties: map[string]string{"RETRY_TOPIC": "Pay", "KEYS": "pay-1"}}); err != nil {
		t.Fatal(err)
	}
	for q := range int32(4) {
		waitFor(t, func() bool { return f.n.Broker.Store().MaxOffsetInQueue("Orders", q) == 10 })
		if err := f.adm.UpdateConsumerOffset(ctx, f.n.BrokerAddr, "Billing", "Orders", q, 7); err != nil {
			t.Fatal(err)
		}
	}
	// Billing's retry topic, as a push consumer's broker makes it: the
	// reset form must still offer Orders first.
	if err := f.adm.CreateTopic(ctx, f.n.BrokerAddr, admin.TopicConfig{TopicName: "%RETRY%Billing", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}); err != nil {
		t.Fatal(err)
	}
	if err := f.adm.UpdateConsumerOffset(ctx, f.n.BrokerAddr, "Billing", "%RETRY%Billing", 0, 0); err != nil {
		t.Fatal(err)
	}
}

// traffic sends to Clicks, and Analytics pulls them and commits its
// offset, until stop.
func (f *fixture) traffic(t *testing.T) (stop func()) {
	ctx := context.Background()
	if err := f.adm.CreateTopic(ctx, f.n.BrokerAddr, admin.TopicConfig{TopicName: "Clicks", ReadQueueNums: 1, WriteQueueNums: 1, Perm: 6}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		var next int64
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-time.After(time.Duration(20+i%30) * time.Millisecond):
			}
			_, _ = f.adm.SendMessage(ctx, f.n.BrokerAddr, "P", &record.Message{Topic: "Clicks", Body: []byte("click"),
				Properties: map[string]string{"TAGS": "web"}})
			if i%3 == 0 {
				// Analytics reads what arrived and commits its offset.
				if r, err := f.adm.Pull(ctx, f.n.BrokerAddr, "Analytics", "Clicks", 0, next, 32); err == nil && r.Status == "FOUND" {
					next = r.NextBeginOffset
				}
				_ = f.adm.UpdateConsumerOffset(ctx, f.n.BrokerAddr, "Analytics", "Clicks", 0, next)
			}
		}
	}()
	return func() { close(done); <-finished }
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func browser(t *testing.T) (context.Context, context.CancelFunc) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // CI runs as root
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 860),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	return ctx, func() { cancelTimeout(); cancelCtx(); cancelAlloc() }
}

// shot saves a screenshot when ROCKETSTORE_SCREENSHOTS names a directory.
func shot(name string) chromedp.Action[chromedp.Void] {
	dir := os.Getenv("ROCKETSTORE_SCREENSHOTS")
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		if dir == "" {
			return nil
		}
		png, err := chromedp.FullScreenshot(100)(ctx, t)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
	})
}

// waitText waits until sel's text contains want.
func waitText(sel, want string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for {
			got, err := chromedp.Text(chromedp.CSS(sel))(ctx, t)
			if err == nil && strings.Contains(got, want) {
				return nil
			}
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
}

func TestConsoleInBrowser(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := browser(t)
	defer cancel()
	run := func(step string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, actions...); err != nil {
			ectx, cancel := context.WithTimeout(ctx, time.Second)
			errText, _ := chromedp.Run(ectx, chromedp.TextContent(chromedp.CSS("#error")))
			cancel()
			t.Fatalf("%s: %v (page error: %q)", step, err, errText)
		}
	}

	// Traffic for the live charts: a producer and a consumer group on
	// Clicks while the cluster page samples.
	stop := f.traffic(t)
	// Every page loads against real data.
	// The console samples the cluster by itself: a page opened after a
	// few seconds of traffic draws them at once, from its first answer.
	run("traffic before the page opens", chromedp.Sleep(4*time.Second))
	run("cluster page",
		chromedp.Navigate(f.url+"#/cluster"),
		waitText("#brokers td.version", "V4_9_4"),
		waitText("#brokers", f.n.BrokerAddr),
		chromedp.WaitVisible(chromedp.CSS("#chart-put")),
		waitText("#rate-put", "msg/s"))
	points, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#chart-put").dataset.points`))
	if n, _ := strconv.Atoi(points); err != nil || n < 3 {
		t.Errorf("the produce chart has %q points at page load (%v), want the sampled history", points, err)
	}
	run("a few more samples", chromedp.Sleep(2*time.Second), shot("console-cluster"))
	for _, id := range []string{"#rate-put", "#rate-get"} {
		r, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(id)))
		if err != nil || !strings.HasSuffix(r, " msg/s") || r == "0.0 msg/s" {
			t.Errorf("%s shows %q (%v) under traffic", id, r, err)
		}
	}
	stop()
	run("replication page",
		chromedp.Navigate(f.url+"#/replication"),
		waitText("#replication-group", "leader 127.0.0.1:7001"),
		waitText(`#members tr[data-node="n1"] .role`, "leader"),
		waitText(`#members tr[data-node="n2"] .lag`, "17"),
		waitText(`#members tr[data-node="n2"] .repaired`, "2"),
		waitText(`#members tr[data-node="n3"] .health`, "unreachable"),
		shot("console-replication"))
	run("topics page",
		chromedp.Navigate(f.url+"#/topics"),
		waitText("#topics", "Orders"),
		waitText("#topics", "%DLQ%Payers"),
		waitText(`tr[data-topic="Orders"] td.perm`, "read+write"),
		shot("console-topics"))
	run("topic page",
		chromedp.Navigate(f.url+"#/topic/Orders"),
		waitText("#queues tbody", "10"),
		waitText("#topic-timers", "0"),
		waitText("#topic-groups", "Billing"))
	run("groups page",
		chromedp.Navigate(f.url+"#/groups"),
		waitText("#groups", "Billing"),
		shot("console-groups"))
	run("group page",
		chromedp.Navigate(f.url+"#/group/Billing"),
		waitText("#group-lag", "12"),
		shot("console-group"))
	run("dead letters page",
		chromedp.Navigate(f.url+"#/dlq?group=Payers"),
		waitText("#dlq-messages", "poison pill"))

	// Create a topic → send a message → search it → reset an offset.
	run("create topic",
		chromedp.Navigate(f.url+"#/topics"),
		chromedp.WaitVisible(chromedp.CSS("#new-topic")),
		chromedp.SendKeys(chromedp.CSS("#new-topic"), "BrowserTopic"),
		chromedp.SetValue(chromedp.CSS("#new-read"), "2"),
		chromedp.SetValue(chromedp.CSS("#new-write"), "2"),
		chromedp.Click(chromedp.CSS("#create-topic")),
		waitText("#topic-name", "BrowserTopic"),
		waitText("#notice", "Topic BrowserTopic created"))
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#queues tbody tr").length`))
	if err != nil {
		t.Fatal(err)
	}
	if rows != 2 {
		t.Fatalf("BrowserTopic shows %d queues, want 2", rows)
	}
	if _, ok := f.n.Broker.Topics().Get("BrowserTopic"); !ok {
		t.Fatal("the broker has no BrowserTopic")
	}
	run("send a message",
		chromedp.Navigate(f.url+"#/messages?topic=BrowserTopic"),
		chromedp.WaitVisible(chromedp.CSS("#send-body")),
		chromedp.SendKeys(chromedp.CSS("#send-tags"), "hello"),
		chromedp.SendKeys(chromedp.CSS("#send-keys"), "browser-key-1"),
		chromedp.SendKeys(chromedp.CSS("#send-body"), "sent from the browser"),
		chromedp.Click(chromedp.CSS("#send-message")),
		waitText("#send-result", "sent:"))
	waitFor(t, func() bool { return f.n.Broker.Store().MaxOffsetInQueue("BrowserTopic", 0) == 1 })
	run("search it by key",
		chromedp.SetValue(chromedp.CSS("#search-topic"), "BrowserTopic"),
		chromedp.SendKeys(chromedp.CSS("#search-key"), "browser-key-1"),
		chromedp.Click(chromedp.CSS("#search")),
		waitText("#result-count", "1 message(s)"),
		waitText("#results", "sent from the browser"),
		shot("console-messages"))
	run("open it",
		chromedp.Click(chromedp.CSS("#results tbody a")),
		waitText("#message-body", "sent from the browser"),
		waitText("#properties", "browser-key-1"))
	run("search by time range",
		chromedp.Navigate(f.url+"#/messages"),
		chromedp.WaitVisible(chromedp.CSS("#search-topic")),
		chromedp.SendKeys(chromedp.CSS("#search-topic"), "Orders"),
		chromedp.SendKeys(chromedp.CSS("#search-begin"), time.Now().Add(-time.Hour).Format("2006-01-02T15:04")),
		chromedp.Click(chromedp.CSS("#search")),
		waitText("#result-count", "40 message(s)"),
		chromedp.Click(chromedp.CSS(`#results tr[data-msgid] a`)),
		waitText("#consumption", "Billing"),
		waitText("#consumption", "CONSUMED"),
		shot("console-message"),
		chromedp.NavigateBack())
	run("bad input is explained",
		chromedp.WaitVisible(chromedp.CSS("#search-begin")),
		chromedp.SetValue(chromedp.CSS("#search-topic"), "Orders"),
		chromedp.SetValue(chromedp.CSS("#search-begin"), "yesterday"),
		chromedp.Click(chromedp.CSS("#search")),
		waitText("#error", "is not a time: want YYYY-MM-DDThh:mm"))
	if ph, err := chromedp.Run(ctx, chromedp.AttributeValue(chromedp.CSS("#search-begin"), "placeholder")); err != nil || ph.Value != "YYYY-MM-DDThh:mm" {
		t.Errorf("the time field's placeholder is %q (%v), want YYYY-MM-DDThh:mm", ph.Value, err)
	}

	// Reset Billing on Orders to the start: lag 12 → 40, after confirming.
	run("reset offset (cancelled)",
		chromedp.Navigate(f.url+"#/group/Billing"),
		waitText("#group-lag", "12"),
		chromedp.SetValue(chromedp.CSS("#reset-time"), "start"),
		chromedp.Click(chromedp.CSS("#reset-offset")),
		waitText("#modal-text", "Reset the offsets of Billing on Orders"),
		chromedp.Click(chromedp.CSS("#modal-no")),
		chromedp.Sleep(200*time.Millisecond),
		waitText("#group-lag", "12"))
	if off := f.n.Broker.Offsets().Query("Billing", "Orders", 0); off != 7 {
		t.Fatalf("a cancelled reset moved the offset to %d", off)
	}
	run("reset offset (confirmed)",
		chromedp.Click(chromedp.CSS("#reset-offset")),
		waitText("#modal-text", "Reset the offsets"),
		chromedp.Click(chromedp.CSS("#modal-yes")),
		waitText("#notice", "reset"),
		waitText("#group-lag", "40"))
	if off := f.n.Broker.Offsets().Query("Billing", "Orders", 0); off != 0 {
		t.Fatalf("offset %d after the reset, want 0", off)
	}

	// Delete the new topic, after confirming.
	run("delete topic",
		chromedp.Navigate(f.url+"#/topics"),
		waitText("#topics", "BrowserTopic"),
		chromedp.Click(chromedp.CSS(`tr[data-topic="BrowserTopic"] button.delete-topic`)),
		waitText("#modal-text", "Delete topic BrowserTopic?"),
		chromedp.Click(chromedp.CSS("#modal-yes")),
		waitText("#notice", "Topic BrowserTopic deleted"))
	if _, ok := f.n.Broker.Topics().Get("BrowserTopic"); ok {
		t.Fatal("BrowserTopic still exists")
	}
	run("dead letters with resend",
		chromedp.Navigate(f.url+"#/dlq?group=Payers"),
		waitText("#dlq-messages", "poison pill"),
		shot("console-dlq"),
		chromedp.Click(chromedp.CSS("#dlq-messages button.resend")),
		chromedp.Click(chromedp.CSS("#modal-yes")),
		waitText("#notice", "Resent to Pay"))
}
