package timer

import (
	"errors"
	"testing"
)

// TestRecallHandleFormat: the handle is RocketMQ 5.x's HandleV1 (the
// vector is what Java's Base64.getUrlEncoder gives for the same fields),
// and a malformed one is an error, never a panic.
func TestRecallHandleFormat(t *testing.T) {
	h := RecallHandle{Topic: "TopicA", BrokerName: "broker-a", DeliverMs: 1700000000301, MessageID: "7F0000010001B4AAC5B6"}
	const java = "djEgVG9waWNBIGJyb2tlci1hIDE3MDAwMDAwMDAzMDEgN0YwMDAwMDEwMDAxQjRBQUM1QjY="
	if got := h.String(); got != java {
		t.Fatalf("encoded %s, want %s", got, java)
	}
	if got, err := ParseRecallHandle(java); err != nil || got != h {
		t.Fatalf("decoded %+v %v", got, err)
	}
	for _, bad := range []string{"", "!!!", "djEgVA==" /* "v1 T" */, "djIgVCBiIDEgaWQ=" /* v2 */, "djEgVCBiIHggaWQ=" /* timestamp x */} {
		if _, err := ParseRecallHandle(bad); !errors.Is(err, ErrBadHandle) {
			t.Errorf("ParseRecallHandle(%q) = %v", bad, err)
		}
	}
}

func FuzzParseRecallHandle(f *testing.F) {
	f.Add("djEgVG9waWNBIGJyb2tlci1hIDE3MDAwMDAwMDAzMDEgN0YwMDAwMDEwMDAxQjRBQUM1QjY=")
	f.Add("djEgVCBiIHggaWQ=")
	f.Fuzz(func(t *testing.T, s string) {
		h, err := ParseRecallHandle(s)
		if err != nil {
			return
		}
		if again, err := ParseRecallHandle(h.String()); err != nil || again != h {
			t.Fatalf("%+v does not round-trip: %+v %v", h, again, err)
		}
	})
}
