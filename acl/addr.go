package acl

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// addrMatcher is RocketMQ's RemoteAddressStrategy: does a client address
// match a whiteRemoteAddress or globalWhiteRemoteAddresses entry.
type addrMatcher interface {
	match(a netip.Addr) bool
}

type matchNone struct{}

func (matchNone) match(netip.Addr) bool { return false }

type matchAll struct{}

func (matchAll) match(netip.Addr) bool { return true }

// matchSet is a list of exact addresses ("10.0.0.1,10.0.0.2" or
// "10.0.0.{1,2}").
type matchSet map[netip.Addr]bool

func (m matchSet) match(a netip.Addr) bool { return m[a.Unmap()] }

// matchRange is an IPv4 pattern whose octets are numbers, "*" or "lo-hi"
// ("192.168.1.*", "192.168.1-10.*", "10.10.103.1-100", "192.168.*").
type matchRange [4][2]uint8

func (m matchRange) match(a netip.Addr) bool {
	a = a.Unmap()
	if !a.Is4() {
		return false
	}
	b := a.As4()
	for i, r := range m {
		if b[i] < r[0] || b[i] > r[1] {
			return false
		}
	}
	return true
}

// parseAddrPattern compiles one address pattern in RocketMQ's syntax
// (RemoteAddressStrategyFactory). Blank matches nothing; "*", "*.*.*.*"
// and "*:*:*:*:*:*:*:*" match everything. IPv6 is supported as exact
// addresses and lists, not as ranges.
func parseAddrPattern(s string) (addrMatcher, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return matchNone{}, nil
	case s == "*" || s == "*.*.*.*" || s == "*:*:*:*:*:*:*:*":
		return matchAll{}, nil
	case strings.HasSuffix(s, "}"):
		return parseBraceList(s)
	case strings.Contains(s, ","):
		return parseList(strings.Split(s, ","))
	case strings.ContainsAny(s, "*-"):
		return parseRange(s)
	}
	return parseList([]string{s})
}

func parseList(items []string) (addrMatcher, error) {
	set := matchSet{}
	for _, it := range items {
		a, err := netip.ParseAddr(strings.TrimSpace(it))
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("address %q is not an IP address", it)
		}
		set[a.Unmap()] = true
	}
	return set, nil
}

// parseBraceList reads "192.168.1.{1,2,3}" (and the IPv6 "a:b::{1,2}").
func parseBraceList(s string) (addrMatcher, error) {
	open := strings.LastIndexByte(s, '{')
	if open < 0 || (open > 0 && s[open-1] != '.' && s[open-1] != ':') {
		return nil, fmt.Errorf("address list %q: the last part must be {a,b,...}", s)
	}
	prefix := s[:open]
	var items []string
	for _, it := range strings.Split(s[open+1:len(s)-1], ",") {
		items = append(items, prefix+strings.TrimSpace(it))
	}
	return parseList(items)
}

func parseRange(s string) (addrMatcher, error) {
	if strings.Contains(s, ":") {
		return nil, fmt.Errorf("address range %q: IPv6 ranges are not supported; list the addresses", s)
	}
	parts := strings.Split(s, ".")
	if len(parts) > 4 || len(parts) < 2 {
		return nil, fmt.Errorf("address range %q is not an IPv4 pattern", s)
	}
	if len(parts) < 4 && strings.TrimSpace(parts[len(parts)-1]) != "*" {
		return nil, fmt.Errorf("address range %q: a short pattern must end in *", s)
	}
	var m matchRange
	for i := range m {
		p := "*"
		if i < len(parts) {
			p = strings.TrimSpace(parts[i])
		}
		lo, hi, err := parseOctetRange(p)
		if err != nil {
			return nil, fmt.Errorf("address range %q: %v", s, err)
		}
		m[i] = [2]uint8{lo, hi}
	}
	return m, nil
}

func parseOctetRange(p string) (lo, hi uint8, err error) {
	if p == "*" {
		return 0, 255, nil
	}
	l, h, isRange := strings.Cut(p, "-")
	if !isRange {
		h = l
	}
	a, err1 := strconv.ParseUint(l, 10, 8)
	b, err2 := strconv.ParseUint(h, 10, 8)
	if err1 != nil || err2 != nil || a > b {
		return 0, 0, fmt.Errorf("%q is not an octet, * or lo-hi within 0-255", p)
	}
	return uint8(a), uint8(b), nil
}
