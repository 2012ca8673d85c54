package acl

import (
	"bytes"
	"testing"
	"time"

	"github.com/rocketstore/rocketstore/remoting"
)

// FuzzParseFile: no input panics; an accepted file marshals to one that
// parses to the same rules.
func FuzzParseFile(f *testing.F) {
	f.Add([]byte(sampleACL))
	f.Add([]byte(testACL))
	f.Add([]byte("accounts:\n  - accessKey: &a RocketMQ\n    secretKey: *a\n"))
	f.Add([]byte("globalWhiteRemoteAddresses: [\"1.2.3.{1,2}\", \"10.*\", \"::1\"]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, r, err := parseAndCompile(data)
		if err != nil {
			return
		}
		out, err := file.Marshal()
		if err != nil {
			t.Fatalf("marshal of an accepted file: %v", err)
		}
		_, r2, err := parseAndCompile(out)
		if err != nil {
			t.Fatalf("re-parse of\n%s\nfailed: %v", out, err)
		}
		if len(r.accounts) != len(r2.accounts) || len(r.global) != len(r2.global) {
			t.Fatalf("round trip changed the rules: %d/%d accounts, %d/%d addresses",
				len(r.accounts), len(r2.accounts), len(r.global), len(r2.global))
		}
		for k, a := range r.accounts {
			b := r2.accounts[k]
			if b == nil || !bytes.Equal(a.secret, b.secret) || a.admin != b.admin || a.defTopic != b.defTopic || len(a.topics) != len(b.topics) {
				t.Fatalf("round trip changed account %q", k)
			}
		}
	})
}

// FuzzSignatureCheck: a request is accepted exactly when its Signature is
// the HMAC of its content under the account's secret, and a correctly
// signed request with any one field or body byte changed is refused.
func FuzzSignatureCheck(f *testing.F) {
	v, err := openFuzz(f)
	if err != nil {
		f.Fatal(err)
	}
	f.Add("TopicTest", "group", []byte("body"), "sig", uint8(0), "x")
	f.Add("%RETRY%g", "", []byte{}, "", uint8(3), "")
	f.Fuzz(func(t *testing.T, topic, group string, body []byte, sig string, which uint8, alt string) {
		r := remoting.NewRequest(remoting.CodeSendMessageV2, body)
		r.ExtFields["a"], r.ExtFields["b"] = group, topic
		r.ExtFields[FieldAccessKey], r.ExtFields[FieldSignature] = "adminKey", sig
		want := Sign(Content(r.ExtFields, body), []byte("admin-secret"))
		d := v.Check(r, local)
		if (d == nil) != (sig == want) {
			t.Fatalf("signature %q (valid %q): denial %v", sig, want, d)
		}
		// Sign it, then change one thing.
		r.ExtFields[FieldSignature] = want
		if d := v.Check(r, local); d != nil {
			t.Fatalf("correctly signed request refused: %s", d.Remark)
		}
		before := string(Content(r.ExtFields, r.Body))
		switch which % 4 {
		case 0:
			r.ExtFields["b"] = topic + alt + "!"
		case 1:
			r.Body = append(append([]byte(nil), body...), alt...)
			r.Body = append(r.Body, 0)
		case 2:
			r.ExtFields["k"+alt] = "v" + alt
		case 3:
			r.ExtFields[FieldSecurityToken] = "t" + alt
		}
		if string(Content(r.ExtFields, r.Body)) == before {
			return // the change did not alter the signed content
		}
		if d := v.Check(r, local); d == nil || d.Reason != ReasonBadSignature {
			t.Fatalf("altered request (case %d) not refused as bad_signature: %v", which%4, d)
		}
	})
}

func openFuzz(f *testing.F) (*Validator, error) {
	dir := f.TempDir()
	path := dir + "/plain_acl.yml"
	if err := writeAtomic(path, []byte(testACL)); err != nil {
		return nil, err
	}
	v, err := Open(Config{File: path, ReloadInterval: time.Hour, Logger: quiet})
	if err != nil {
		return nil, err
	}
	f.Cleanup(func() { _ = v.Close() })
	return v, nil
}
