package broker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/broker/longpoll"
	"github.com/rocketstore/rocketstore/engine"
	"github.com/rocketstore/rocketstore/filter"
)

// PullRequest is PullMessageRequestHeader.
type PullRequest struct {
	ConsumerGroup string
	Topic         string
	QueueID       int32
	QueueOffset   int64
	MaxMsgNums    int32
	SysFlag       PullSysFlag
	// CommitOffset is committed when SysFlag has FlagCommitOffset.
	CommitOffset int64
	// SuspendTimeoutMillis is how long to hold a pull that finds nothing
	// (the client sends 15000).
	SuspendTimeoutMillis int64
	// Subscription and ExpressionType are used when SysFlag has
	// FlagSubscription; else the group's registered subscription is.
	Subscription   string
	SubVersion     int64
	ExpressionType string
	// ClientHost is the consumer's address, for logs.
	ClientHost string
	// Views asks for the found records as views of the store
	// (PullResponse.Records) instead of a copy in Body: a server writes
	// them to the socket from there. The caller must then call the
	// response's Release once it no longer reads them.
	Views bool
}

// PullResponse is the response to PULL_MESSAGE.
type PullResponse struct {
	Code                 ResponseCode
	Remark               string
	SuggestWhichBrokerID int64
	NextBeginOffset      int64
	MinOffset            int64
	MaxOffset            int64
	// Body is the found records, concatenated (Code Success only,
	// unless the request asked for Views).
	Body []byte
	// Records are the found records as views of the store, in queue
	// order (Code Success and PullRequest.Views only; Body is then nil).
	// They stay valid, even if retention deletes their CommitLog file
	// meanwhile, until Release.
	Records [][]byte
	// MsgCount is the number of records in Body or Records.
	MsgCount int
	// Status is the store's status, for logs and tests.
	Status engine.GetMessageStatus

	// held keeps Records' files mapped until Release.
	held *engine.GetMessageResult
}

// Release returns the store's files that Records read from; the views
// must not be used after it. It is a no-op on a response without
// Records, and on a second call.
func (r *PullResponse) Release() {
	if h := r.held; h != nil {
		r.held, r.Records = nil, nil
		h.Release()
	}
}

// Pull processes a pull (RocketMQ's PullMessageProcessor with
// brokerAllowSuspend = true). A pull that finds nothing and has
// FlagSuspend is held until a matching message arrives or its timeout
// passes, then processed again without suspension. It returns ctx's error
// if ctx ends while held, and ErrClosed if the broker closes.
func (b *Broker) Pull(ctx context.Context, req *PullRequest) (*PullResponse, error) {
	resp, held, err := b.StartPull(req)
	if held == nil {
		return resp, err
	}
	return held.Wait(ctx)
}

// StartPull is Pull's first pass, which never blocks: it returns the
// response, or, when the pull found nothing and may be held, a HeldPull to
// wait on (and a nil response). A server answers a pull that found
// messages at once and waits only for the others, off its request path.
func (b *Broker) StartPull(req *PullRequest) (*PullResponse, *HeldPull, error) {
	if b.closed.Load() {
		return nil, nil, ErrClosed
	}
	resp, filter := b.processPull(req, true)
	if filter == nil {
		return resp, nil, nil
	}
	return nil, &HeldPull{b: b, req: req, filter: filter}, nil
}

// HeldPull is a pull that found nothing and is to be held (StartPull).
type HeldPull struct {
	b      *Broker
	req    *PullRequest
	filter longpoll.Matcher
}

// Wait holds the pull until a matching message arrives or its suspend
// timeout passes, then processes it again without suspension. It returns
// ctx's error if ctx ends first, and ErrClosed if the broker closes.
func (h *HeldPull) Wait(ctx context.Context) (*PullResponse, error) {
	b, req := h.b, h.req
	if f := b.hooks.BeforeSuspend; f != nil {
		f()
	}
	timeout := time.Duration(req.SuspendTimeoutMillis) * time.Millisecond
	if b.cfg.ShortPolling {
		timeout = b.cfg.ShortPollingTime
	}
	maxOffset := func() int64 { return b.store.MaxOffsetInQueue(req.Topic, req.QueueID) }
	_, err := b.hold.Wait(ctx, req.Topic, req.QueueID, req.QueueOffset, h.filter, timeout, maxOffset)
	if errors.Is(err, longpoll.ErrClosed) {
		return nil, ErrClosed
	}
	if err != nil {
		return nil, err
	}
	resp, _ := b.processPull(req, false)
	return resp, nil
}

// processPull runs the checks and the read. When the pull should be held,
// it returns the filter to hold it with (and a nil response).
func (b *Broker) processPull(req *PullRequest, allowSuspend bool) (*PullResponse, longpoll.Matcher) {
	group, tf, resp := b.checkPull(req)
	if resp != nil {
		return resp, nil
	}
	res, err := b.store.GetMessage(req.Topic, req.QueueID, req.QueueOffset, int(req.MaxMsgNums), tf)
	if err != nil {
		return &PullResponse{Code: SystemError, Remark: "store getMessage failed: " + err.Error()}, nil
	}
	resp = b.pullResponse(req, group, res)
	b.stats.Got(req.Topic, req.ConsumerGroup, resp.MsgCount)
	if resp.Records != nil {
		resp.held = res // released by the caller (PullRequest.Views)
	} else {
		res.Release()
	}
	// Commit on the first pass only, even if the request is now held.
	if allowSuspend && req.SysFlag.Has(FlagCommitOffset) {
		b.offsets.Commit(req.ClientHost, req.ConsumerGroup, req.Topic, req.QueueID, req.CommitOffset)
	}
	if resp.Code == PullNotFound && allowSuspend && req.SysFlag.Has(FlagSuspend) {
		return nil, tf
	}
	return resp, nil
}

// checkPull applies PullMessageProcessor's checks in their order.
func (b *Broker) checkPull(req *PullRequest) (config.SubscriptionGroupConfig, pullFilter, *PullResponse) {
	var g config.SubscriptionGroupConfig
	fail := func(code ResponseCode, format string, args ...any) (config.SubscriptionGroupConfig, pullFilter, *PullResponse) {
		return g, nil, &PullResponse{Code: code, Remark: fmt.Sprintf(format, args...)}
	}
	if !config.IsReadable(b.cfg.BrokerPermission) {
		return fail(NoPermission, "the broker pulling message is forbidden")
	}
	g, ok, err := b.groups.Find(req.ConsumerGroup)
	if err != nil {
		return fail(SystemError, "subscription group %s: %v", req.ConsumerGroup, err)
	}
	if !ok {
		return fail(SubscriptionGroupNotExist, "subscription group [%s] does not exist", req.ConsumerGroup)
	}
	if !g.ConsumeEnable {
		return fail(NoPermission, "subscription group no permission, %s", req.ConsumerGroup)
	}
	tc, ok := b.topics.Get(req.Topic)
	if !ok {
		return fail(TopicNotExist, "topic[%s] not exist, apply first please!", req.Topic)
	}
	if !config.IsReadable(tc.Perm) {
		return fail(NoPermission, "the topic[%s] pulling message is forbidden", req.Topic)
	}
	if req.QueueID < 0 || int(req.QueueID) >= tc.ReadQueueNums {
		return fail(SystemError, "queueId[%d] is illegal, topic:[%s] topicConfig.readQueueNums:[%d]",
			req.QueueID, req.Topic, tc.ReadQueueNums)
	}
	sd, code, remark := b.subscription(req, g)
	if code != Success {
		return fail(code, "%s", remark)
	}
	if isSQLType(sd.ExpressionType) {
		sf, code, remark := b.sqlFilter(req, sd)
		if code != Success {
			return fail(code, "%s", remark)
		}
		return g, sf, nil
	}
	tf, err := filter.NewSubscriptionFilter(sd, filter.MatchHash)
	if err != nil {
		return fail(SubscriptionParseFailed, "parse the consumer's subscription failed: %v", err)
	}
	return g, tf, nil
}

// subscription takes the subscription from the request or from the
// group's registered one (step 7 of the checks).
func (b *Broker) subscription(req *PullRequest, g config.SubscriptionGroupConfig) (*filter.SubscriptionData, ResponseCode, string) {
	if req.SysFlag.Has(FlagSubscription) {
		if req.ExpressionType == filter.ExpressionTypeSQL92 {
			return &filter.SubscriptionData{Topic: req.Topic, SubString: req.Subscription, SubVersion: req.SubVersion,
				ExpressionType: req.ExpressionType}, Success, ""
		}
		if req.ExpressionType != "" && req.ExpressionType != filter.ExpressionTypeTag {
			return nil, SubscriptionParseFailed, "unknown expression type " + req.ExpressionType
		}
		sd, err := filter.BuildSubscriptionData(req.Topic, req.Subscription)
		if err != nil {
			return nil, SubscriptionParseFailed, "parse the consumer's subscription failed: " + err.Error()
		}
		return sd, Success, ""
	}
	model, sd, known := b.consumers.subscription(req.ConsumerGroup, req.Topic)
	if !known {
		return nil, SubscriptionNotExist, "the consumer's group info not exist"
	}
	if !g.ConsumeBroadcastEnable && model == Broadcasting {
		return nil, NoPermission, "the consumer group can not consume by broadcast way"
	}
	if sd == nil {
		return nil, SubscriptionNotExist, "the consumer's subscription not exist"
	}
	if sd.SubVersion < req.SubVersion {
		return nil, SubscriptionNotLatest, "the consumer's subscription not latest"
	}
	return sd, Success, ""
}

// pullResponse maps a GetMessageResult to the response (code, offsets,
// suggested broker, body).
func (b *Broker) pullResponse(req *PullRequest, g config.SubscriptionGroupConfig, res *engine.GetMessageResult) *PullResponse {
	resp := &PullResponse{NextBeginOffset: res.NextBeginOffset, MinOffset: res.MinOffset,
		MaxOffset: res.MaxOffset, Status: res.Status, SuggestWhichBrokerID: MasterID}
	if b.cfg.SlaveReadEnable {
		resp.SuggestWhichBrokerID = g.BrokerID
		if res.SuggestPullingFromSlave {
			resp.SuggestWhichBrokerID = g.WhichBrokerWhenConsumeSlowly
		}
	}
	resp.Code = statusCode(res.Status, req.QueueOffset)
	if resp.Code == PullOffsetMoved {
		// A master (offsetCheckInSlave is moot: there are no slaves)
		// keeps code 21 and tells the admin tools through the event topic.
		b.publishOffsetMoved(req, res.NextBeginOffset)
		b.logger.Info("the request offset moved", "group", req.ConsumerGroup, "topic", req.Topic,
			"queueId", req.QueueID, "requestOffset", req.QueueOffset, "newOffset", res.NextBeginOffset,
			"status", res.Status)
	}
	if resp.Code == Success && req.Views && len(res.Messages) > 0 {
		resp.Records = make([][]byte, len(res.Messages))
		for i, m := range res.Messages {
			resp.Records[i] = m.Record
		}
		resp.MsgCount = len(res.Messages)
	} else if resp.Code == Success {
		resp.Body = make([]byte, 0, res.BufferTotalSize)
		for _, m := range res.Messages {
			resp.Body = append(resp.Body, m.Record...)
		}
		resp.MsgCount = len(res.Messages)
	}
	return resp
}

// statusCode maps a GetMessageStatus to the pull response code.
func statusCode(s engine.GetMessageStatus, reqOffset int64) ResponseCode {
	switch s {
	case engine.Found:
		return Success
	case engine.MessageWasRemoving, engine.NoMatchedMessage:
		return PullRetryImmediately
	case engine.NoMatchedLogicQueue, engine.NoMessageInQueue:
		if reqOffset != 0 {
			return PullOffsetMoved
		}
		return PullNotFound
	case engine.OffsetFoundNull, engine.OffsetOverflowOne:
		return PullNotFound
	case engine.OffsetOverflowBadly, engine.OffsetTooSmall:
		return PullOffsetMoved
	}
	return SystemError
}
