package adminapi

import (
	"context"
	"fmt"

	"github.com/rocketstore/rocketstore/remoting"
)

// unsupportedAdminCodes are admin codes that RocketMQ 4.9's broker and name
// server themselves do not serve (they answer REQUEST_CODE_NOT_SUPPORTED);
// rocketstore answers the same code with the reason and what to use
// instead.
var unsupportedAdminCodes = map[int32]string{
	13:  "QUERY_BROKER_OFFSET (13) is not served by RocketMQ 4.x brokers either; use GET_MAX_OFFSET (30) per queue or GET_BROKER_RUNTIME_INFO (28) for commitLogMaxOffset",
	211: "RESET_CONSUMER_OFFSET_IN_CONSUMER (211) is not served by RocketMQ 4.x brokers; use INVOKE_BROKER_TO_RESET_OFFSET (222), which sends RESET_CONSUMER_CLIENT_OFFSET (220) to the group's clients",
	212: "RESET_CONSUMER_OFFSET_IN_BROKER (212) is not served by RocketMQ 4.x brokers; use INVOKE_BROKER_TO_RESET_OFFSET (222), or UPDATE_CONSUMER_OFFSET (15) per queue while the group is offline",
	214: "WHO_CONSUME_THE_MESSAGE (214) is not served by RocketMQ 4.x brokers; use QUERY_TOPIC_CONSUME_BY_WHO (300) and compare GET_CONSUME_STATS (208) offsets with the message's queue offset",
	217: "GET_KV_CONFIG_BY_VALUE (217) was removed from RocketMQ 4.x; use GET_KVLIST_BY_NAMESPACE (219)",
	218: "DELETE_KV_CONFIG_BY_VALUE (218) was removed from RocketMQ 4.x; use DELETE_KV_CONFIG (102)",
}

// Unsupported returns the handler of each admin code that RocketMQ 4.x
// does not serve either; the server routes them whatever its role.
func Unsupported() map[int32]HandlerFunc {
	m := make(map[int32]HandlerFunc, len(unsupportedAdminCodes))
	for code := range unsupportedAdminCodes {
		m[code] = unsupportedAdmin
	}
	return m
}

// unsupportedAdmin answers an admin code rocketstore does not serve.
func unsupportedAdmin(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	why, ok := unsupportedAdminCodes[req.Code]
	if !ok {
		why = fmt.Sprintf(" request type %d not supported", req.Code)
	}
	return req.NewResponse(remoting.CodeRequestCodeNotSupported, why), nil
}
