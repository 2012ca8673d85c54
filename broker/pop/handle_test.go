package pop

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestDecimalAgreesWithParseInt checks the handle's number parser
// against strconv.ParseInt on strings near the edges: signs, leading
// zeros, lengths around the fast path's 18 characters, the limits of
// int32 and int64 and one past them, and stray characters.
func TestDecimalAgreesWithParseInt(t *testing.T) {
	edges := []string{"9223372036854775807", "9223372036854775808", "-9223372036854775808",
		"-9223372036854775809", "2147483647", "2147483648", "-2147483648", "-2147483649",
		"999999999999999999", "1000000000000000000", "000000000000000000001", "+", "-", "+-1", "1 ", "0x1", "1_0"}
	rapid.Check(t, func(t *rapid.T) {
		var s string
		if rapid.Bool().Draw(t, "edge") {
			s = rapid.SampledFrom(edges).Draw(t, "s")
		} else {
			s = rapid.StringOfN(rapid.SampledFrom([]rune("0123456789+-9 a")), 0, 22, -1).Draw(t, "s")
		}
		bits := rapid.SampledFrom([]int{32, 64}).Draw(t, "bits")
		want, err := strconv.ParseInt(s, 10, bits)
		var got int64
		ok := decimal(s, bits, &got)
		if ok != (err == nil) || (ok && got != want) {
			t.Fatalf("decimal(%q, %d) = %d, %v; strconv: %d, %v", s, bits, got, ok, want, err)
		}
	})
}

// TestParseHandleNamesBadFields checks that a handle with bad numbers
// is refused with every bad field named.
func TestParseHandleNamesBadFields(t *testing.T) {
	_, err := ParseHandle("x 1 2 9999999999 0 b 3 4 -")
	if !errors.Is(err, ErrBadHandle) {
		t.Fatalf("err %v, want ErrBadHandle", err)
	}
	for _, name := range []string{`ckQueueOffset "x"`, `reviveQueueId "9999999999"`, `commitLogOffset "-"`} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
	if strings.Contains(err.Error(), "popTime") {
		t.Errorf("error %q names a good field", err)
	}
}

// TestParseHandleFastPathAgrees checks the one-pass parser against the
// general one: on handles String writes, both read the same Handle; on
// any other text the fast path either declines or reads what the
// general path reads.
func TestParseHandleFastPathAgrees(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var s string
		if rapid.Bool().Draw(t, "written") {
			h := Handle{CkOffset: rapid.Int64().Draw(t, "ck"), PopTime: rapid.Int64().Draw(t, "pop"),
				InvisibleTime: rapid.Int64().Draw(t, "inv"), ReviveQueueID: rapid.Int32().Draw(t, "rq"),
				TopicType:  rapid.StringMatching(`[0-9a-z]{0,2}`).Draw(t, "type"),
				BrokerName: rapid.StringMatching(`[a-z-]{0,8}`).Draw(t, "broker"),
				QueueID:    rapid.Int32().Draw(t, "q"), Offset: rapid.Int64().Draw(t, "off"),
				CommitLogOffset: rapid.Int64().Draw(t, "clo")}
			s = h.String()
			if rapid.Bool().Draw(t, "eight") {
				s = s[:strings.LastIndexByte(s, ' ')]
			}
		} else {
			s = rapid.StringOfN(rapid.SampledFrom([]rune("0123456789-  ab")), 0, 60, -1).Draw(t, "s")
		}
		if rapid.Bool().Draw(t, "edge") {
			// One field replaced by a number at a limit of its size.
			f := strings.Split("1 2 3 4 0 b 5 6 7", " ")
			f[rapid.IntRange(0, len(f)-1).Draw(t, "field")] = rapid.SampledFrom([]string{"2147483647",
				"2147483648", "-2147483648", "-2147483649", "999999999999999999", "1000000000000000000",
				"9223372036854775807", "-9223372036854775808", "-0", "+1", "-", ""}).Draw(t, "number")
			s = strings.Join(f, " ")
		}
		want, wantErr := parseHandleFields(s)
		got, ok := parseHandleFast(s)
		if ok && (wantErr != nil || got != want) {
			t.Fatalf("%q: fast %+v; general %+v, %v", s, got, want, wantErr)
		}
		if h, err := ParseHandle(s); h != want || (err == nil) != (wantErr == nil) {
			t.Fatalf("%q: ParseHandle %+v, %v; general %+v, %v", s, h, err, want, wantErr)
		}
	})
}

// TestHandleParserIsParseHandle checks the batch parser of acks against
// ParseHandle on sequences of handles that share their first fields
// (a receive's batch), with tails that are numbers, garbage or missing,
// and other handles between them.
func TestHandleParserIsParseHandle(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		base := Handle{CkOffset: rapid.Int64().Draw(t, "ck"), PopTime: rapid.Int64().Draw(t, "pop"),
			InvisibleTime: rapid.Int64().Draw(t, "inv"), ReviveQueueID: rapid.Int32().Draw(t, "rq"),
			TopicType:  rapid.StringMatching(`[0-9a-z+]{0,2}`).Draw(t, "type"),
			BrokerName: rapid.StringMatching(`[a-z-]{0,8}`).Draw(t, "broker"),
			QueueID:    rapid.Int32().Draw(t, "q")}
		var prefix [128]byte
		shared := string(base.appendPrefix(prefix[:0]))
		var p handleParser
		for i := range rapid.IntRange(1, 20).Draw(t, "n") {
			var s string
			switch rapid.IntRange(0, 3).Draw(t, "kind") {
			case 0:
				h := base
				h.Offset, h.CommitLogOffset = rapid.Int64().Draw(t, "off"), rapid.Int64().Draw(t, "clo")
				s = h.String()
				if rapid.Bool().Draw(t, "eight") {
					s = s[:strings.LastIndexByte(s, ' ')]
				}
			case 1:
				s = shared + rapid.StringOfN(rapid.SampledFrom([]rune("0123456789-+ ab")), 0, 45, -1).Draw(t, "tail")
			case 2:
				// A handle of another receive, or a general-path form
				// ("+1", 19 digits) that becomes the shared fields.
				s = strings.Join(rapid.SliceOfN(rapid.SampledFrom([]string{"1", "+1", "-0", "0",
					"1000000000000000000", "b", ""}), 7, 10).Draw(t, "fields"), " ")
			default:
				s = rapid.StringOfN(rapid.SampledFrom([]rune("0123456789-  ab")), 0, 60, -1).Draw(t, "s")
			}
			want, wantErr := ParseHandle(s)
			got, err := p.parse(s)
			if got != want || (err == nil) != (wantErr == nil) {
				t.Fatalf("handle %d %q: batch parser %+v, %v; ParseHandle %+v, %v", i, s, got, err, want, wantErr)
			}
		}
	})
}
