package acl

import (
	"crypto/hmac"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"slices"
	"unicode/utf16"

	"github.com/rocketstore/rocketstore/remoting"
)

// extFields names of RocketMQ's SessionCredentials.
const (
	FieldAccessKey     = "AccessKey"
	FieldSignature     = "Signature"
	FieldSecurityToken = "SecurityToken"
	// uniqueKeyQueryFlag (MixAll.UNIQUE_MSG_QUERY_FLAG) is added to
	// QUERY_MESSAGE outside the signed header; the broker leaves it out.
	uniqueKeyQueryFlag = "_UNIQUE_KEY_QUERY"
)

// Content returns the bytes a request's signature covers, as RocketMQ's
// PlainAccessValidator builds them: the values of the extFields (AccessKey
// and SecurityToken included, Signature and _UNIQUE_KEY_QUERY excluded)
// in the order of their keys, UTF-8, followed by the body. The keys
// themselves, the request code, opaque, flag, version and remark are not
// covered.
func Content(ext map[string]string, body []byte) []byte {
	keys := make([]string, 0, len(ext))
	n := len(body)
	for k, v := range ext {
		if k == FieldSignature || k == uniqueKeyQueryFlag {
			continue
		}
		keys = append(keys, k)
		n += len(v)
	}
	slices.SortFunc(keys, javaCompare)
	out := make([]byte, 0, n)
	for _, k := range keys {
		out = append(out, ext[k]...)
	}
	return append(out, body...)
}

// Sign returns the Signature of content under secretKey: base64 of
// HMAC-SHA1 (AclSigner).
func Sign(content []byte, secretKey []byte) string {
	m := hmac.New(sha1.New, secretKey)
	m.Write(content)
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// SignRequest sets AccessKey, SecurityToken (when not empty) and
// Signature on req, as RocketMQ's AclClientRPCHook does. It is what a
// client of rocketstore's own remoting package uses to talk to a server
// with ACL on.
func SignRequest(req *remoting.RemotingCommand, accessKey, secretKey, securityToken string) {
	req.ExtMap() // a decoded send or pull request keeps its fields in a slice
	if req.ExtFields == nil {
		req.ExtFields = map[string]string{}
	}
	delete(req.ExtFields, FieldSignature)
	req.ExtFields[FieldAccessKey] = accessKey
	if securityToken != "" {
		req.ExtFields[FieldSecurityToken] = securityToken
	}
	req.ExtFields[FieldSignature] = Sign(Content(req.ExtFields, req.Body), []byte(secretKey))
}

// verify reports, in constant time, whether sig is the signature of
// content under secret. (RocketMQ compares with String.equals.)
func verify(content, secret []byte, sig string) bool {
	want := Sign(content, secret)
	return subtle.ConstantTimeCompare([]byte(want), []byte(sig)) == 1
}

// javaCompare orders strings as Java's String.compareTo (a TreeMap's
// order): by UTF-16 code units, which differs from Go's byte order for
// characters above U+FFFF against U+E000–U+FFFF.
func javaCompare(a, b string) int {
	if isASCII(a) && isASCII(b) {
		switch {
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	}
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
