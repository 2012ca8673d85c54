package server

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/rocketstore/rocketstore/remoting"
)

// codeCheckClientConfig is CHECK_CLIENT_CONFIG, which the Java client
// sends when a push consumer starts.
const codeCheckClientConfig int32 = 46

// checkClientBody is CheckClientRequestBody.
type checkClientBody struct {
	ClientID         string `json:"clientId"`
	Group            string `json:"group"`
	SubscriptionData *struct {
		Topic          string `json:"topic"`
		SubString      string `json:"subString"`
		ExpressionType string `json:"expressionType"`
	} `json:"subscriptionData"`
}

// checkClientConfig answers CHECK_CLIENT_CONFIG (46): SUCCESS for a tag
// subscription or none; for SQL92, SYSTEM_ERROR when enablePropertyFilter
// is off and SUBSCRIPTION_PARSE_FAILED (23) with the reason when the
// expression does not compile (ClientManageProcessor.checkClientConfig).
func (s *Server) checkClientConfig(_ context.Context, _ *remoting.Conn, req *remoting.RemotingCommand) (*remoting.RemotingCommand, error) {
	var body checkClientBody
	if len(req.Body) > 0 {
		if err := json.Unmarshal(req.Body, &body); err != nil {
			return badRequest(req, fmt.Errorf("bad CheckClientRequestBody: %w", err))
		}
	}
	if sd := body.SubscriptionData; sd != nil {
		if code, remark := s.b.CheckClientConfig(sd.ExpressionType, sd.SubString); code != 0 {
			s.log.Warn("client filter does not compile", "clientId", body.ClientID, "group", body.Group,
				"topic", sd.Topic, "expression", sd.SubString, "err", remark)
			return reply(req, code, remark), nil
		}
	}
	return req.NewResponse(remoting.CodeSuccess, ""), nil
}
