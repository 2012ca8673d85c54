package server

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/remoting"
)

// sendFields are the names of SendMessageRequestHeader's fields, and
// sendFieldsV2 SendMessageRequestHeaderV2's one-letter names for the same
// fields (codes 310 and 320).
var (
	sendFields = [...]string{"producerGroup", "topic", "defaultTopic", "defaultTopicQueueNums", "queueId", "sysFlag",
		"bornTimestamp", "flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes"}
	sendFieldsV2 = [...]string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}
)

// Send header field indexes, in sendFields' order.
const (
	sfProducerGroup = iota
	sfTopic
	sfDefaultTopic
	sfDefaultTopicQueueNums
	sfQueueID
	sfSysFlag
	sfBornTimestamp
	sfFlag
	sfProperties
	sfReconsumeTimes
	sfUnitMode
	sfMaxReconsumeTimes
	sfBatch // not in sendFields: "batch", "m" in V2
	sendFieldCount
)

// sendField returns the index of a send header entry and whether its
// name is a V2 one-letter name, or -1. A switch on the name, not a search
// of the entries for each field: the send header is read once a message.
func sendField(name string) (int, bool) {
	switch name {
	case "producerGroup":
		return sfProducerGroup, false
	case "topic":
		return sfTopic, false
	case "defaultTopic":
		return sfDefaultTopic, false
	case "defaultTopicQueueNums":
		return sfDefaultTopicQueueNums, false
	case "queueId":
		return sfQueueID, false
	case "sysFlag":
		return sfSysFlag, false
	case "bornTimestamp":
		return sfBornTimestamp, false
	case "flag":
		return sfFlag, false
	case "properties":
		return sfProperties, false
	case "reconsumeTimes":
		return sfReconsumeTimes, false
	case "unitMode":
		return sfUnitMode, false
	case "maxReconsumeTimes":
		return sfMaxReconsumeTimes, false
	case "batch":
		return sfBatch, false
	}
	if len(name) == 1 {
		switch c := name[0]; {
		case c >= 'a' && c <= 'l':
			return int(c - 'a'), true
		case c == 'm':
			return sfBatch, true
		}
	}
	return -1, false
}

// sendValues are a send header's raw entries, read in one pass: the
// long-name set and the one-letter set apart, then one of them chosen.
type sendValues struct {
	code  int32
	v2    bool // the one-letter names apply
	names *[12]string
	set   int                       // the set chosen: 0 long, 1 one-letter
	vals  [2][sendFieldCount]string // by set, then field
	has   [2]uint32                 // by set; bit i: field i present
	err   error                     // the first missing or bad field
}

func (sv *sendValues) name(i int) string {
	if i == sfBatch {
		if sv.v2 {
			return "m"
		}
		return "batch"
	}
	return sv.names[i]
}

func (sv *sendValues) present(i int) bool { return sv.has[sv.set]&(1<<i) != 0 }

func (sv *sendValues) val(i int) string { return sv.vals[sv.set][i] }

func (sv *sendValues) keep(err error) {
	if sv.err == nil {
		sv.err = err
	}
}

// str returns required field i, as remoting.FieldReader.String would.
func (sv *sendValues) str(i int) string {
	if !sv.present(i) {
		sv.keep(fmt.Errorf("%w: %q (request code %d)", remoting.ErrMissingField, sv.name(i), sv.code))
	}
	return sv.val(i)
}

// int returns required field i as a decimal of bits bits.
func (sv *sendValues) int(i, bits int) int64 {
	if !sv.present(i) {
		sv.keep(fmt.Errorf("%w: %q (request code %d)", remoting.ErrMissingField, sv.name(i), sv.code))
		return 0
	}
	v, err := strconv.ParseInt(sv.val(i), 10, bits)
	if err != nil {
		sv.keep(fmt.Errorf("%w: %q = %q is not an int%d (request code %d)", remoting.ErrBadField, sv.name(i), sv.val(i), bits, sv.code))
		return 0
	}
	return v
}

// bool returns field i, def when absent; "true"/"false" in any case, "1" or "0".
func (sv *sendValues) bool(i int, def bool) bool {
	if !sv.present(i) {
		return def
	}
	v, err := strconv.ParseBool(strings.ToLower(sv.val(i)))
	if err != nil {
		sv.keep(fmt.Errorf("%w: %q = %q is not a bool (request code %d)", remoting.ErrBadField, sv.name(i), sv.val(i), sv.code))
	}
	return v
}

// readSendValues reads the send header's entries in one pass, keeping the
// long-name set and the one-letter set apart: a V2 request (code 310 or
// 320 with "a") is read under the one-letter names, any other under the
// long ones, whatever else the header holds.
func readSendValues(req *remoting.RemotingCommand, sv *sendValues) {
	for k, v := range req.EachExt {
		i, v2 := sendField(k)
		if i < 0 {
			continue
		}
		set := 0
		if v2 {
			set = 1
		}
		sv.vals[set][i] = v
		sv.has[set] |= 1 << i
	}
	sv.code, sv.names = req.Code, &sendFields
	if req.Code != remoting.CodeSendMessage && sv.has[1]&(1<<sfProducerGroup) != 0 {
		sv.set, sv.v2, sv.names = 1, true, &sendFieldsV2
	}
}

// sendHeader decodes a send request's header, V1 or V2, in one pass over
// its entries (no map, no search a field). Errors name the field as the
// header does, and a V2 error adds the long names.
func sendHeader(req *remoting.RemotingCommand) (*broker.SendRequest, error) {
	sr := new(broker.SendRequest)
	return sr, readSendHeader(req, sr)
}

// readSendHeader is sendHeader into the caller's request, which the send
// path keeps on its stack: one allocation less a message.
func readSendHeader(req *remoting.RemotingCommand, sr *broker.SendRequest) error {
	var sv sendValues
	readSendValues(req, &sv)
	*sr = broker.SendRequest{
		ProducerGroup:         sv.str(sfProducerGroup),
		Topic:                 sv.str(sfTopic),
		DefaultTopic:          sv.str(sfDefaultTopic),
		DefaultTopicQueueNums: int(int32(sv.int(sfDefaultTopicQueueNums, 32))),
		QueueID:               int32(sv.int(sfQueueID, 32)),
		SysFlag:               int32(sv.int(sfSysFlag, 32)),
		BornTimestamp:         sv.int(sfBornTimestamp, 64),
		Flag:                  int32(sv.int(sfFlag, 32)),
		Body:                  req.Body,
	}
	if sv.present(sfProperties) {
		sr.Properties = sv.val(sfProperties)
	}
	if sv.present(sfReconsumeTimes) {
		sr.ReconsumeTimes = int32(sv.int(sfReconsumeTimes, 32))
	}
	sr.UnitMode = sv.bool(sfUnitMode, false)
	batch, err := batchValue(sv.present(sfBatch), sv.name(sfBatch), sv.val(sfBatch), req.Code)
	if err != nil {
		return err
	}
	// The header's flag decides, as the 4.x broker's
	// requestHeader.isBatch(): the C++ client sends batches as
	// SEND_MESSAGE_V2 with m=true.
	sr.Batch = batch
	if sv.present(sfMaxReconsumeTimes) {
		v := int32(sv.int(sfMaxReconsumeTimes, 32))
		sr.MaxReconsumeTimes = &v
	}
	if err := sv.err; err != nil {
		if sv.v2 {
			err = fmt.Errorf("%w (SendMessageRequestHeaderV2: a=producerGroup b=topic c=defaultTopic "+
				"d=defaultTopicQueueNums e=queueId f=sysFlag g=bornTimestamp h=flag i=properties)", err)
		}
		return err
	}
	return nil
}

// batchValue reads the batch flag ("batch"; "m" in the V2 header). The
// Java broker's Boolean.parseBoolean would read anything but "true" as false; a value
// that is neither true nor false is refused instead, so that a client's
// batch is never stored as one message by a guess.
func batchValue(present bool, name, v string, code int32) (bool, error) {
	if !present {
		return false, nil
	}
	switch strings.ToLower(v) {
	case "true":
		return true, nil
	case "false", "":
		return false, nil
	}
	return false, fmt.Errorf("%w: batch flag %q = %q is not true or false (request code %d)", remoting.ErrBadField, name, v, code)
}
