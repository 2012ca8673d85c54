package acl

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ErrBadFile reports a plain_acl.yml that cannot be used; the message
// names the entry and what is wrong with it.
var ErrBadFile = errors.New("acl: bad plain_acl.yml")

// MaxFileSize bounds the ACL file read, so that a runaway file cannot
// exhaust memory.
const MaxFileSize = 4 << 20

// minKeyLen is RocketMQ's AclConstants.ACCESS_KEY_MIN_LENGTH and
// SECRET_KEY_MIN_LENGTH: keys must be longer than 6 characters.
const minKeyLen = 6

// File is the content of plain_acl.yml, as RocketMQ 4.x writes it.
type File struct {
	GlobalWhiteRemoteAddresses []string      `yaml:"globalWhiteRemoteAddresses,omitempty"`
	Accounts                   []Account     `yaml:"accounts,omitempty"`
	DataVersion                []DataVersion `yaml:"dataVersion,omitempty"`
}

// Account is one entry of accounts. Absent default permissions are DENY,
// as in RocketMQ. Its String and LogValue never show the secret key.
type Account struct {
	AccessKey          Scalar   `yaml:"accessKey"`
	SecretKey          Scalar   `yaml:"secretKey"`
	WhiteRemoteAddress Scalar   `yaml:"whiteRemoteAddress,omitempty"`
	Admin              bool     `yaml:"admin"`
	DefaultTopicPerm   string   `yaml:"defaultTopicPerm,omitempty"`
	DefaultGroupPerm   string   `yaml:"defaultGroupPerm,omitempty"`
	TopicPerms         []string `yaml:"topicPerms,omitempty"`
	GroupPerms         []string `yaml:"groupPerms,omitempty"`
}

// String describes a without its secret key.
func (a Account) String() string {
	return fmt.Sprintf("{accessKey:%s admin:%v whiteRemoteAddress:%q defaultTopicPerm:%s defaultGroupPerm:%s topicPerms:%v groupPerms:%v}",
		a.AccessKey, a.Admin, a.WhiteRemoteAddress, a.DefaultTopicPerm, a.DefaultGroupPerm, a.TopicPerms, a.GroupPerms)
}

// GoString is String, so that %#v does not print the secret either.
func (a Account) GoString() string { return a.String() }

// LogValue is String, so that slog does not print the secret either.
func (a Account) LogValue() slog.Value { return slog.StringValue(a.String()) }

// DataVersion is RocketMQ's DataVersion, bumped on every update through
// the admin codes.
type DataVersion struct {
	Timestamp int64 `yaml:"timestamp" json:"timestamp"`
	Counter   int64 `yaml:"counter" json:"counter"`
}

// Scalar is a YAML scalar read as its literal text, so that an unquoted
// numeric secret (secretKey: 12345678, as in RocketMQ's sample file) is
// the string "12345678".
type Scalar string

// UnmarshalYAML accepts any scalar; null is "".
func (s *Scalar) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: expected a single value, found a %s", n.Line, kindName(n.Kind))
	}
	if n.Tag == "!!null" {
		*s = ""
		return nil
	}
	*s = Scalar(n.Value)
	return nil
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.SequenceNode:
		return "list"
	case yaml.MappingNode:
		return "map"
	case yaml.AliasNode:
		return "alias"
	}
	return "document"
}

// ParseFile strictly decodes plain_acl.yml (unknown keys are errors) and
// checks that its rules compile.
func ParseFile(data []byte) (*File, error) {
	f, _, err := parseAndCompile(data)
	return f, err
}

func parseAndCompile(data []byte) (*File, *rules, error) {
	if len(data) > MaxFileSize {
		return nil, nil, fmt.Errorf("%w: %d bytes, more than %d", ErrBadFile, len(data), MaxFileSize)
	}
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadFile, err)
	}
	r, err := compile(&f)
	if err != nil {
		return nil, nil, err
	}
	return &f, r, nil
}

// Marshal encodes f as plain_acl.yml.
func (f *File) Marshal() ([]byte, error) { return yaml.Marshal(f) }

// rules is a compiled File: what the Validator checks against.
type rules struct {
	global   []addrMatcher
	accounts map[string]*account
	version  DataVersion
}

type account struct {
	accessKey          string
	secret             []byte
	white              addrMatcher
	admin              bool
	defTopic, defGroup Perm
	topics, groups     map[string]Perm
}

func compile(f *File) (*rules, error) {
	r := &rules{accounts: make(map[string]*account, len(f.Accounts))}
	if len(f.DataVersion) > 0 {
		r.version = f.DataVersion[0]
	}
	for i, s := range f.GlobalWhiteRemoteAddresses {
		m, err := parseAddrPattern(s)
		if err != nil {
			return nil, fmt.Errorf("%w: globalWhiteRemoteAddresses[%d]: %v", ErrBadFile, i, err)
		}
		r.global = append(r.global, m)
	}
	for i := range f.Accounts {
		a, err := compileAccount(&f.Accounts[i])
		if err != nil {
			return nil, fmt.Errorf("%w: accounts[%d]: %v", ErrBadFile, i, err)
		}
		if _, dup := r.accounts[a.accessKey]; dup {
			return nil, fmt.Errorf("%w: accounts[%d]: accessKey %s appears twice", ErrBadFile, i, a.accessKey)
		}
		r.accounts[a.accessKey] = a
	}
	return r, nil
}

func compileAccount(c *Account) (*account, error) {
	ak, sk := strings.TrimSpace(string(c.AccessKey)), string(c.SecretKey)
	if len(ak) <= minKeyLen {
		return nil, fmt.Errorf("accessKey %q must be longer than %d characters", ak, minKeyLen)
	}
	if len(sk) <= minKeyLen {
		return nil, fmt.Errorf("accessKey %s: secretKey must be longer than %d characters", ak, minKeyLen)
	}
	a := &account{accessKey: ak, secret: []byte(sk), admin: c.Admin, defTopic: PermDeny, defGroup: PermDeny,
		topics: map[string]Perm{}, groups: map[string]Perm{}}
	var err error
	if a.white, err = parseAddrPattern(string(c.WhiteRemoteAddress)); err != nil {
		return nil, fmt.Errorf("accessKey %s: whiteRemoteAddress: %v", ak, err)
	}
	for name, d := range map[string]struct {
		src string
		dst *Perm
	}{"defaultTopicPerm": {c.DefaultTopicPerm, &a.defTopic}, "defaultGroupPerm": {c.DefaultGroupPerm, &a.defGroup}} {
		if d.src == "" {
			continue
		}
		if *d.dst, err = ParsePerm(d.src); err != nil {
			return nil, fmt.Errorf("accessKey %s: %s: %v", ak, name, err)
		}
	}
	if err := parseResourcePerms(c.TopicPerms, a.topics); err != nil {
		return nil, fmt.Errorf("accessKey %s: topicPerms%v", ak, err)
	}
	if err := parseResourcePerms(c.GroupPerms, a.groups); err != nil {
		return nil, fmt.Errorf("accessKey %s: groupPerms%v", ak, err)
	}
	return a, nil
}

// parseResourcePerms reads "name=PERM" entries (Permission.parseResourcePerms).
func parseResourcePerms(entries []string, into map[string]Perm) error {
	for i, e := range entries {
		name, p, ok := strings.Cut(e, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" || strings.Contains(p, "=") {
			return fmt.Errorf("[%d] %q is not name=PERM", i, e)
		}
		perm, err := ParsePerm(p)
		if err != nil {
			return fmt.Errorf("[%d] %q: %v", i, e, err)
		}
		into[name] = perm
	}
	return nil
}
