package server

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/rocketstore/rocketstore/remoting"
)

// A V2 header (one-letter names) decodes to the same SendRequest as the V1
// header with the long names, and a bad V2 field is reported with its long
// name too.
func TestSendHeaderV2MatchesV1(t *testing.T) {
	v1 := map[string]string{"producerGroup": "pg", "topic": "T", "defaultTopic": "TBW102", "defaultTopicQueueNums": "4",
		"queueId": "3", "sysFlag": "1", "bornTimestamp": "1732873384123", "flag": "7", "properties": "TAGS\x01a",
		"reconsumeTimes": "2", "unitMode": "true", "maxReconsumeTimes": "16"}
	v2 := map[string]string{}
	for i, n := range sendFields {
		v2[sendFieldsV2[i]] = v1[n]
	}
	body := []byte("body")
	a, err := sendHeader(&remoting.RemotingCommand{Code: remoting.CodeSendMessage, ExtFields: v1, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	b, err := sendHeader(&remoting.RemotingCommand{Code: remoting.CodeSendMessageV2, ExtFields: v2, Body: body})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) || a.Topic != "T" || a.MaxReconsumeTimes == nil || *a.MaxReconsumeTimes != 16 || !a.UnitMode {
		t.Fatalf("V1 %+v\nV2 %+v", a, b)
	}
	v2["e"] = "x"
	_, err = sendHeader(&remoting.RemotingCommand{Code: remoting.CodeSendMessageV2, ExtFields: v2})
	if !errors.Is(err, remoting.ErrBadField) || !strings.Contains(err.Error(), "e=queueId") {
		t.Fatalf("bad V2 queueId: %v", err)
	}
}
