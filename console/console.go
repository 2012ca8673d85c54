package console

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/rocketstore/rocketstore/acl"
	"github.com/rocketstore/rocketstore/admin"
	"github.com/rocketstore/rocketstore/cluster"
	"github.com/rocketstore/rocketstore/remoting"
)

//go:embed static
var static embed.FS

// Config configures a Console.
type Config struct {
	// NameServers are the name-server addresses the console administers.
	NameServers []string
	// Timeout bounds each request to a name server or broker (0: 5 s).
	Timeout time.Duration
	// ACL, when set, makes every page and API call require HTTP basic
	// authentication with an admin account of this validator (access key
	// and secret key), and signs the console's requests with it.
	ACL *acl.Validator
	// Logger receives the console's errors and changes (nil: discard).
	Logger *slog.Logger
	// Clock runs the statistics sampler (a sample a second) and dates
	// its samples; nil means the wall clock.
	Clock clockwork.Clock
	// Replication, when set, returns the replicated broker group of the
	// console's node and its members' state, for the replication page
	// (cmd/rocketstore sets it on a replica to cluster.Dialer.Members of
	// its Raft address). Nil: the page says the node has no group.
	Replication func(ctx context.Context) (cluster.GroupInfo, []cluster.MemberStatus, error)
}

// Console serves the web console.
type Console struct {
	cfg Config
	log *slog.Logger
	mux *http.ServeMux

	mu      sync.Mutex
	clients map[string]*admin.Client // by access key ("" without ACL)

	hist history
}

// New returns a console for cfg.
func New(cfg Config) (*Console, error) {
	if len(cfg.NameServers) == 0 {
		return nil, errors.New("console: no name server address")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Console{cfg: cfg, log: log, mux: http.NewServeMux(), clients: map[string]*admin.Client{}}
	sub, err := fs.Sub(static, "static")
	if err != nil {
		return nil, err
	}
	c.mux.Handle("GET /", http.FileServerFS(sub))
	c.routes()
	if cfg.ACL == nil {
		// No credentials needed: sample from the start, so that the
		// first page load shows the last minutes.
		cl, err := c.clientOf(account{})
		if err != nil {
			return nil, err
		}
		c.startHistory(cl)
	}
	return c, nil
}

// Close stops the statistics sampler and closes the console's
// connections to the cluster.
func (c *Console) Close() error {
	c.hist.close()
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for k, cl := range c.clients {
		errs = append(errs, cl.Close())
		delete(c.clients, k)
	}
	return errors.Join(errs...)
}

// ServeHTTP authenticates the request (with ACL on) and serves it.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:")
	user, ok := c.authenticate(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Basic realm="rocketstore console (ACL admin account)"`)
		http.Error(w, "an ACL admin account is required (access key as user, secret key as password)", http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Header.Get("X-Rocketstore-Console") != "1" {
		http.Error(w, "state-changing requests need the X-Rocketstore-Console header", http.StatusForbidden)
		return
	}
	c.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, user)))
}

type userKey struct{}

// account is an authenticated console user.
type account struct{ accessKey, secretKey string }

// authenticate checks basic auth against the ACL: the credentials must
// sign a request for an admin-only code (UPDATE_AND_CREATE_TOPIC) that the
// validator accepts, so the validator's own rules decide.
func (c *Console) authenticate(r *http.Request) (account, bool) {
	if c.cfg.ACL == nil {
		return account{}, true
	}
	ak, sk, ok := r.BasicAuth()
	if !ok || ak == "" {
		return account{}, false
	}
	probe := remoting.NewRequest(17, nil)
	probe.SetExt("topic", "console-login-probe")
	acl.SignRequest(probe, ak, sk, "")
	remote := netip.MustParseAddr("127.0.0.1")
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if a, err := netip.ParseAddr(host); err == nil {
			remote = a
		}
	}
	if d := c.cfg.ACL.Check(probe, remote); d != nil {
		c.log.Warn("console login refused", "accessKey", ak, "remote", r.RemoteAddr, "reason", d.Reason)
		return account{}, false
	}
	// A globally white-listed address passes Check unsigned; the console
	// still wants a named admin account.
	f, _, err := c.cfg.ACL.Snapshot()
	if err != nil {
		c.log.Error("console login: ACL file unreadable", "err", err)
		return account{}, false
	}
	admin := false
	for _, a := range f.Accounts {
		admin = admin || (string(a.AccessKey) == ak && a.Admin)
	}
	if !admin {
		c.log.Warn("console login refused", "accessKey", ak, "remote", r.RemoteAddr, "reason", acl.ReasonNotAdmin)
		return account{}, false
	}
	return account{accessKey: ak, secretKey: sk}, true
}

// client returns the admin client of the request's user.
func (c *Console) client(r *http.Request) (*admin.Client, error) {
	u, _ := r.Context().Value(userKey{}).(account)
	return c.clientOf(u)
}

// clientOf returns u's admin client, creating it the first time.
func (c *Console) clientOf(u account) (*admin.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[u.accessKey]; ok {
		return cl, nil
	}
	cl, err := admin.NewClient(c.cfg.NameServers, c.cfg.Timeout)
	if err != nil {
		return nil, err
	}
	if u.accessKey != "" {
		cl.Sign = func(req *remoting.RemotingCommand) { acl.SignRequest(req, u.accessKey, u.secretKey, "") }
	}
	c.clients[u.accessKey] = cl
	return cl, nil
}

// apiError is an API failure: a status and a message the page shows.
type apiError struct {
	status int
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badInput(format string, a ...any) error {
	return &apiError{status: http.StatusBadRequest, msg: fmt.Sprintf(format, a...)}
}

func notFound(format string, a ...any) error {
	return &apiError{status: http.StatusNotFound, msg: fmt.Sprintf(format, a...)}
}

// api adapts a handler that returns a value or an error to JSON.
func (c *Console) api(h func(r *http.Request, cl *admin.Client) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		cl, err := c.client(r)
		var v any
		if err == nil {
			v, err = h(r, cl)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if err != nil {
			status := http.StatusBadGateway // the cluster refused or failed
			var ae *apiError
			if errors.As(err, &ae) {
				status = ae.status
			}
			if status >= 500 {
				c.log.Warn("console request failed", "path", r.URL.Path, "err", err)
			}
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		_ = json.NewEncoder(w).Encode(v)
	}
}

// decodeBody reads a JSON request body of at most 1 MiB into v.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badInput("bad request body: %v", err)
	}
	return nil
}

// Serve serves the console on ln until ctx ends, then shuts down.
func (c *Console) Serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{Handler: c, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := hs.Shutdown(sctx)
		if serr := <-errc; err == nil && !errors.Is(serr, http.ErrServerClosed) {
			err = serr
		}
		return err
	}
}
