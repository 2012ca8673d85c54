package server

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/rocketstore/rocketstore/broker"
	"github.com/rocketstore/rocketstore/remoting"
)

// sendHeaderByLookup is the model of sendHeader: each field searched by
// name through remoting's FieldReader, as the handler read them before it
// read the header in one pass.
func sendHeaderByLookup(req *remoting.RemotingCommand) (*broker.SendRequest, error) {
	names := &sendFields
	if req.Code != remoting.CodeSendMessage {
		if _, v2 := req.Ext("a"); v2 {
			names = &sendFieldsV2
		}
	}
	f := req.Fields()
	sr := &broker.SendRequest{
		ProducerGroup: f.String(names[0]), Topic: f.String(names[1]), DefaultTopic: f.String(names[2]),
		DefaultTopicQueueNums: int(f.Int32(names[3])), QueueID: f.Int32(names[4]), SysFlag: f.Int32(names[5]),
		BornTimestamp: f.Int64(names[6]), Flag: f.Int32(names[7]), Properties: f.OptString(names[8], ""),
		ReconsumeTimes: f.OptInt32(names[9], 0), UnitMode: f.OptBool(names[10], false), Body: req.Body,
	}
	batchName := "batch"
	if names == &sendFieldsV2 {
		batchName = "m"
	}
	v, ok := req.Ext(batchName)
	batch, err := batchValue(ok, batchName, v, req.Code)
	if err != nil {
		return nil, err
	}
	sr.Batch = batch
	if _, ok := req.Ext(names[11]); ok {
		v := f.Int32(names[11])
		sr.MaxReconsumeTimes = &v
	}
	if err := f.Err(); err != nil {
		if names == &sendFieldsV2 {
			err = fmt.Errorf("%w (SendMessageRequestHeaderV2: a=producerGroup b=topic c=defaultTopic "+
				"d=defaultTopicQueueNums e=queueId f=sysFlag g=bornTimestamp h=flag i=properties)", err)
		}
		return sr, err
	}
	return sr, nil
}

// leanFrame decodes a send request whose JSON header holds entries in the
// given order (duplicates included), as a client's frame arrives: the
// server reads such a header without an extFields map.
func leanFrame(t *rapid.T, code int32, entries [][2]string) *remoting.RemotingCommand {
	var h strings.Builder
	h.WriteString(`{"code":`)
	h.WriteString(strings.TrimSpace(string(must(json.Marshal(code)))))
	h.WriteString(`,"language":"GO","version":317,"opaque":1,"flag":0,"extFields":{`)
	for i, e := range entries {
		if i > 0 {
			h.WriteByte(',')
		}
		h.Write(must(json.Marshal(e[0])))
		h.WriteByte(':')
		h.Write(must(json.Marshal(e[1])))
	}
	h.WriteString(`}}`)
	body := []byte("body")
	frame := binary.BigEndian.AppendUint32(nil, uint32(4+h.Len()+len(body)))
	frame = binary.BigEndian.AppendUint32(frame, uint32(h.Len()))
	frame = append(append(frame, h.String()...), body...)
	cmd, err := remoting.DecodeFrame(frame, 1<<20)
	if err != nil {
		t.Fatalf("decode %s: %v", h.String(), err)
	}
	return cmd
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// TestSendHeaderOnePassMatchesLookup: over headers of any mix of long and
// one-letter names, missing, repeated, out of range or malformed values,
// in any order, the one-pass decoder returns what looking each field up
// returns: the same request, or an error wrapping the same sentinel with
// the same text.
func TestSendHeaderOnePassMatchesLookup(t *testing.T) {
	names := append(append(append([]string{}, sendFields[:]...), sendFieldsV2[:]...), "batch", "m", "other")
	values := []string{"", "0", "7", "-1", "2147483648", "9223372036854775808", "x", "true", "FALSE", "1", "T", "TAGS\x01a"}
	rapid.Check(t, func(t *rapid.T) {
		code := rapid.SampledFrom([]int32{remoting.CodeSendMessage, remoting.CodeSendMessageV2, remoting.CodeSendBatchMessage}).Draw(t, "code")
		var entries [][2]string
		// Mostly complete headers, so that the paths past the required
		// fields are reached too.
		set := rapid.SampledFrom([][12]string{sendFields, sendFieldsV2}).Draw(t, "set")
		for i, n := range set {
			if rapid.IntRange(0, 9).Draw(t, "skip") > 0 {
				v := "1"
				if i < 3 || i == 8 {
					v = "s"
				}
				entries = append(entries, [2]string{n, v})
			}
		}
		for range rapid.IntRange(0, 6).Draw(t, "extra") {
			entries = append(entries, [2]string{rapid.SampledFrom(names).Draw(t, "name"), rapid.SampledFrom(values).Draw(t, "value")})
		}
		entries = rapid.Permutation(entries).Draw(t, "order")
		req := leanFrame(t, code, entries)
		got, gotErr := sendHeader(req)
		want, wantErr := sendHeaderByLookup(req)
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
			t.Fatalf("entries %q: error %v, want %v", entries, gotErr, wantErr)
		}
		for _, s := range []error{remoting.ErrMissingField, remoting.ErrBadField} {
			if wantErr != nil && errors.Is(gotErr, s) != errors.Is(wantErr, s) {
				t.Fatalf("entries %q: error %v does not wrap %v as %v does", entries, gotErr, s, wantErr)
			}
		}
		if wantErr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("entries %q:\n got %+v\nwant %+v", entries, got, want)
		}
	})
}

// BenchmarkSendHeader decodes the official Go client's SEND_MESSAGE header
// (thirteen long-named entries), as read off the wire.
func BenchmarkSendHeader(b *testing.B) {
	entries := [][2]string{{"producerGroup", "PG"}, {"topic", "TopicLoad"}, {"defaultTopic", "TBW102"},
		{"defaultTopicQueueNums", "8"}, {"queueId", "3"}, {"sysFlag", "0"}, {"bornTimestamp", "1733450000000"},
		{"flag", "0"}, {"properties", "UNIQ_KEY\x017F0000010001\x02WAIT\x01true\x02"}, {"reconsumeTimes", "0"},
		{"unitMode", "false"}, {"maxReconsumeTimes", "0"}, {"batch", "false"}}
	var req *remoting.RemotingCommand
	rapid.Check(b, func(t *rapid.T) { req = leanFrame(t, remoting.CodeSendMessage, entries) })
	for _, d := range []struct {
		name string
		fn   func(*remoting.RemotingCommand) (*broker.SendRequest, error)
	}{{"one-pass", sendHeader}, {"lookup", sendHeaderByLookup}} {
		b.Run(d.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.fn(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
