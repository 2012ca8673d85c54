package acl

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"
)

// V2Credentials are what a RocketMQ 5.x (gRPC) client sends to sign a
// request: the metadata "authorization" = "MQv2-HMAC-SHA1
// Credential=AK, SignedHeaders=x-mq-date-time, Signature=HEX" and
// "x-mq-date-time" (yyyyMMdd'T'HHmmss'Z'). The signature is the
// upper-case hex of HMAC-SHA1(secretKey, dateTime).
type V2Credentials struct {
	AccessKey, Signature, DateTime string
}

// ParseV2Authorization reads an authorization value as RocketMQ 5.x's
// DefaultAuthenticationContextBuilder does: the scheme, then
// comma-separated key=value items, of which Credential (its part before
// the first '/') names the access key and Signature is hex.
func ParseV2Authorization(auth, dateTime string) (V2Credentials, error) {
	_, items, ok := strings.Cut(strings.TrimSpace(auth), " ")
	if !ok {
		return V2Credentials{}, fmt.Errorf("ACL: authorization header %q has no credentials after its scheme", auth)
	}
	c := V2Credentials{DateTime: dateTime}
	for _, kv := range strings.Split(items, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return V2Credentials{}, fmt.Errorf("ACL: authorization item %q is not key=value", kv)
		}
		switch k {
		case "Credential":
			c.AccessKey, _, _ = strings.Cut(v, "/")
		case "Signature":
			c.Signature = v
		}
	}
	return c, nil
}

// CheckV2 is Check for a 5.x request: c authenticates the account (a
// global or account white address passes without a signature, as in
// Check), which must then hold every need. A zero c (no authorization
// header) is refused as unsigned unless the address is globally white.
func (v *Validator) CheckV2(c V2Credentials, remote netip.Addr, needs ...Need) *Denial {
	r := v.rules.Load()
	remote = remote.Unmap()
	for _, m := range r.global {
		if m.match(remote) {
			return nil
		}
	}
	if c.AccessKey == "" {
		return &Denial{Reason: ReasonUnsigned, Remark: "ACL: the request has no authorization metadata; give the client session credentials"}
	}
	acc := r.accounts[c.AccessKey]
	if acc == nil {
		return &Denial{Reason: ReasonUnknownKey, AccessKey: c.AccessKey, Remark: fmt.Sprintf("ACL: no account for accessKey=%s", c.AccessKey)}
	}
	if acc.white.match(remote) {
		return nil
	}
	got, err := hex.DecodeString(c.Signature)
	m := hmac.New(sha1.New, acc.secret)
	m.Write([]byte(c.DateTime))
	if err != nil || !hmac.Equal(got, m.Sum(nil)) {
		return &Denial{Reason: ReasonBadSignature, AccessKey: c.AccessKey, Remark: fmt.Sprintf("ACL: signature check failed for accessKey=%s", c.AccessKey)}
	}
	for _, n := range needs {
		if !acc.grants(n) {
			return &Denial{Reason: ReasonNoPermission, AccessKey: c.AccessKey,
				Remark: fmt.Sprintf("ACL: accessKey=%s has no %s permission on %s %s", c.AccessKey, n.Perm, n.Kind, n.Name)}
		}
	}
	return nil
}

// GroupNeed returns the permission a consumer group needs to consume
// (SUB on the group).
func GroupNeed(group string) Need { return groupNeed(group) }
