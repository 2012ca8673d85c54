package server

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rocketstore/rocketstore/broker/config"
)

// maxInflatedRegistration bounds a compressed registration body once
// inflated, so that a small hostile body cannot claim gigabytes.
const maxInflatedRegistration = 64 << 20

// parseCompressedRegisterBody decodes the body a Java 4.x broker sends with
// compressedRegister=true (RegisterBrokerBody.encode(true)): a zlib stream
// of
//
//	int32 len | DataVersion JSON
//	int32 topic count | count × (int32 len | "name read write perm filterType")
//	int32 len | filter server list JSON
//
// with big-endian lengths. TopicConfig.encode carries neither topicSysFlag
// nor order; they take their defaults, as in the Java name server.
func parseCompressedRegisterBody(body []byte) (registerBody, error) {
	var rb registerBody
	fail := func(reason string, args ...any) (registerBody, error) {
		return registerBody{}, &fieldError{Body: "compressed register broker body", Reason: fmt.Sprintf(reason, args...)}
	}
	zr, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return fail("not a zlib stream: %v", err)
	}
	r := &boundedReader{r: zr, left: maxInflatedRegistration}
	chunk := func(what string) ([]byte, error) {
		var n int32
		if err := binary.Read(r, binary.BigEndian, &n); err != nil {
			return nil, fmt.Errorf("%s length: %w", what, err)
		}
		if n < 0 || int64(n) > r.left {
			return nil, fmt.Errorf("%s length %d out of range", what, n)
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return b, nil
	}
	dvJSON, err := chunk("dataVersion")
	if err != nil {
		return fail("%v", err)
	}
	if rb.dataVersion, err = parseDataVersionBody(dvJSON); err != nil {
		return registerBody{}, err
	}
	var count int32
	if err := binary.Read(r, binary.BigEndian, &count); err != nil {
		return fail("topic count: %v", err)
	}
	if count < 0 || count > maxTopicsPerRegistration {
		return fail("topic count %d out of range", count)
	}
	rb.topics = make(map[string]config.TopicConfig, min(int(count), 1024))
	for i := range count {
		b, err := chunk("topic config")
		if err != nil {
			return fail("topic %d: %v", i, err)
		}
		tc, err := decodeTopicConfigLine(string(b))
		if err != nil {
			return fail("topic %d: %v", i, err)
		}
		rb.topics[tc.TopicName] = tc
	}
	if _, err := chunk("filterServerList"); err != nil {
		return fail("%v", err)
	}
	return rb, nil
}

// decodeTopicConfigLine reads TopicConfig.encode's "name read write perm
// filterType".
func decodeTopicConfigLine(s string) (config.TopicConfig, error) {
	f := strings.Split(s, " ")
	if len(f) != 5 {
		return config.TopicConfig{}, fmt.Errorf("topic config %q is not 5 space-separated fields", s)
	}
	tc := config.NewTopicConfig(f[0])
	for i, dst := range []*int{&tc.ReadQueueNums, &tc.WriteQueueNums, &tc.Perm} {
		v, err := strconv.ParseInt(f[i+1], 10, 32)
		if err != nil {
			return config.TopicConfig{}, fmt.Errorf("topic config %q: field %d is not an int32", s, i+2)
		}
		*dst = int(v)
	}
	if f[4] != "SINGLE_TAG" && f[4] != "MULTI_TAG" {
		return config.TopicConfig{}, fmt.Errorf("topic config %q: topicFilterType %q", s, f[4])
	}
	tc.TopicFilterType = f[4]
	if err := config.ValidateTopicConfig(tc); err != nil {
		return config.TopicConfig{}, err
	}
	return tc, nil
}

// boundedReader fails once more than left bytes were read.
type boundedReader struct {
	r    io.Reader
	left int64
}

var errInflatedTooLarge = errors.New("inflated body larger than the limit")

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errInflatedTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	return n, err
}
