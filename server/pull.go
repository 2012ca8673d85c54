package server

import (
	"context"
	"errors"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/remoting"
)

// maxPullBatch caps a pull's maxMsgNums (clients send 32; the store's
// transfer limits cap a result at 32 messages anyway).
const maxPullBatch = 1024

// pullHeader decodes PullMessageRequestHeader.
func (s *Server) pullHeader(req *remoting.RemotingCommand) (*broker.PullRequest, error) {
	f := req.Fields()
	pr := &broker.PullRequest{
		ConsumerGroup:        f.String("consumerGroup"),
		Topic:                f.String("topic"),
		QueueID:              f.Int32("queueId"),
		QueueOffset:          f.Int64("queueOffset"),
		MaxMsgNums:           f.Int32("maxMsgNums"),
		SysFlag:              broker.PullSysFlag(f.Int32("sysFlag")),
		CommitOffset:         f.Int64("commitOffset"),
		SuspendTimeoutMillis: f.Int64("suspendTimeoutMillis"),
		Subscription:         f.OptString("subscription", ""),
		SubVersion:           f.OptInt64("subVersion", 0),
		ExpressionType:       f.OptString("expressionType", ""),
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	// maxMsgNums <= 0 is passed on: getMessage then returns one message,
	// as RocketMQ 4.9's isTheBatchFull does (the Go client's pull consumer
	// sends 0 unless WithPullBatchSize is set).
	pr.MaxMsgNums = min(pr.MaxMsgNums, maxPullBatch)
	pr.SuspendTimeoutMillis = max(0, min(pr.SuspendTimeoutMillis, s.cfg.MaxSuspend.Milliseconds()))
	return pr, nil
}

// pullMessage answers PULL_MESSAGE (11). A pull that finds messages (or
// may not be held) is answered at once, on the request's worker. One that
// finds nothing and may be held (the SUSPEND flag) waits in its own
// goroutine and is answered later on the connection with the request's
// opaque; the handler returns at once so that held pulls never use up the
// connection's request slots.
func (s *Server) pullMessage(ctx context.Context, c *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	pr, err := s.pullHeader(req)
	if err != nil {
		return badRequest(req, err)
	}
	pr.ClientHost = peerString(c)
	pr.Views = true // the records go to the socket from the store (pullResponse)
	if pr.SysFlag.Has(broker.FlagSuspend) && !s.beginHeld(c) {
		// Shutting down, or this connection holds too many: answer now.
		pr.SysFlag &^= broker.FlagSuspend
	} else if pr.SysFlag.Has(broker.FlagSuspend) {
		resp, held, err := s.b.StartPull(pr)
		if held == nil {
			s.endHeld(c)
			return s.pullResponse(req, pr, resp, err), nil
		}
		go s.waitHeld(c, req, pr, held)
		return nil, nil
	}
	resp, err := s.b.Pull(ctx, pr)
	return s.pullResponse(req, pr, resp, err), nil
}

// waitHeld waits for a held pull (admitted by beginHeld) until an arrival,
// its timeout, the connection closing or Shutdown, and answers it.
func (s *Server) waitHeld(c *remoting.Conn, req *remoting.RemotingCommand, pr *broker.PullRequest, held *broker.HeldPull) {
	defer s.endHeld(c)
	pctx, cancel := context.WithCancel(c.Context())
	defer cancel()
	stop := context.AfterFunc(s.pullCtx, cancel)
	defer stop()
	resp, err := held.Wait(pctx)
	if c.Context().Err() != nil {
		if resp != nil {
			resp.Release()
		}
		return // nobody to answer
	}
	if err := c.WriteResponse(s.pullResponse(req, pr, resp, err)); err != nil {
		s.log.Debug("answer held pull", "err", err, "remote", peerString(c))
	}
}

// beginHeld admits one more held pull for c, unless the server is shutting
// down or c already holds MaxHeldPullsPerConn.
func (s *Server) beginHeld(c *remoting.Conn) bool {
	s.pullMu.Lock()
	defer s.pullMu.Unlock()
	if s.closing || s.heldByConn[c.ID()] >= s.cfg.MaxHeldPullsPerConn {
		return false
	}
	s.heldByConn[c.ID()]++
	s.pullWG.Add(1)
	return true
}

func (s *Server) endHeld(c *remoting.Conn) {
	s.pullMu.Lock()
	if s.heldByConn[c.ID()]--; s.heldByConn[c.ID()] <= 0 {
		delete(s.heldByConn, c.ID())
	}
	s.pullMu.Unlock()
	s.pullWG.Done()
}

// pullResponse builds the answer: the broker's code and remark, the four
// offsets the client parses and the records (BodyParts with a Release when
// the pull asked for views). A pull released by Shutdown
// or by the broker closing is answered SYSTEM_BUSY: the Go client then
// waits 3 s before pulling again, by which time it reconnects. (Answered
// PULL_NOT_FOUND it re-pulls at once on the closing connection, which is
// no longer read, and that pull hangs until the client's 30 s timeout.)
func (s *Server) pullResponse(req *remoting.RemotingCommand, pr *broker.PullRequest, r *broker.PullResponse, err error) *remoting.RemotingCommand {
	if err != nil {
		if !errors.Is(err, broker.ErrClosed) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			return req.NewResponse(remoting.CodeSystemError, err.Error())
		}
		r = &broker.PullResponse{Code: broker.SystemBusy, Remark: errShuttingDown.Error(),
			NextBeginOffset: pr.QueueOffset}
		if !errors.Is(err, broker.ErrClosed) {
			r.MinOffset = s.b.Store().MinOffsetInQueue(pr.Topic, pr.QueueID)
			r.MaxOffset = s.b.Store().MaxOffsetInQueue(pr.Topic, pr.QueueID)
		}
	}
	if s.metrics != nil {
		s.metrics.Pull(r.Code.String(), r.MsgCount)
	}
	resp := req.NewLeanResponse(int32(r.Code), r.Remark) // no extFields map
	resp.SetExtInt("suggestWhichBrokerId", r.SuggestWhichBrokerID)
	resp.SetExtInt("nextBeginOffset", r.NextBeginOffset)
	resp.SetExtInt("minOffset", r.MinOffset)
	resp.SetExtInt("maxOffset", r.MaxOffset)
	resp.Body = r.Body
	if r.Records != nil {
		// Written from the store's mapping by the connection's writer,
		// which releases the files once the frame is on the socket (or
		// dropped): a CommitLog file deleted meanwhile stays mapped
		// until then. Saves copying up to maxTransferBytes a pull.
		resp.BodyParts, resp.Release = r.Records, r.Release
	}
	return resp
}

// heldPulls returns the number of pulls the server holds now.
func (s *Server) heldPulls() int {
	s.pullMu.Lock()
	defer s.pullMu.Unlock()
	n := 0
	for _, v := range s.heldByConn {
		n += v
	}
	return n
}
