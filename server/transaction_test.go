package server_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/record"
	"github.com/rocketstore/rocketstore/remoting"
	"github.com/rocketstore/rocketstore/server"
)

func TestTransactionOverRemoting(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.UnixMilli(1_700_000_000_000))
	e := newEnv(t, func(bc *broker.Config, _ *server.Config) {
		bc.Store.Clock = clock
		bc.Transaction.CheckInterval = time.Hour // checks run when the test asks
	})
	checks := make(chan *remoting.RemotingCommand, 4)
	producer := e.dial(remoting.HandlerFunc(func(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
		if req.Code == remoting.CodeCheckTransactionState {
			checks <- req
		}
		return nil, nil
	}))
	t.Cleanup(func() { _ = producer.Close() })
	producerHeartbeat(t, producer, "prod-1", "TXG")

	half := func(body string) *remoting.RemotingCommand {
		resp := call(t, producer, remoting.CodeSendMessage, []byte(body), "producerGroup", "TXG", "topic", "TX",
			"defaultTopic", "TBW102", "defaultTopicQueueNums", "4", "queueId", "0", "sysFlag", "4",
			"bornTimestamp", strconv.FormatInt(clock.Now().UnixMilli(), 10), "flag", "0",
			"properties", props("TRAN_MSG", "true", "PGROUP", "TXG", "UNIQ_KEY", "u-"+body))
		wantCode(t, resp, remoting.CodeSuccess)
		return resp
	}
	end := func(resp *remoting.RemotingCommand, how string, extra ...string) *remoting.RemotingCommand {
		_, off, err := record.ParseOffsetMsgID(resp.ExtFields["msgId"])
		if err != nil {
			t.Fatal(err)
		}
		kv := append([]string{"producerGroup", "TXG", "tranStateTableOffset", resp.ExtFields["queueOffset"],
			"commitLogOffset", strconv.FormatInt(off, 10), "commitOrRollback", how, "fromTransactionCheck", "false",
			"msgId", "m", "transactionId", "x"}, extra...)
		return call(t, producer, remoting.CodeEndTransaction, nil, kv...)
	}
	a, b := half("a"), half("b")
	if a.ExtFields["queueId"] != "0" {
		t.Fatalf("half response: %v", a.ExtFields)
	}
	wantCode(t, end(a, "8"), remoting.CodeSuccess)
	wantCode(t, end(b, "12"), remoting.CodeSuccess)
	waitDispatched(t, e.b, "TX", 0, 1)
	// Bad input: an unknown offset, a wrong group.
	resp := call(t, producer, remoting.CodeEndTransaction, nil, "producerGroup", "TXG", "tranStateTableOffset", "0",
		"commitLogOffset", "99999999", "commitOrRollback", "8")
	wantCode(t, resp, remoting.CodeSystemError)
	if resp.Remark != "Find prepared transaction message failed" {
		t.Fatalf("remark %q", resp.Remark)
	}
	wantCode(t, end(a, "8", "producerGroup", "other"), remoting.CodeSystemError)
	wantCode(t, call(t, producer, remoting.CodeEndTransaction, nil, "commitOrRollback", "8"), remoting.CodeSystemError)

	// Unknown → checked back after transactionTimeOut → committed.
	c := half("c")
	_ = c
	clock.Advance(7 * time.Second)
	if rep, err := e.b.CheckTransactions(context.Background()); err != nil || rep.Checked != 1 {
		t.Fatal(rep, err)
	}
	var chk *remoting.RemotingCommand
	select {
	case chk = <-checks:
	case <-time.After(5 * time.Second):
		t.Fatal("no CHECK_TRANSACTION_STATE")
	}
	if chk.ExtFields["msgId"] != "u-c" || chk.ExtFields["transactionId"] != "u-c" {
		t.Fatalf("check header %v", chk.ExtFields)
	}
	clo, _ := strconv.ParseInt(chk.ExtFields["commitLogOffset"], 10, 64)
	m, err := record.Decode(chk.Body, clo, true)
	if err != nil || string(m.Body) != "c" || strconv.FormatInt(m.CommitLogOffset, 10) != chk.ExtFields["commitLogOffset"] {
		t.Fatalf("check body: %+v %v", m, err)
	}
	wantCode(t, call(t, producer, remoting.CodeEndTransaction, nil, "producerGroup", "TXG",
		"tranStateTableOffset", chk.ExtFields["tranStateTableOffset"], "commitLogOffset", chk.ExtFields["commitLogOffset"],
		"commitOrRollback", "8", "fromTransactionCheck", "true"), remoting.CodeSuccess)
	waitDispatched(t, e.b, "TX", 0, 2)
	if n := e.b.PendingTransactions(); n != 0 {
		t.Fatalf("%d open", n)
	}
	// rejectTransactionMessage refuses half messages.
	r := newEnv(t, func(bc *broker.Config, _ *server.Config) { bc.Transaction.Reject = true })
	wantCode(t, r.send("TX", 0, "x", props("TRAN_MSG", "true", "PGROUP", "TXG")), remoting.CodeNoPermission)
}
