package server

import (
	"errors"
	"strings"

	"github.com/rocketstore/rocketstore/broker/config"
	"github.com/rocketstore/rocketstore/remoting"
)

// topicFilterTypes is TopicFilterType by ordinal.
var topicFilterTypes = []string{"SINGLE_TAG", "MULTI_TAG"}

// Bounds on one registration body.
const maxTopicsPerRegistration = 1 << 20

// registerBody is RegisterBrokerBody (or, from brokers before 3.0.11, a
// bare TopicConfigSerializeWrapper), decoded.
type registerBody struct {
	topics      map[string]config.TopicConfig // nil: no topic table sent
	dataVersion config.DataVersion
}

// parseRegisterBody decodes a REGISTER_BROKER body. An empty body carries
// no topic table (the Java name server accepts it the same way).
func parseRegisterBody(body []byte) (registerBody, error) {
	var rb registerBody
	if len(body) == 0 {
		return rb, nil
	}
	d, root, err := decodeObject("register broker body", body)
	if err != nil {
		return rb, err
	}
	wrapper := root
	if w, ok := root.object("topicConfigSerializeWrapper"); ok {
		wrapper = w
	} else if !root.has("topicConfigTable") {
		return rb, d.err
	}
	if dv, ok := wrapper.object("dataVersion"); ok {
		rb.dataVersion = parseDataVersion(dv)
	}
	names, tcs := wrapper.entries("topicConfigTable", maxTopicsPerRegistration)
	rb.topics = make(map[string]config.TopicConfig, len(names))
	for i, name := range names {
		tc := parseTopicConfig(tcs[i], name)
		if d.err == nil {
			if err := config.ValidateTopicConfig(tc); err != nil {
				d.fail(tcs[i].path, tcs[i].m, err.Error())
			}
		}
		rb.topics[tc.TopicName] = tc
	}
	return rb, d.err
}

// parseDataVersion decodes a DataVersion object.
func parseDataVersion(o jobj) config.DataVersion {
	return config.DataVersion{Counter: o.int("counter", 64, 0), Timestamp: o.int("timestamp", 64, 0)}
}

// parseTopicConfig decodes a TopicConfig object with Java's defaults for
// absent fields; name is the table key, used when topicName is absent.
func parseTopicConfig(o jobj, name string) config.TopicConfig {
	tc := config.NewTopicConfig(name)
	if o.has("topicName") {
		tc.TopicName = o.str("topicName")
	}
	tc.ReadQueueNums = int(o.int("readQueueNums", 32, int64(tc.ReadQueueNums)))
	tc.WriteQueueNums = int(o.int("writeQueueNums", 32, int64(tc.WriteQueueNums)))
	tc.Perm = int(o.int("perm", 32, int64(tc.Perm)))
	tc.TopicFilterType = topicFilterTypes[o.enum("topicFilterType", topicFilterTypes, 0)]
	tc.TopicSysFlag = int(o.int("topicSysFlag", 32, 0))
	tc.Order = o.boolean("order", false)
	return tc
}

// refuse answers a request the server cannot use with SYSTEM_ERROR and
// logs it at WARN with the field and value, so that an incompatible
// client is found from the server's log.
func (s *Server) refuse(req *remoting.RemotingCommand, c *remoting.Conn, err error) (*remoting.RemotingCommand, error) {
	if errors.Is(err, remoting.ErrBadField) || errors.Is(err, remoting.ErrMissingField) {
		return badRequest(req, err) // logged by warnHeaderRefused
	}
	attrs := []any{"code", req.Code, "remote", peerString(c), "err", err.Error()}
	if fe := asFieldError(err); fe != nil {
		attrs = append(attrs, "body", fe.Body, "field", fe.Field, "value", fe.Value)
	}
	s.log.Warn("request refused", attrs...)
	return badRequest(req, err)
}

// warnHeaderRefused logs at WARN an answer that refused a header field
// (every handler answers those with the remoting package's field error,
// which names the field and its value), so that a client that writes a
// header differently is found from the server's log.
func (s *Server) warnHeaderRefused(c *remoting.Conn, req *remoting.RemotingCommand, resp *remoting.RemotingCommand) {
	for _, sentinel := range []error{remoting.ErrBadField, remoting.ErrMissingField} {
		if strings.HasPrefix(resp.Remark, sentinel.Error()) {
			s.log.Warn("request refused: header field", "code", req.Code, "language", req.Language.String(),
				"remote", peerString(c), "err", resp.Remark)
			return
		}
	}
}
