package server

import (
	"testing"

	"github.com/rocketstore/rocketstore/acl"
	"github.com/rocketstore/rocketstore/remoting"
)

// FuzzACLReadsWhatTheBrokerReads: for any send header, the topic the ACL
// checks is the topic the send handler stores to, and the field the
// auto-creation rules read is the same one. A divergence would let a
// request name one topic to the check and another to the broker.
func FuzzACLReadsWhatTheBrokerReads(f *testing.F) {
	f.Add(int32(310), true, "T1", true, "T2", true, "T3")
	f.Add(int32(320), false, "", true, "T2", true, "T3")
	f.Add(int32(10), true, "T1", true, "T2", false, "")
	f.Fuzz(func(t *testing.T, code int32, hasA bool, a string, hasB bool, b string, hasTopic bool, topic string) {
		switch code % 3 {
		case 0:
			code = remoting.CodeSendMessage
		case 1:
			code = remoting.CodeSendMessageV2
		default:
			code = remoting.CodeSendBatchMessage
		}
		req := remoting.NewRequest(code, nil)
		if hasA {
			req.ExtFields["a"] = a
		}
		if hasB {
			req.ExtFields["b"] = b
		}
		if hasTopic {
			req.ExtFields["topic"] = topic
		}
		sr, _ := sendHeader(req)
		needs, err := acl.Needs(req)
		if err != nil {
			t.Fatal(err)
		}
		if sr.Topic == "" {
			if len(needs) != 0 {
				t.Fatalf("no topic for the broker, the ACL checks %v", needs)
			}
			return
		}
		if len(needs) != 1 {
			t.Fatalf("needs %v for topic %q", needs, sr.Topic)
		}
		n := needs[0]
		ok := n.Kind == acl.Topic && n.Name == sr.Topic ||
			n.Kind == acl.Group && (sr.Topic == "%RETRY%"+n.Name || sr.Topic == "%DLQ%"+n.Name)
		if !ok {
			t.Fatalf("ACL checks %v, the broker stores to topic %q (ext %v)", n, sr.Topic, req.ExtFields)
		}
		if tf, _ := sendTopicFields(req); req.ExtFields[tf] != sr.Topic {
			t.Fatalf("auto-creation reads %q=%q, the broker %q", tf, req.ExtFields[tf], sr.Topic)
		}
	})
}
