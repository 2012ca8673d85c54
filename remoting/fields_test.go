package remoting

import (
	"errors"
	"strings"
	"testing"
)

func TestExtFields(t *testing.T) {
	c := NewRequest(CodePullMessage, nil)
	c.SetExt("topic", "T")
	c.SetExtInt("queueId", 3)
	c.SetExtInt("queueOffset", 1<<40)
	c.SetExtBool("unitMode", true)
	c.SetExt("big", "2147483648")
	c.SetExt("bad", "x1")
	c.SetExt("upper", "TRUE")

	if v, err := c.ExtString("topic"); err != nil || v != "T" {
		t.Fatalf("topic = %q, %v", v, err)
	}
	if v, err := c.ExtInt32("queueId"); err != nil || v != 3 {
		t.Fatalf("queueId = %d, %v", v, err)
	}
	if v, err := c.ExtInt64("queueOffset"); err != nil || v != 1<<40 {
		t.Fatalf("queueOffset = %d, %v", v, err)
	}
	if v, err := c.ExtBool("unitMode"); err != nil || !v {
		t.Fatalf("unitMode = %v, %v", v, err)
	}
	if v, err := c.ExtBool("upper"); err != nil || !v {
		t.Fatalf("upper = %v, %v", v, err)
	}
	for _, tc := range []struct {
		name string
		fn   func() error
		want error
	}{
		{"missing", func() error { _, err := c.ExtInt32("maxMsgNums"); return err }, ErrMissingField},
		{"int32 overflow", func() error { _, err := c.ExtInt32("big"); return err }, ErrBadField},
		{"not int", func() error { _, err := c.ExtInt64("bad"); return err }, ErrBadField},
		{"not bool", func() error { _, err := c.ExtBool("bad"); return err }, ErrBadField},
	} {
		err := tc.fn()
		if !errors.Is(err, tc.want) {
			t.Fatalf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := c.ExtInt32("big"); !strings.Contains(err.Error(), `"big"`) {
		t.Fatalf("error %q does not name the field", err)
	}
}

func TestFieldReader(t *testing.T) {
	c := &RemotingCommand{Code: 11, ExtFields: map[string]string{"topic": "T", "queueId": "2", "sysFlag": "x"}}
	f := c.Fields()
	if f.String("topic") != "T" || f.Int32("queueId") != 2 || f.OptInt64("commitOffset", -1) != -1 ||
		!f.OptBool("unitMode", true) || f.OptString("bname", "b") != "b" || f.Err() != nil {
		t.Fatalf("good fields: err %v", f.Err())
	}
	_ = f.Int32("sysFlag")
	_ = f.Int64("queueOffset")
	if err := f.Err(); !errors.Is(err, ErrBadField) || !strings.Contains(err.Error(), "sysFlag") {
		t.Fatalf("first error = %v, want ErrBadField naming sysFlag", err)
	}
}
