package acl

import (
	"fmt"
	"strings"
)

// Perm is a permission bit set, with RocketMQ's values (Permission.java).
type Perm byte

// Permission bits. A resource owned with DENY refuses everything.
const (
	PermDeny Perm = 1
	PermAny  Perm = 1 << 1
	PermPub  Perm = 1 << 2
	PermSub  Perm = 1 << 3
)

// String returns the plain_acl.yml spelling of p ("PUB|SUB", "DENY").
func (p Perm) String() string {
	switch {
	case p&PermDeny != 0:
		return "DENY"
	case p&(PermPub|PermSub) == PermPub|PermSub:
		return "PUB|SUB"
	case p&PermPub != 0:
		return "PUB"
	case p&PermSub != 0:
		return "SUB"
	case p&PermAny != 0:
		return "ANY"
	}
	return "DENY"
}

// ParsePerm parses a plain_acl.yml permission: PUB, SUB, PUB|SUB, SUB|PUB
// or DENY. RocketMQ silently reads anything else as DENY; rocketstore
// rejects it, so that a typo is a load error and not a silent denial.
func ParsePerm(s string) (Perm, error) {
	switch strings.TrimSpace(s) {
	case "PUB":
		return PermPub, nil
	case "SUB":
		return PermSub, nil
	case "PUB|SUB", "SUB|PUB":
		return PermPub | PermSub, nil
	case "DENY":
		return PermDeny, nil
	}
	return 0, fmt.Errorf("permission %q is not PUB, SUB, PUB|SUB or DENY", s)
}

// allows is Permission.checkPermission: owned grants needed.
func (owned Perm) allows(needed Perm) bool {
	if owned&PermDeny != 0 {
		return false
	}
	if needed&PermAny != 0 {
		return owned&(PermPub|PermSub) != 0
	}
	return needed&owned != 0
}
