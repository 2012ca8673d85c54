package remoting

import (
	"bufio"
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// materialized returns a copy of c whose extFields are a map, as every
// command's were before lean commands: what tests compare.
func materialized(c *RemotingCommand) *RemotingCommand {
	if c == nil {
		return nil
	}
	d := c.Clone()
	d.ExtMap()
	return d
}

// sameCommand reports whether a and b are the same command, whichever of
// them keeps its extFields lean.
func sameCommand(a, b *RemotingCommand) bool {
	return reflect.DeepEqual(materialized(a), materialized(b))
}

func sendV2Request() *RemotingCommand {
	c := NewRequest(CodeSendMessageV2, []byte("body"))
	for k, v := range map[string]string{"a": "PG", "b": "T", "c": "TBW102", "d": "4", "e": "1", "f": "0",
		"g": "1700000000000", "h": "0", "i": "TAGS\x01A\x02WAIT\x01true", "j": "0", "k": "false", "m": "false"} {
		c.ExtFields[k] = v
	}
	return c
}

// TestLeanRequests: the send and pull requests decode without an extFields
// map, in both header types; the typed readers, Ext, ExtMap and a
// re-encoding see the same fields; other requests and every response keep
// the map.
func TestLeanRequests(t *testing.T) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		req := sendV2Request()
		req.SerializeType = st
		frame, err := req.MarshalFrame()
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeFrame(frame, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got.ExtFields != nil || !got.lean || len(got.ext) != len(req.ExtFields) {
			t.Fatalf("%v: SEND_MESSAGE_V2 decoded with map %v, %d entries", st, got.ExtFields, len(got.ext))
		}
		for k, v := range req.ExtFields {
			if gv, ok := got.Ext(k); !ok || gv != v {
				t.Fatalf("%v: Ext(%q) = %q, %v; want %q", st, k, gv, ok, v)
			}
		}
		if _, ok := got.Ext("missing"); ok {
			t.Fatalf("%v: Ext found a missing field", st)
		}
		f := got.Fields()
		if f.String("b") != "T" || f.Int32("e") != 1 || f.OptBool("k", true) || f.OptInt32("l", 16) != 16 || f.Err() != nil {
			t.Fatalf("%v: typed readers: %v", st, f.Err())
		}
		if _, err := got.ExtString("missing"); err == nil {
			t.Fatalf("%v: ExtString of a missing field did not fail", st)
		}
		again, err := got.MarshalFrame()
		if err != nil || !bytes.Equal(again, frame) {
			t.Fatalf("%v: lean re-encoding differs (%v):\n%q\n%q", st, err, again, frame)
		}
		got.SetExt("b", "U") // changed in place, still lean
		if v, _ := got.Ext("b"); v != "U" || got.ExtFields != nil {
			t.Fatalf("%v: SetExt on a lean request: %q, map %v", st, v, got.ExtFields)
		}
		if m := got.ExtMap(); m["b"] != "U" || m["a"] != "PG" || len(m) != len(req.ExtFields) || got.lean {
			t.Fatalf("%v: ExtMap = %v", st, m)
		}

		// A response with a hot code, and a request with another code, keep the map.
		resp := req.NewResponse(CodeSendMessage, "")
		resp.SetExt("msgId", "X")
		pull := NewRequest(CodeHeartBeat, nil)
		pull.ExtFields["k"] = "v"
		for _, c := range []*RemotingCommand{resp, pull} {
			c.SerializeType = st
			fr, _ := c.MarshalFrame()
			d, err := DecodeFrame(fr, 0)
			if err != nil || d.ExtFields == nil || d.lean {
				t.Fatalf("%v: code %d flag %d decoded lean (%v)", st, c.Code, c.Flag, err)
			}
		}
	}
}

// TestLeanJSONDuplicates: a repeated extFields key is read as its last
// value, as the map's overwrite had it.
func TestLeanJSONDuplicates(t *testing.T) {
	c, err := decodeJSONHeader([]byte(`{"code":11,"extFields":{"topic":"A","topic":"B"},"extFields":{"queueId":"1"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := c.Ext("topic"); v != "B" || c.ExtFields != nil {
		t.Fatalf("topic = %q", v)
	}
	var buf [16]extPair
	if ext, _ := leanExtSorted(c.ext, buf[:0]); len(ext) != 2 || ext[0] != (extPair{"queueId", "1"}) || ext[1] != (extPair{"topic", "B"}) {
		t.Fatalf("sorted entries %v", ext)
	}
}

// TestLeanResponse: a lean response encodes exactly as the map response
// with the same entries does.
func TestLeanResponse(t *testing.T) {
	for _, st := range []SerializeType{SerializeJSON, SerializeRocketMQ} {
		req := sendV2Request()
		req.SerializeType = st
		lean, full := req.NewLeanResponse(CodeSuccess, "r"), req.NewResponse(CodeSuccess, "r")
		for _, c := range []*RemotingCommand{lean, full} {
			c.SetExt("queueOffset", "42")
			c.SetExt("msgId", "ID")
			c.SetExtInt("queueId", 3)
			c.SetExt("msgId", "ID2")
		}
		if lean.ExtFields != nil {
			t.Fatal("NewLeanResponse built a map")
		}
		a, err1 := lean.MarshalFrame()
		b, err2 := full.MarshalFrame()
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Fatalf("%v: lean %q (%v)\n map %q (%v)", st, a, err1, b, err2)
		}
		if v, ok := lean.Ext("msgId"); !ok || v != "ID2" {
			t.Fatalf("Ext(msgId) = %q", v)
		}
	}
}

// TestFrameBuffered: the read loop skips the idle deadline only for a
// frame wholly in its buffer; a partial frame (or a length alone) still
// reads the socket under the deadline.
func TestFrameBuffered(t *testing.T) {
	frame, err := NewRequest(CodePullMessage, []byte("body")).MarshalFrame()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in   []byte
		want bool
	}{
		{append(append([]byte(nil), frame...), frame[:3]...), true},
		{frame, true},
		{frame[:len(frame)-1], false},
		{frame[:4], false},
		{frame[:2], false},
		{nil, false},
	} {
		br := bufio.NewReaderSize(bytes.NewReader(c.in), 1<<10)
		_, _ = br.Peek(len(c.in)) // fill the buffer as a socket read would
		if got := frameBuffered(br); got != c.want {
			t.Fatalf("%d bytes buffered of a %d-byte frame: %v, want %v", len(c.in), len(frame), got, c.want)
		}
	}
}

// EachExt yields a lean command's entries in input order, repeated names
// included (the later overriding, as Ext reads it), a map command's
// entries all, and stops when yield returns false.
func TestEachExt(t *testing.T) {
	lean := newLeanCommand(&RemotingCommand{Code: CodeSendMessage}, 3)
	lean.ext = append(lean.ext, extPair{"topic", "A"}, extPair{"queueId", "1"}, extPair{"topic", "B"})
	var got []string
	for k, v := range lean.EachExt {
		got = append(got, k+"="+v)
	}
	if strings.Join(got, ",") != "topic=A,queueId=1,topic=B" {
		t.Fatalf("lean entries %q", got)
	}
	if v, _ := lean.Ext("topic"); v != "B" {
		t.Fatalf("Ext(topic) = %q, want the later B", v)
	}
	m := &RemotingCommand{ExtFields: map[string]string{"a": "1", "b": "2"}}
	seen := map[string]string{}
	for k, v := range m.EachExt {
		seen[k] = v
	}
	if len(seen) != 2 || seen["a"] != "1" || seen["b"] != "2" {
		t.Fatalf("map entries %v", seen)
	}
	n := 0
	for range lean.EachExt {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("%d entries after a break, want 1", n)
	}
}

// A lean response holds leanResponseEntries entries in its own allocation
// and grows beyond them: whatever the count, it encodes as the map
// response with the same entries does, and reads back the same.
func TestLeanResponseBeyondItsRoom(t *testing.T) {
	req := sendV2Request()
	for _, n := range []int{0, 1, leanResponseEntries - 1, leanResponseEntries, leanResponseEntries + 1, 3 * leanResponseEntries} {
		lean := req.NewLeanResponse(CodeSuccess, "r")
		m := req.NewResponse(CodeSuccess, "r")
		for i := range n {
			k, v := fmt.Sprintf("k%02d", i), strconv.Itoa(i*7)
			lean.SetExt(k, v)
			m.SetExt(k, v)
		}
		lean.SetExt("k00", "again") // an overwrite keeps one entry
		m.SetExt("k00", "again")
		a, errA := lean.MarshalFrame()
		b, errB := m.MarshalFrame()
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Fatalf("%d entries: lean frame %q (%v), map frame %q (%v)", n, a, errA, b, errB)
		}
		if !sameCommand(lean, m) {
			t.Fatalf("%d entries: lean %v, map %v", n, lean, m)
		}
	}
}
