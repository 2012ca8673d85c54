package acl

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/remoting"
)

// Config configures a Validator.
type Config struct {
	// File is the plain_acl.yml path. It must exist when the Validator
	// opens: an ACL without rules would refuse every client.
	File string
	// ReloadInterval is how often the file is checked for changes (1 s;
	// RocketMQ's FileWatchService checks every 500 ms).
	ReloadInterval time.Duration
	// Clock runs the reload ticker; nil means the wall clock.
	Clock clockwork.Clock
	// Logger receives reloads, rejected edits and denials
	// (slog.Default()). Secrets and signatures are never logged.
	Logger *slog.Logger
	// OnReload, if set, is called after every reload attempt with its
	// outcome (nil on success), e.g. to count failures in a metric.
	OnReload func(err error)
}

// DefaultReloadInterval is Config.ReloadInterval's default.
const DefaultReloadInterval = time.Second

// Denial reasons, the values of Denial.Reason (and metric labels).
const (
	ReasonUnsigned     = "unsigned"
	ReasonUnknownKey   = "unknown_access_key"
	ReasonBadSignature = "bad_signature"
	ReasonNotAdmin     = "not_admin"
	ReasonNoPermission = "no_permission"
	ReasonBadRequest   = "bad_request"
)

// Denial is a refused request: the server answers NO_PERMISSION (16) with
// Remark.
type Denial struct {
	Reason    string // one of the Reason constants
	AccessKey string // the claimed access key ("" when none)
	Remark    string // for the client: names the missing permission
}

func (d *Denial) Error() string { return d.Remark }

// Validator checks requests against plain_acl.yml rules and reloads them
// when the file changes. It is safe for concurrent use.
type Validator struct {
	cfg   Config
	log   *slog.Logger
	rules atomic.Pointer[rules]

	mu      sync.Mutex // serialises reloads and updates of the file
	lastSum [sha256.Size]byte
	pending [sha256.Size]byte // a changed content seen once by the watcher (watcher only)

	stop, done chan struct{}
	closeOnce  sync.Once
}

// Open loads cfg.File and starts watching it. Close stops the watcher.
func Open(cfg Config) (*Validator, error) {
	if cfg.ReloadInterval <= 0 {
		cfg.ReloadInterval = DefaultReloadInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	v := &Validator{cfg: cfg, log: cfg.Logger, stop: make(chan struct{}), done: make(chan struct{})}
	data, err := readFile(cfg.File)
	if err != nil {
		return nil, err
	}
	_, r, err := parseAndCompile(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.File, err)
	}
	v.rules.Store(r)
	v.lastSum = sha256.Sum256(data)
	v.log.Info("acl: rules loaded", "file", cfg.File, "accounts", len(r.accounts), "globalWhiteRemoteAddresses", len(r.global))
	go v.watch()
	return v, nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("acl: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("acl: read %s: %w", path, err)
	}
	return data, nil
}

// Close stops watching the file.
func (v *Validator) Close() error {
	v.closeOnce.Do(func() { close(v.stop) })
	<-v.done
	return nil
}

func (v *Validator) watch() {
	defer close(v.done)
	t := v.cfg.Clock.NewTicker(v.cfg.ReloadInterval)
	defer t.Stop()
	for {
		select {
		case <-v.stop:
			return
		case <-t.Chan():
			v.poll()
		}
	}
}

// poll reloads the file once a change has been stable for one interval,
// so that an editor's truncate-then-write is not read half-written.
func (v *Validator) poll() {
	data, err := readFile(v.cfg.File)
	if err != nil {
		_, _ = v.Reload() // reports the error (once)
		return
	}
	sum := sha256.Sum256(data)
	v.mu.Lock()
	unchanged := sum == v.lastSum
	v.mu.Unlock()
	if unchanged || sum != v.pending {
		v.pending = sum
		return
	}
	_, _ = v.Reload()
}

// Reload rereads the file. If its content changed, is not empty and parses, the new
// rules replace the old ones at once (requests see either the old or the
// new rules, never a mix); if it does not parse, the last good rules stay
// and the error is logged at ERROR and returned. changed reports whether
// new rules were installed.
func (v *Validator) Reload() (changed bool, err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	data, err := readFile(v.cfg.File)
	if err == nil && sha256.Sum256(data) == v.lastSum {
		return false, nil
	}
	var r *rules
	if err == nil && len(bytes.TrimSpace(data)) == 0 {
		err = fmt.Errorf("%w: the file is empty (to refuse everyone, keep an accounts list without the accounts)", ErrBadFile)
	}
	if err == nil {
		_, r, err = parseAndCompile(data)
	}
	if err != nil {
		v.lastSum = sha256.Sum256(data) // report a broken edit once, not every interval
		v.log.Error("acl: file change rejected; the previous rules stay in force", "file", v.cfg.File, "err", err)
		v.reloaded(err)
		return false, err
	}
	v.rules.Store(r)
	v.lastSum = sha256.Sum256(data)
	v.log.Info("acl: rules reloaded", "file", v.cfg.File, "accounts", len(r.accounts), "globalWhiteRemoteAddresses", len(r.global))
	v.reloaded(nil)
	return true, nil
}

func (v *Validator) reloaded(err error) {
	if v.cfg.OnReload != nil {
		v.cfg.OnReload(err)
	}
}

// Check decides whether req, from a client at remote, may be served;
// nil means yes. The order is RocketMQ's: a global white address passes
// everything; then the AccessKey must name an account; an account's white
// address passes without a signature; otherwise the signature must match
// and the account must hold every permission the request needs.
func (v *Validator) Check(req *remoting.RemotingCommand, remote netip.Addr) *Denial {
	if IsOpenCode(req.Code) {
		return nil
	}
	r := v.rules.Load()
	remote = remote.Unmap()
	for _, m := range r.global {
		if m.match(remote) {
			return nil
		}
	}
	ak, hasKey := req.Ext(FieldAccessKey)
	if !hasKey || ak == "" {
		return &Denial{Reason: ReasonUnsigned, Remark: fmt.Sprintf("ACL: request code %d has no AccessKey; sign it (the client's credentials)", req.Code)}
	}
	acc := r.accounts[ak]
	if acc == nil {
		return &Denial{Reason: ReasonUnknownKey, AccessKey: ak, Remark: fmt.Sprintf("ACL: no account for accessKey=%s", ak)}
	}
	if acc.white.match(remote) {
		return nil
	}
	if !verify(Content(req.ExtMap(), req.Body), acc.secret, req.ExtMap()[FieldSignature]) {
		return &Denial{Reason: ReasonBadSignature, AccessKey: ak, Remark: fmt.Sprintf("ACL: signature check failed for accessKey=%s", ak)}
	}
	if IsAdminCode(req.Code) && !acc.admin {
		return &Denial{Reason: ReasonNotAdmin, AccessKey: ak,
			Remark: fmt.Sprintf("ACL: request code %d needs an admin account; accessKey=%s is not admin", req.Code, ak)}
	}
	needs, err := Needs(req)
	if err != nil {
		return &Denial{Reason: ReasonBadRequest, AccessKey: ak, Remark: fmt.Sprintf("ACL: %v", err)}
	}
	for _, n := range needs {
		if !acc.grants(n) {
			return &Denial{Reason: ReasonNoPermission, AccessKey: ak,
				Remark: fmt.Sprintf("ACL: accessKey=%s has no %s permission on %s %s", ak, n.Perm, n.Kind, n.Name)}
		}
	}
	return nil
}

// grants is PlainPermissionManager.checkPerm for one resource: an admin
// without resource rules may do anything; otherwise the resource's own
// rule, or else the account's default for its kind, decides.
func (a *account) grants(n Need) bool {
	if n.Name == "" {
		return true
	}
	if a.admin && len(a.topics) == 0 && len(a.groups) == 0 {
		return true
	}
	table, def := a.topics, a.defTopic
	if n.Kind == Group {
		table, def = a.groups, a.defGroup
	}
	if p, ok := table[n.Name]; ok {
		return p.allows(n.Perm)
	}
	return def.allows(n.Perm)
}

// CheckResource decides whether the account of req, which Check already
// admitted, holds need: for requests whose resource is known only after
// they are served (VIEW_MESSAGE_BY_ID names a message by offset; its topic
// is in the message). White addresses pass, as in Check.
func (v *Validator) CheckResource(req *remoting.RemotingCommand, remote netip.Addr, need Need) *Denial {
	r := v.rules.Load()
	remote = remote.Unmap()
	for _, m := range r.global {
		if m.match(remote) {
			return nil
		}
	}
	ak, _ := req.Ext(FieldAccessKey)
	acc := r.accounts[ak]
	if acc == nil {
		return &Denial{Reason: ReasonUnknownKey, AccessKey: ak, Remark: fmt.Sprintf("ACL: no account for accessKey=%s", ak)}
	}
	if acc.white.match(remote) || acc.grants(need) {
		return nil
	}
	return &Denial{Reason: ReasonNoPermission, AccessKey: ak,
		Remark: fmt.Sprintf("ACL: accessKey=%s has no %s permission on %s %s", ak, need.Perm, need.Kind, need.Name)}
}

// TopicNeed returns the permission perm on topic, where a retry or
// dead-letter topic is its consumer group's.
func TopicNeed(topic string, perm Perm) Need { return topicNeed(topic, perm) }

// HasExplicitPub reports whether accessKey may create topic: it is an
// admin, or its topicPerms name topic with PUB. A default topic
// permission lets an account publish to existing topics, not create new
// ones. A request that passed Check through a white address (no account
// checked) gets false unless the address is globally white.
func (v *Validator) HasExplicitPub(accessKey, topic string, remote netip.Addr) bool {
	r := v.rules.Load()
	remote = remote.Unmap()
	for _, m := range r.global {
		if m.match(remote) {
			return true
		}
	}
	a := r.accounts[accessKey]
	if a == nil {
		return false
	}
	if a.admin {
		return true
	}
	p, ok := a.topics[topic]
	return ok && p.allows(PermPub)
}

// File returns the path of the rules file.
func (v *Validator) File() string { return v.cfg.File }
