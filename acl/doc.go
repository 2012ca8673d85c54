// Package acl is RocketMQ 4.x "plain ACL" for the remoting protocol: the
// plain_acl.yml rules (global white addresses, accounts with access and
// secret keys, white addresses, admin flag, default and per-resource topic
// and group permissions), the request signature the RocketMQ clients
// compute (HMAC-SHA1 over the sorted extFields values and the body), the
// mapping of every request code to the resources and permission it needs,
// and a Validator that checks requests against rules reloaded atomically
// when the file changes.
//
// The checks follow RocketMQ 4.9's PlainPermissionManager, with the holes
// of that version closed: batch sends, offset queries and the ACL admin
// codes (50–54) are checked too. See docs/security.md for the threat
// model, including what RocketMQ's signature scheme does not protect
// against (replay).
package acl
