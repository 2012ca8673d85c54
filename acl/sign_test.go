package acl

import (
	"testing"

	"github.com/rocketstore/rocketstore/remoting"
)

// The expected signatures were computed independently with
// `printf CONTENT | openssl dgst -sha1 -hmac SECRET -binary | base64`.
func TestSignatureVectors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ext    map[string]string
		body   string
		secret string
		want   string
	}{
		{"values in key order then body", map[string]string{"topic": "t", "b": "x", "AccessKey": "RocketMQ"}, "hi", "12345678",
			"glYudCoKTjVDFHCNfDkIPkAlUKA="},
		{"security token signed; Signature and _UNIQUE_KEY_QUERY left out",
			map[string]string{"AccessKey": "RocketMQ", "queueId": "0", "producerGroup": "My-Group", "topic": "TopicTest",
				"SecurityToken": "SECtok", "Signature": "ignored", "_UNIQUE_KEY_QUERY": "true"},
			"hello", "secret-key-1", "mgBevQCTj1rfYS71t1+1KPM0gk4="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Sign(Content(tc.ext, []byte(tc.body)), []byte(tc.secret)); got != tc.want {
				t.Fatalf("signature %s, want %s", got, tc.want)
			}
		})
	}
}

func TestSignRequestVerifies(t *testing.T) {
	req := remoting.NewRequest(remoting.CodeSendMessageV2, []byte("body"))
	req.ExtFields["b"] = "TopicTest"
	SignRequest(req, "RocketMQ", "12345678", "")
	if !verify(Content(req.ExtFields, req.Body), []byte("12345678"), req.ExtFields[FieldSignature]) {
		t.Fatal("a request signed by SignRequest does not verify")
	}
	if verify(Content(req.ExtFields, req.Body), []byte("12345679"), req.ExtFields[FieldSignature]) {
		t.Fatal("verified under the wrong secret")
	}
}

func TestJavaKeyOrder(t *testing.T) {
	// U+FF5E (one UTF-16 unit 0xFF5E) sorts after U+1F600 (surrogates
	// 0xD83D...) in Java, before it in Go's byte order.
	a, b := "\U0001F600", "\uFF5E"
	if javaCompare(a, b) >= 0 {
		t.Fatalf("javaCompare(%q, %q) >= 0; Java orders the supplementary character first", a, b)
	}
	if got := string(Content(map[string]string{b: "2", a: "1"}, nil)); got != "12" {
		t.Fatalf("content %q, want Java's order %q", got, "12")
	}
}
