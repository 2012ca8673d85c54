package server

import (
	"strconv"

	"github.com/rocketstore/rocketstore/remoting"
)

// Ext fields every send response carries in RocketMQ 4.9
// (MessageConst.PROPERTY_MSG_REGION and PROPERTY_TRACE_SWITCH). The Go
// client writes producer trace records only when TRACE_ON is present and
// not "false".
const (
	extMsgRegion   = "MSG_REGION"
	extTraceSwitch = "TRACE_ON"
)

// withTraceSwitch adds MSG_REGION (regionId) and TRACE_ON (traceOn) to a
// send or reply response, as SendMessageProcessor and
// ReplyMessageProcessor do before any check, so failures carry them too.
func (s *Server) withTraceSwitch(resp *remoting.RemotingCommand) *remoting.RemotingCommand {
	region, on := s.b.TraceSwitch()
	resp.SetExt(extMsgRegion, region)
	resp.SetExt(extTraceSwitch, strconv.FormatBool(on))
	return resp
}
