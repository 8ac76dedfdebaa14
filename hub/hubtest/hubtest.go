// Package hubtest is a Hugging Face Hub stand-in for tests, as net/http/httptest is a server:
// it serves repositories made of files in memory with the Hub's routes, headers, redirects
// and errors, from two loopback servers, the Hub and a "CDN" on another port.
//
// The protocol facts it follows come from huggingface_hub 2.5.0's source (file_download.py,
// constants.py, utils/_http.py, hf_api.py, utils/_pagination.py):
//
//   - GET /api/{models|datasets}/{id}/revision/{rev} answers JSON with "sha", the commit
//     (hf_api.py's repo_info); the revision is escaped whole, so refs/convert/parquet arrives
//     as refs%2Fconvert%2Fparquet.
//   - GET /api/{models|datasets}/{id}/tree/{rev}?recursive=true answers a JSON array of
//     {"type","path","size","oid","lfs":{"oid","size","pointerSize"}}, one page at a time,
//     the next page in a Link header with rel="next" (utils/_pagination.py).
//   - HEAD and GET /{id}/resolve/{rev}/{path} (datasets: /datasets/{id}/resolve/...) carry
//     X-Repo-Commit (the commit), ETag (a git file's blob id, quoted), and for an LFS file a
//     302 to the CDN with X-Linked-Etag (the sha256, quoted) and X-Linked-Size
//     (constants.py's HUGGINGFACE_HEADER_*; file_download.py's get_hf_file_metadata prefers
//     X-Linked-Etag to ETag and X-Linked-Size to Content-Length, which it ignores on a
//     redirect).
//   - A renamed repository answers its old name with a relative 307 to the new one, which
//     clients follow; a redirect to another origin (the CDN) is not followed for metadata and
//     the token must not reach it (utils/_http.py, _httpx2_follow_hub_redirects_with_backoff).
//   - Errors carry X-Error-Code and X-Error-Message (utils/_http.py's hf_raise_for_status):
//     401 RepoNotFound for a missing or private repository without access; 401 (no token) or
//     403 (a token without access) GatedRepo; 404 RevisionNotFound; 404 EntryNotFound with
//     X-Repo-Commit (file_download.py records it under .no_exist/<commit>/); 401 with the
//     message "Invalid credentials in Authorization header" for a token the Hub does not know.
//   - Bytes are served with Range requests answered 206 and Content-Range.
//
// Faults for the tests: a connection cut after N bytes (Cut), bytes whose sha256 is not the
// announced one (Corrupt), an unreachable Hub (Down), and a recorder of every request.
package hubtest

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Access is who may read a repository.
type Access int

// The accesses.
const (
	Public  Access = iota
	Private        // only with a token that has access; others get 401 RepoNotFound
	Gated          // only with a token that has access; others get 401/403 GatedRepo
)

// Request is one request the stand-in received.
type Request struct {
	// Server is "hub" or "cdn".
	Server string
	Method string
	// Path is the request's path (escaped, as sent).
	Path string
	// Range is the Range header; Auth whether an Authorization header came.
	Range string
	Auth  bool
	// Sent is the number of body bytes the answer carries (recorded as it starts).
	Sent int64
}

// Server is a running Hub stand-in. Its methods are safe for concurrent use.
type Server struct {
	// URL is the Hub's endpoint (HF_ENDPOINT); CDNURL the other origin large files redirect to.
	URL, CDNURL string
	// PageSize is the number of entries per page of the file list (default 1000).
	PageSize int
	// LFS decides which files the Hub stores outside git (served from the CDN); default:
	// names ending in .safetensors, .bin, .parquet, .model, .pt, .h5, .msgpack, .onnx, or 1 MiB
	// and more.
	LFS func(path string, size int) bool

	hub, cdn *httptest.Server
	mu       sync.Mutex
	repos    map[string]*repo // "model:org/name"
	renamed  map[string]string
	tokens   map[string]bool // known tokens
	blobs    map[string][]byte
	cuts     map[string]*cut
	corrupt  map[string]bool
	holds    map[string]chan struct{}
	stalls   map[string]bool
	down     bool
	stallHub bool
	log      []Request
}

type cut struct {
	after int64
	times int // <0: always
}

type repo struct {
	typ      string // "model" or "dataset"
	id       string
	access   Access
	allowed  map[string]bool       // tokens with access
	revs     map[string]string     // branch or tag -> commit
	commits  map[string]*commitObj // commit -> files
	lastMain string
}

type commitObj struct {
	files map[string][]byte
}

// NewServer starts a stand-in; Close stops it.
func NewServer() *Server {
	s := &Server{PageSize: 1000, repos: map[string]*repo{}, renamed: map[string]string{}, tokens: map[string]bool{},
		blobs: map[string][]byte{}, cuts: map[string]*cut{}, corrupt: map[string]bool{}, holds: map[string]chan struct{}{}, stalls: map[string]bool{}}
	s.hub = httptest.NewServer(http.HandlerFunc(s.serveHub))
	s.cdn = httptest.NewServer(http.HandlerFunc(s.serveCDN))
	s.URL, s.CDNURL = s.hub.URL, s.cdn.URL
	return s
}

// Setenv points the test's process at the stand-in (HF_ENDPOINT) and a fresh hub cache
// (HF_HUB_CACHE, returned), online, with no token, none of the machine's own Hugging Face
// variables left (t.Setenv: restored after the test).
func (s *Server) Setenv(t testing.TB) (cache string) {
	t.Helper()
	cache = t.TempDir()
	for _, v := range []string{"HF_HOME", "XDG_CACHE_HOME", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE",
		"TRANSFORMERS_OFFLINE", "HUGGINGFACE_HUB_CACHE", "HF_HUB_ETAG_TIMEOUT", "HF_HUB_DOWNLOAD_TIMEOUT"} {
		t.Setenv(v, "")
	}
	t.Setenv("HF_TOKEN_PATH", filepath.Join(cache, ".no-token"))
	t.Setenv("HF_ENDPOINT", s.URL)
	t.Setenv("HF_HUB_CACHE", cache)
	return cache
}

// Close stops both servers.
func (s *Server) Close() {
	s.hub.CloseClientConnections()
	s.cdn.CloseClientConnections()
	s.hub.Close()
	s.cdn.Close()
}

func key(typ, id string) string {
	if typ == "" {
		typ = "model"
	}
	return typ + ":" + id
}

// Commit adds a commit holding files (path -> bytes) to the repository typ ("model" or
// "dataset") id, creating it, moves the branch main to it and returns its hash.
func (s *Server) Commit(typ, id string, files map[string][]byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(typ, id)
	r := s.repos[k]
	if r == nil {
		if typ == "" {
			typ = "model"
		}
		r = &repo{typ: typ, id: id, allowed: map[string]bool{}, revs: map[string]string{}, commits: map[string]*commitObj{}}
		s.repos[k] = r
	}
	h := sha1.New()
	fmt.Fprintf(h, "parent %s\n", r.lastMain)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	c := &commitObj{files: map[string][]byte{}}
	for _, n := range names {
		b := slices.Clone(files[n])
		fmt.Fprintf(h, "%s %x\n", n, sha256.Sum256(b))
		c.files[n] = b
	}
	commit := hex.EncodeToString(h.Sum(nil))
	r.commits[commit] = c
	r.revs["main"] = commit
	r.lastMain = commit
	return commit
}

// Folder commits the files under dir (recursively) as Commit does.
func (s *Server) Folder(typ, id, dir string) (string, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = b
		return nil
	})
	if err != nil {
		return "", err
	}
	return s.Commit(typ, id, files), nil
}

// Ref points a branch or tag of a repository at a commit.
func (s *Server) Ref(typ, id, name, commit string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.repos[key(typ, id)].revs[name] = commit
}

// Protect makes a repository Private or Gated (or Public again), readable with the given
// tokens only.
func (s *Server) Protect(typ, id string, a Access, tokens ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.repos[key(typ, id)]
	r.access = a
	r.allowed = map[string]bool{}
	for _, t := range tokens {
		r.allowed[t] = true
	}
}

// Token makes a token known to the Hub (one it does not know is refused with 401).
func (s *Server) Token(tokens ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range tokens {
		s.tokens[t] = true
	}
}

// Rename makes the old id answer with a relative redirect to the new one.
func (s *Server) Rename(typ, oldID, newID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.renamed[key(typ, oldID)] = newID
}

// Cut makes the next times answers (times < 0: every answer) carrying the bytes of a file
// whose repository path is name stop after the first after bytes, the connection closed.
func (s *Server) Cut(name string, after int64, times int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cuts[name] = &cut{after: after, times: times}
}

// Corrupt makes the bytes served for the file name differ from the announced sha256 (same
// size, one byte changed).
func (s *Server) Corrupt(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.corrupt[name] = true
}

// Hold makes every GET of the file name wait, once recorded, until release is called (a
// download in flight that other processes find under way).
func (s *Server) Hold(name string) (release func()) {
	ch := make(chan struct{})
	s.mu.Lock()
	s.holds[name] = ch
	s.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

// Stall makes answers carrying the bytes of the file name send their headers and then
// nothing, until the client goes away (a download that stops making progress).
func (s *Server) Stall(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stalls[name] = true
}

// StallHub makes the Hub (not the CDN) accept requests and never answer them until the client
// goes away (a Hub too slow for the metadata timeout); StallHub(false) ends it.
func (s *Server) StallHub(stall bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stallHub = stall
}

// Down makes the Hub (not the CDN) drop every connection without answering, as an
// unreachable network would; Down(false) brings it back.
func (s *Server) Down(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

// BytesSent is the number of file bytes answered so far, both servers together.
func (s *Server) BytesSent() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, r := range s.log {
		n += r.Sent
	}
	return n
}

func (s *Server) record(server string, r *http.Request, sent int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, Request{Server: server, Method: r.Method, Path: r.URL.EscapedPath(), Range: r.Header.Get("Range"),
		Auth: r.Header.Get("Authorization") != "", Sent: sent})
}

func (s *Server) isLFS(name string, size int) bool {
	if s.LFS != nil {
		return s.LFS(name, size)
	}
	switch path.Ext(name) {
	case ".safetensors", ".bin", ".parquet", ".model", ".pt", ".h5", ".msgpack", ".onnx":
		return true
	}
	return size >= 1<<20
}

// gitBlobID is git's object id of a file: sha1("blob <size>\0" + bytes).
func gitBlobID(b []byte) string {
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", len(b))
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func fail(w http.ResponseWriter, status int, code, msg, commit string) {
	if code != "" {
		w.Header().Set("X-Error-Code", code)
	}
	w.Header().Set("X-Error-Message", msg)
	if commit != "" {
		w.Header().Set("X-Repo-Commit", commit)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// splitEscaped splits an escaped path into unescaped parts.
func splitEscaped(p string) []string {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	for i, s := range parts {
		if u, err := url.PathUnescape(s); err == nil {
			parts[i] = u
		}
	}
	return parts
}

// lookup finds the repository and checks access; ok false means an answer was written.
// redirect, when not "", is the new id of a renamed repository.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request, typ, id string) (rp *repo, redirect string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	auth := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	if auth != "" && !s.tokens[auth] {
		fail(w, http.StatusUnauthorized, "", "Invalid credentials in Authorization header", "")
		return nil, "", false
	}
	if n, ok := s.renamed[key(typ, id)]; ok {
		return nil, n, true
	}
	rp = s.repos[key(typ, id)]
	switch {
	case rp == nil, rp.access == Private && !rp.allowed[auth]:
		fail(w, http.StatusUnauthorized, "RepoNotFound", "Repository not found", "")
		return nil, "", false
	case rp.access == Gated && !rp.allowed[auth]:
		status := http.StatusUnauthorized
		if auth != "" {
			status = http.StatusForbidden
		}
		fail(w, status, "GatedRepo", fmt.Sprintf("Access to %s %s is restricted. You must have access to it and be authenticated to access it. Please log in.", rp.typ, id), "")
		return nil, "", false
	}
	return rp, "", true
}

// commitOf resolves a revision; "" when unknown.
func (rp *repo) commitOf(rev string) string {
	if c, ok := rp.revs[rev]; ok {
		return c
	}
	if _, ok := rp.commits[rev]; ok {
		return rev
	}
	return ""
}

func (s *Server) serveHub(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	down, stall := s.down, s.stallHub
	s.mu.Unlock()
	if down {
		s.record("hub", r, 0)
		panic(http.ErrAbortHandler) // the connection closed with no answer
	}
	if stall {
		s.record("hub", r, 0)
		<-r.Context().Done()
		return
	}
	parts := splitEscaped(r.URL.EscapedPath())
	if len(parts) >= 3 && parts[0] == "api" && (parts[1] == "models" || parts[1] == "datasets") {
		s.serveAPI(w, r, strings.TrimSuffix(parts[1], "s"), parts[2:])
		return
	}
	typ := "model"
	if len(parts) > 0 && parts[0] == "datasets" {
		typ, parts = "dataset", parts[1:]
	}
	i := slices.Index(parts, "resolve")
	if i < 1 || i > 2 || len(parts) < i+3 || (r.Method != http.MethodGet && r.Method != http.MethodHead) {
		s.record("hub", r, 0)
		fail(w, http.StatusNotFound, "", "Not found", "")
		return
	}
	id, rev, name := strings.Join(parts[:i], "/"), parts[i+1], strings.Join(parts[i+2:], "/")
	rp, newID, ok := s.lookup(w, r, typ, id)
	if !ok {
		s.record("hub", r, 0)
		return
	}
	if newID != "" {
		prefix := ""
		if typ == "dataset" {
			prefix = "/datasets"
		}
		s.record("hub", r, 0)
		w.Header().Set("Location", prefix+"/"+newID+"/resolve/"+url.PathEscape(rev)+"/"+name)
		w.WriteHeader(http.StatusTemporaryRedirect)
		return
	}
	s.mu.Lock()
	commit := rp.commitOf(rev)
	var b []byte
	var have bool
	if commit != "" {
		b, have = rp.commits[commit].files[name]
	}
	s.mu.Unlock()
	switch {
	case commit == "":
		s.record("hub", r, 0)
		fail(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev, "")
		return
	case !have:
		s.record("hub", r, 0)
		fail(w, http.StatusNotFound, "EntryNotFound", "Entry not found", commit)
		return
	}
	w.Header().Set("X-Repo-Commit", commit)
	w.Header().Set("Accept-Ranges", "bytes")
	if s.isLFS(name, len(b)) {
		sum := sha256Hex(b)
		s.mu.Lock()
		s.blobs[sum] = b
		s.mu.Unlock()
		w.Header().Set("X-Linked-Etag", `"`+sum+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(b)))
		w.Header().Set("ETag", `"`+gitBlobID([]byte("lfs pointer "+sum))+`"`)
		w.Header().Set("Location", s.CDNURL+"/blobs/"+sum+"?name="+url.QueryEscape(name)+"&signature=stand-in")
		s.record("hub", r, 0)
		w.WriteHeader(http.StatusFound)
		return
	}
	w.Header().Set("ETag", `"`+gitBlobID(b)+`"`)
	s.serveBytes(w, r, "hub", name, b)
}

// serveBytes answers a GET or HEAD for b, with Range, cuts and corruption applied.
func (s *Server) serveBytes(w http.ResponseWriter, r *http.Request, server, name string, b []byte) {
	s.mu.Lock()
	if s.corrupt[name] && len(b) > 0 {
		b = slices.Clone(b)
		b[len(b)/2] ^= 0xff
	}
	var c *cut
	if k := s.cuts[name]; k != nil && k.times != 0 && r.Method == http.MethodGet {
		c = &cut{after: k.after}
		if k.times > 0 {
			k.times--
		}
	}
	s.mu.Unlock()
	start := int64(0)
	status := http.StatusOK
	if rg := r.Header.Get("Range"); rg != "" && r.Method == http.MethodGet {
		from, ok := strings.CutPrefix(rg, "bytes=")
		from, _, _ = strings.Cut(from, "-")
		n, err := strconv.ParseInt(from, 10, 64)
		if !ok || err != nil || n < 0 {
			s.record(server, r, 0)
			http.Error(w, "bad range", http.StatusBadRequest)
			return
		}
		if n >= int64(len(b)) {
			s.record(server, r, 0)
			w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", len(b)))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		}
		start, status = n, http.StatusPartialContent
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", n, len(b)-1, len(b)))
	}
	body := b[start:]
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		s.record(server, r, 0)
		return
	}
	// Recorded before the bytes are written: a client may be done with them before this
	// handler returns.
	if c != nil && c.after < int64(len(body)) {
		s.record(server, r, c.after)
		_, _ = w.Write(body[:c.after])
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler) // the connection cut half-way
	}
	s.mu.Lock()
	hold, stall := s.holds[name], s.stalls[name]
	s.mu.Unlock()
	if stall {
		s.record(server, r, 0)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		<-r.Context().Done()
		return
	}
	s.record(server, r, int64(len(body)))
	if hold != nil {
		<-hold
	}
	_, _ = w.Write(body)
}

func (s *Server) serveCDN(w http.ResponseWriter, r *http.Request) {
	parts := splitEscaped(r.URL.EscapedPath())
	if len(parts) != 2 || parts[0] != "blobs" || r.URL.Query().Get("signature") == "" {
		s.record("cdn", r, 0)
		http.Error(w, "AccessDenied", http.StatusForbidden)
		return
	}
	s.mu.Lock()
	b, ok := s.blobs[parts[1]]
	s.mu.Unlock()
	if !ok {
		s.record("cdn", r, 0)
		http.Error(w, "NoSuchKey", http.StatusNotFound)
		return
	}
	w.Header().Set("ETag", `"`+parts[1]+`"`)
	s.serveBytes(w, r, "cdn", r.URL.Query().Get("name"), b)
}

type treeEntry struct {
	Type string   `json:"type"`
	Path string   `json:"path"`
	Size int      `json:"size"`
	OID  string   `json:"oid"`
	LFS  *lfsInfo `json:"lfs,omitempty"`
}

type lfsInfo struct {
	OID         string `json:"oid"`
	Size        int    `json:"size"`
	PointerSize int    `json:"pointerSize"`
}

// serveAPI answers /api/{type}s/{id}/revision/{rev} and /api/{type}s/{id}/tree/{rev}[/{path}].
func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, typ string, parts []string) {
	s.record("hub", r, 0)
	var i int
	for i = 1; i < len(parts) && parts[i] != "revision" && parts[i] != "tree"; i++ {
	}
	if i > 2 || i+1 >= len(parts) || r.Method != http.MethodGet {
		fail(w, http.StatusNotFound, "", "Not found", "")
		return
	}
	id, what, rev := strings.Join(parts[:i], "/"), parts[i], parts[i+1]
	rp, newID, ok := s.lookup(w, r, typ, id)
	if !ok {
		return
	}
	if newID != "" {
		w.Header().Set("Location", "/api/"+typ+"s/"+newID+"/"+what+"/"+url.PathEscape(rev))
		w.WriteHeader(http.StatusTemporaryRedirect)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	commit := rp.commitOf(rev)
	if commit == "" {
		fail(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev, "")
		return
	}
	files := rp.commits[commit].files
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	w.Header().Set("Content-Type", "application/json")
	if what == "revision" {
		sib := []map[string]string{}
		for _, n := range names {
			sib = append(sib, map[string]string{"rfilename": n})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"id": id, "sha": commit, "siblings": sib, "private": rp.access == Private,
			"gated": map[bool]any{true: "auto", false: false}[rp.access == Gated]})
		return
	}
	under := strings.Join(parts[i+2:], "/")
	recursive := r.URL.Query().Get("recursive") == "true" || r.URL.Query().Get("recursive") == "True"
	var all []treeEntry
	dirs := map[string]bool{}
	for _, n := range names {
		if under != "" && !strings.HasPrefix(n, under+"/") {
			continue
		}
		rest := strings.TrimPrefix(n, under+"/")
		if under == "" {
			rest = n
		}
		if d, _, isSub := strings.Cut(rest, "/"); isSub && !recursive {
			full := strings.TrimPrefix(under+"/"+d, "/")
			if !dirs[full] {
				dirs[full] = true
				all = append(all, treeEntry{Type: "directory", Path: full, OID: gitBlobID([]byte(full))})
			}
			continue
		}
		b := files[n]
		e := treeEntry{Type: "file", Path: n, Size: len(b), OID: gitBlobID(b)}
		if s.isLFS(n, len(b)) {
			e.LFS = &lfsInfo{OID: sha256Hex(b), Size: len(b), PointerSize: 134}
		}
		all = append(all, e)
	}
	if all == nil {
		all = []treeEntry{}
	}
	start, _ := strconv.Atoi(r.URL.Query().Get("cursor"))
	start = min(max(start, 0), len(all))
	end := min(start+max(s.PageSize, 1), len(all))
	if end < len(all) {
		q := r.URL.Query()
		q.Set("cursor", strconv.Itoa(end))
		next := *r.URL
		next.RawQuery = q.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<%s%s>; rel="next"`, s.URL, next.RequestURI()))
	}
	_ = json.NewEncoder(w).Encode(all[start:end])
}
