package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
)

// DefaultEndpoint is the Hub used when neither Options.Endpoint nor $HF_ENDPOINT is set.
const DefaultEndpoint = "https://huggingface.co"

// defaultTimeout is huggingface_hub's DEFAULT_ETAG_TIMEOUT and DEFAULT_DOWNLOAD_TIMEOUT.
const defaultTimeout = 10 * time.Second

// Options configures a Client; every zero field takes its value from the environment.
type Options struct {
	// Endpoint is the Hub's address; empty: $HF_ENDPOINT, else DefaultEndpoint.
	Endpoint string
	// CacheDir is the hub cache folder; empty: $HF_HUB_CACHE, $HUGGINGFACE_HUB_CACHE,
	// $HF_HOME/hub, $XDG_CACHE_HOME/huggingface/hub, ~/.cache/huggingface/hub.
	CacheDir string
	// Token is the access token; empty: $HF_TOKEN, $HUGGING_FACE_HUB_TOKEN, the file
	// $HF_TOKEN_PATH (default $HF_HOME/token).
	Token string
	// Offline reads the cache only; false: $HF_HUB_OFFLINE or $TRANSFORMERS_OFFLINE decide.
	Offline bool
	// Progress receives a progress bar per downloaded file; nil: none.
	Progress io.Writer
	// MetadataTimeout bounds a metadata request; 0: $HF_HUB_ETAG_TIMEOUT seconds, else 10 s.
	MetadataTimeout time.Duration
	// DownloadTimeout is the longest a download may wait for bytes; 0:
	// $HF_HUB_DOWNLOAD_TIMEOUT seconds, else 10 s.
	DownloadTimeout time.Duration
	// Transport carries the requests; nil: http.DefaultTransport's settings.
	Transport http.RoundTripper
}

// Client talks to one Hub and one cache. It is safe for concurrent use.
type Client struct {
	endpoint        *url.URL
	cache           string
	cacheFrom       string
	cred            *credential // a pointer, so that printing a Client shows no token
	offline         bool
	progress        io.Writer
	metaTimeout     time.Duration
	downloadTimeout time.Duration
	http            *http.Client
}

// credential holds the token; its methods never show it.
type credential struct{ token string }

func (c *credential) String() string   { return "<token set>" }
func (c *credential) GoString() string { return "<token set>" }

// New returns a client for opts, reading the environment for what opts leaves empty. A
// variable holding a value it cannot read is an error naming it.
func New(opts Options) (*Client, error) {
	c := &Client{progress: opts.Progress}
	ep := opts.Endpoint
	if ep == "" {
		ep = envvar.HFEndpoint.Value()
	}
	if ep == "" {
		ep = DefaultEndpoint
	}
	u, err := url.Parse(strings.TrimRight(ep, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("hub: endpoint %q (Options.Endpoint or $%s) is not an http(s) URL", ep, envvar.HFEndpoint.Name)
	}
	c.endpoint = u
	if opts.CacheDir != "" {
		c.cache, c.cacheFrom = opts.CacheDir, "the cache folder given"
	} else if c.cache, c.cacheFrom, err = DefaultCacheDir(); err != nil {
		return nil, err
	}
	tok := opts.Token
	if tok == "" {
		if tok, err = envToken(); err != nil {
			return nil, err
		}
	}
	if tok != "" {
		c.cred = &credential{token: tok}
	}
	c.offline = opts.Offline
	if !c.offline {
		if c.offline, err = EnvOffline(); err != nil {
			return nil, err
		}
	}
	if c.metaTimeout, err = envSeconds(opts.MetadataTimeout, envvar.HFHubEtagTimeout.Var); err != nil {
		return nil, err
	}
	if c.downloadTimeout, err = envSeconds(opts.DownloadTimeout, envvar.HFHubDownloadTimeout.Var); err != nil {
		return nil, err
	}
	tr := opts.Transport
	if tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.DisableCompression = true // sizes are the files' (huggingface_hub asks Accept-Encoding: identity)
		tr = t
	}
	c.http = &http.Client{Transport: tr, CheckRedirect: c.checkRedirect}
	return c, nil
}

// CacheDir is the hub cache folder the client reads and fills.
func (c *Client) CacheDir() string { return c.cache }

// Endpoint is the Hub's address.
func (c *Client) Endpoint() string { return c.endpoint.String() }

// Offline reports whether the client reads the cache only.
func (c *Client) Offline() bool { return c.offline }

// DefaultCacheDir returns the hub cache folder the environment names, in huggingface_hub's
// order (constants.py: HF_HUB_CACHE, else HUGGINGFACE_HUB_CACHE, else HF_HOME/hub, HF_HOME
// defaulting to XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface), and where it came from.
func DefaultCacheDir() (dir, from string, err error) {
	for _, v := range []*envvar.Var{envvar.HFHubCache.Var, envvar.HuggingFaceHubCache.Var} {
		if s := v.Value(); s != "" {
			return expand(s), "$" + v.Name, nil
		}
	}
	home, from, err := hfHome()
	if err != nil {
		return "", "", err
	}
	return filepath.Join(home, "hub"), from + "/hub", nil
}

// hfHome is huggingface_hub's HF_HOME: $HF_HOME, else $XDG_CACHE_HOME/huggingface, else
// ~/.cache/huggingface.
func hfHome() (dir, from string, err error) {
	if s := envvar.HFHome.Value(); s != "" {
		return expand(s), "$" + envvar.HFHome.Name, nil
	}
	if s := envvar.XDGCacheHome.Value(); s != "" {
		return filepath.Join(expand(s), "huggingface"), "$" + envvar.XDGCacheHome.Name + "/huggingface", nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", "", fmt.Errorf("hub: no cache folder: none of $%s, $%s, $%s is set and the home folder is unknown: %w",
			envvar.HFHubCache.Name, envvar.HFHome.Name, envvar.XDGCacheHome.Name, err)
	}
	return filepath.Join(home, ".cache", "huggingface"), "~/.cache/huggingface", nil
}

// expand is os.path.expanduser(s), as constants.py applies to the cache variables (its
// expandvars, $VAR inside a value, is not done: the shell has done it for a value typed).
func expand(s string) string {
	if s == "~" || strings.HasPrefix(s, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			s = filepath.Join(home, s[1:])
		}
	}
	return s
}

// envToken is huggingface_hub's get_token without an explicit token: $HF_TOKEN, else
// $HUGGING_FACE_HUB_TOKEN, else the file at $HF_TOKEN_PATH (default $HF_HOME/token), trimmed.
func envToken() (string, error) {
	for _, v := range []*envvar.Var{envvar.HFToken.Var, envvar.HFHubToken.Var} {
		if s := strings.TrimSpace(v.Value()); s != "" {
			return s, nil
		}
	}
	path := envvar.HFTokenPath.Value()
	if path != "" {
		path = expand(path)
	} else {
		home, _, err := hfHome()
		if err != nil {
			return "", nil // no home, no token file: anonymous
		}
		path = filepath.Join(home, "token")
	}
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("hub: the token file %s ($%s): %w", path, envvar.HFTokenPath.Name, err)
	}
	return strings.TrimSpace(string(b)), nil
}

// EnvOffline reads $HF_HUB_OFFLINE, else $TRANSFORMERS_OFFLINE, with huggingface_hub's true
// values (1, ON, YES, TRUE, any case); 0, OFF, NO, FALSE and empty are false, anything else
// an error naming the variable.
func EnvOffline() (bool, error) {
	for _, v := range []*envvar.Var{envvar.HFHubOffline.Var, envvar.TransformersOffline.Var} {
		s := v.Value()
		if s == "" {
			continue
		}
		switch strings.ToUpper(strings.TrimSpace(s)) {
		case "1", "ON", "YES", "TRUE":
			return true, nil
		case "0", "OFF", "NO", "FALSE":
			return false, nil
		}
		return false, fmt.Errorf("hub: $%s=%s: want 1/ON/YES/TRUE or 0/OFF/NO/FALSE", v.Name, s)
	}
	return false, nil
}

// envSeconds returns d, else v's whole seconds, else defaultTimeout (constants.py's _as_int,
// where 0 means the default too).
func envSeconds(d time.Duration, v *envvar.Var) (time.Duration, error) {
	if d > 0 {
		return d, nil
	}
	s := strings.TrimSpace(v.Value())
	if s == "" {
		return defaultTimeout, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("hub: $%s=%s: want whole seconds", v.Name, s)
	}
	if n == 0 {
		return defaultTimeout, nil
	}
	return time.Duration(n) * time.Second, nil
}

// origin is a URL's (scheme, host, port), the port made explicit: the token goes to the
// endpoint's origin only (utils/_http.py compares origins the same way before following a
// metadata redirect).
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// checkRedirect drops the token from a redirect that leaves the endpoint's origin (a CDN,
// which authenticates by a signed URL). Go's own rule keeps it for another port of the same
// host name, which this rule does not.
func (c *Client) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("too many redirects")
	}
	if origin(req.URL) != origin(c.endpoint) {
		req.Header.Del("Authorization")
	}
	return nil
}

// newRequest makes a request with the token when u is on the endpoint's origin.
func (c *Client) newRequest(ctx context.Context, method string, u *url.URL) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "goaccel-hub/1")
	req.Header.Set("Accept-Encoding", "identity")
	if c.cred != nil && origin(u) == origin(c.endpoint) {
		req.Header.Set("Authorization", "Bearer "+c.cred.token)
	}
	return req, nil
}

// url joins the endpoint and an escaped path.
func (c *Client) url(escapedPath string) *url.URL {
	u := *c.endpoint
	u.RawPath = strings.TrimRight(c.endpoint.EscapedPath(), "/") + escapedPath
	p, err := url.PathUnescape(u.RawPath)
	if err != nil {
		p = u.RawPath
	}
	u.Path = p
	u.RawQuery = ""
	return &u
}

// escapePath escapes each "/"-separated part of a repository path.
func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// statusError maps a failed answer to an HTTPError with its kind, as utils/_http.py's
// hf_raise_for_status reads X-Error-Code and X-Error-Message: RevisionNotFound, EntryNotFound,
// GatedRepo, RepoNotFound (also a bare 401 on a repository URL: the Hub answers a private
// or missing repository alike), and a 401 whose message is "Invalid credentials in
// Authorization header" (the token itself refused).
func statusError(resp *http.Response) error {
	e := &HTTPError{Method: resp.Request.Method, URL: resp.Request.URL.String(), Status: resp.StatusCode,
		Code: resp.Header.Get("X-Error-Code"), Message: resp.Header.Get("X-Error-Message"),
		Commit: resp.Header.Get("X-Repo-Commit")}
	if e.Message == "" && resp.Request.Method != http.MethodHead {
		var body struct {
			Error string `json:"error"`
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		if json.Unmarshal(b, &body) == nil {
			e.Message = body.Error
		}
	}
	switch {
	case e.Code == "RevisionNotFound":
		e.kind = ErrRevisionNotFound
	case e.Code == "EntryNotFound":
		e.kind = ErrEntryNotFound
	case e.Code == "GatedRepo":
		e.kind = ErrGated
	case e.Status == http.StatusUnauthorized && e.Message == "Invalid credentials in Authorization header":
		e.kind = ErrBadToken
	case e.Code == "RepoNotFound" || e.Status == http.StatusUnauthorized:
		e.kind = ErrRepoNotFound
	}
	return e
}

// Unreachable reports whether err is a failure to reach the Hub (network, timeout, 5xx, 429),
// after which huggingface_hub falls back to the cache, rather than an answer of the Hub.
func Unreachable(err error) bool { return transient(err) }

func transient(err error) bool {
	var he *HTTPError
	if errors.As(err, &he) {
		return he.Status >= 500 || he.Status == http.StatusTooManyRequests
	}
	var ne net.Error
	var ue *url.Error
	return errors.As(err, &ne) || errors.As(err, &ue) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.ErrUnexpectedEOF)
}

// getJSON GETs an API URL (following pages by the Link header when next is given) into v.
func (c *Client) getJSON(ctx context.Context, u *url.URL, v any) (next *url.URL, err error) {
	ctx, cancel := context.WithTimeout(ctx, c.metaTimeout)
	defer cancel()
	req, err := c.newRequest(ctx, http.MethodGet, u)
	if err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(resp)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return nil, fmt.Errorf("hub: GET %s: %w", u, err)
	}
	return nextLink(resp.Header.Get("Link"), u), nil
}

// nextLink is the rel="next" URL of a Link header (the pagination huggingface_hub's
// utils/_pagination.py follows), resolved against base.
func nextLink(h string, base *url.URL) *url.URL {
	for _, part := range strings.Split(h, ",") {
		target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
		if !ok || !strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="next"`) {
			continue
		}
		target = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(target), "<"), ">")
		if u, err := base.Parse(target); err == nil {
			return u
		}
	}
	return nil
}
