package hub

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/schollz/progressbar/v3"
)

// FileInfo is a file's metadata as the Hub's HEAD /{id}/resolve/{rev}/{path} gives it.
type FileInfo struct {
	// Path is the file's path in the repository.
	Path string
	// Commit is the commit the revision resolved to (X-Repo-Commit).
	Commit string
	// ETag names the blob: X-Linked-Etag (an LFS file's sha256) else ETag, quotes and W/
	// removed (file_download.py's _normalize_etag).
	ETag string
	// Size is X-Linked-Size, else the answer's Content-Length; -1 when neither was sent.
	Size int64
	// location is where the bytes are: the resolve URL, or the CDN URL the Hub redirected to.
	location *url.URL
}

// safeETag is what a blob name may be.
var safeETag = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// fileURL is {endpoint}/[datasets/]{id}/resolve/{rev}/{path}, the revision escaped whole
// (file_download.py's hf_hub_url).
func (c *Client) fileURL(repo Repo, name string) *url.URL {
	return c.url("/" + repo.typ().urlPrefix() + escapePath(repo.ID) + "/resolve/" + url.PathEscape(repo.revision()) + "/" + escapePath(name))
}

// Metadata asks the Hub for name's metadata at repo's revision. Redirects on the endpoint's
// origin (a renamed repository's relative redirect) are followed; one to another origin (the
// CDN) is not: its answer carries the metadata, and the bytes are fetched from its Location
// later, without the token (utils/_http.py's _httpx2_follow_hub_redirects_with_backoff).
func (c *Client) Metadata(ctx context.Context, repo Repo, name string) (FileInfo, error) {
	if err := repo.check(); err != nil {
		return FileInfo{}, err
	}
	if err := checkName(name); err != nil {
		return FileInfo{}, fmt.Errorf("hub: %s: %w", repo, err)
	}
	if c.offline {
		return FileInfo{}, fmt.Errorf("hub: %s: %s: metadata needs the Hub, and the client is offline: %w", repo, name, ErrNotCached)
	}
	ctx, cancel := context.WithTimeout(ctx, c.metaTimeout)
	defer cancel()
	noFollow := &http.Client{Transport: c.http.Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	u := c.fileURL(repo, name)
	for range 10 {
		req, err := c.newRequest(ctx, http.MethodHead, u)
		if err != nil {
			return FileInfo{}, err
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			return FileInfo{}, fmt.Errorf("hub: %s: %s: %w", repo, name, err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 400 {
			return FileInfo{}, fmt.Errorf("hub: %s: %s: %w", repo, name, statusError(resp))
		}
		loc := u
		redirect := resp.StatusCode >= 300 && resp.Header.Get("Location") != ""
		if redirect {
			target, err := u.Parse(resp.Header.Get("Location"))
			if err != nil {
				return FileInfo{}, fmt.Errorf("hub: %s: %s: a redirect to %q: %w", repo, name, resp.Header.Get("Location"), err)
			}
			if origin(target) == origin(u) {
				u = target
				continue
			}
			loc = target
		}
		return fileInfo(repo, name, resp, redirect, loc)
	}
	return FileInfo{}, fmt.Errorf("hub: %s: %s: more than 10 redirects", repo, name)
}

func fileInfo(repo Repo, name string, resp *http.Response, redirect bool, loc *url.URL) (FileInfo, error) {
	fi := FileInfo{Path: name, Commit: resp.Header.Get("X-Repo-Commit"), Size: -1, location: loc}
	etag := resp.Header.Get("X-Linked-Etag")
	if etag == "" {
		etag = resp.Header.Get("ETag")
	}
	fi.ETag = strings.Trim(strings.TrimLeft(etag, "W/"), `"`)
	size := resp.Header.Get("X-Linked-Size")
	if size == "" && !redirect {
		size = resp.Header.Get("Content-Length")
	}
	if size != "" {
		n, err := strconv.ParseInt(size, 10, 64)
		if err != nil || n < 0 {
			return FileInfo{}, fmt.Errorf("hub: %s: %s: the Hub's size %q is not a number", repo, name, size)
		}
		fi.Size = n
	}
	switch {
	case fi.Commit == "":
		return FileInfo{}, fmt.Errorf("hub: %s: %s: the Hub's answer has no X-Repo-Commit header (a proxy in the way?)", repo, name)
	case !commitHash.MatchString(fi.Commit):
		return FileInfo{}, fmt.Errorf("hub: %s: %s: the Hub's commit %q is not a commit hash: %w", repo, name, fi.Commit, ErrUnsafePath)
	case fi.ETag == "":
		return FileInfo{}, fmt.Errorf("hub: %s: %s: the Hub's answer has no ETag (a proxy in the way?)", repo, name)
	case !safeETag.MatchString(fi.ETag) || fi.ETag == "." || fi.ETag == "..":
		return FileInfo{}, fmt.Errorf("hub: %s: %s: the Hub's etag %q is not a blob name: %w", repo, name, fi.ETag, ErrUnsafePath)
	}
	return fi, nil
}

// Download returns the cached path of name at repo's revision (a symlink in the snapshot
// folder), downloading its blob first when the cache lacks it, as huggingface_hub's
// hf_hub_download does: the ref of a branch or tag is written, the blob is written as
// blobs/<etag>.incomplete under the flock of .locks/<repo folder>/<etag>.lock (so one process
// downloads while the others wait, then find the blob), resumed by a Range request after an
// interruption (in this call, up to 5 times, or in a later one), checked for its size and, for
// an LFS file, its sha256, then renamed into place. A file the revision lacks is recorded in
// .no_exist/. Offline, or when the Hub cannot be reached (network, 5xx, or a refusal of the
// repository), the cache answers alone.
func (c *Client) Download(ctx context.Context, repo Repo, name string) (string, error) {
	if err := repo.check(); err != nil {
		return "", err
	}
	if err := checkName(name); err != nil {
		return "", fmt.Errorf("hub: %s: %w", repo, err)
	}
	storage := filepath.Join(c.cache, repo.Folder())
	if rev := repo.revision(); commitHash.MatchString(rev) {
		if p, err := c.cachedFile(repo, name); err == nil {
			return p, nil
		}
	}
	if c.offline {
		p, err := c.cachedFile(repo, name)
		if err != nil {
			return "", fmt.Errorf("%w (offline: $%s or $%s is set, or Options.Offline)", err, envvar.HFHubOffline.Name, envvar.TransformersOffline.Name)
		}
		return p, nil
	}
	info, err := c.Metadata(ctx, repo, name)
	if err != nil {
		var he *HTTPError
		switch {
		case errors.Is(err, ErrEntryNotFound):
			if errors.As(err, &he) && commitHash.MatchString(he.Commit) {
				if p, perr := c.pointerPath(storage, he.Commit, name, ".no_exist"); perr == nil {
					_ = os.MkdirAll(filepath.Dir(p), 0o755)
					if f, ferr := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644); ferr == nil {
						f.Close()
					}
					_ = writeRef(storage, repo.revision(), he.Commit) // as file_download.py does after .no_exist
				}
			}
			return "", err
		case errors.Is(err, ErrRevisionNotFound), errors.Is(err, ErrBadToken), errors.Is(err, ErrUnsafePath):
			return "", err
		}
		// The Hub unreachable or refusing the repository: the cache, if it has the file.
		if p, cerr := c.cachedFile(repo, name); cerr == nil {
			return p, nil
		}
		return "", fmt.Errorf("%w (and the cache %s does not hold it)", err, c.cache)
	}
	pointer, err := c.pointerPath(storage, info.Commit, name, "snapshots")
	if err != nil {
		return "", err
	}
	if fileOK(pointer) {
		_ = writeRef(storage, repo.revision(), info.Commit)
		return pointer, nil
	}
	blob := filepath.Join(storage, "blobs", info.ETag)
	for _, d := range []string{filepath.Dir(blob), filepath.Dir(pointer)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", fmt.Errorf("hub: %w", err)
		}
	}
	writeCacheTag(c.cache)
	if err := writeRef(storage, repo.revision(), info.Commit); err != nil {
		return "", fmt.Errorf("hub: %s: %w", repo, err)
	}
	unlock, err := lockFile(ctx, filepath.Join(c.cache, ".locks", repo.Folder(), info.ETag+".lock"))
	if err != nil {
		return "", fmt.Errorf("hub: %s: %s: %w", repo, name, err)
	}
	defer unlock()
	if !fileOK(blob) {
		if err := c.fetch(ctx, repo, info, blob); err != nil {
			return "", err
		}
	}
	if err := link(blob, pointer); err != nil {
		return "", fmt.Errorf("hub: %s: %s: %w", repo, name, err)
	}
	return pointer, nil
}

// pointerPath is <storage>/<kind>/<commit>/<name>, refused when it would leave that folder or
// pass through a symlinked folder (file_download.py's _get_pointer_path checks the first).
func (c *Client) pointerPath(storage, commit, name, kind string) (string, error) {
	if err := checkName(name); err != nil {
		return "", fmt.Errorf("hub: %w", err)
	}
	root := filepath.Join(storage, kind, commit)
	p := filepath.Join(root, filepath.FromSlash(name))
	if rel, err := filepath.Rel(root, p); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("hub: file name %q would leave %s: %w", name, root, ErrUnsafePath)
	}
	for d := filepath.Dir(p); len(d) > len(root); d = filepath.Dir(d) {
		if st, err := os.Lstat(d); err == nil && st.Mode()&fs.ModeSymlink != 0 {
			return "", fmt.Errorf("hub: %s is a symlink: the file %q would be written outside the snapshot: %w", d, name, ErrUnsafePath)
		}
	}
	return p, nil
}

// fileOK reports whether p is (or links to) a regular file.
func fileOK(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// writeRef records that revision names commit (refs/<revision>), written whole by a rename
// (as _cache_commit_hash_for_specific_revision does); nothing for a commit hash itself.
func writeRef(storage, revision, commit string) error {
	if revision == commit {
		return nil
	}
	ref := filepath.Join(storage, "refs", filepath.FromSlash(revision))
	if b, err := os.ReadFile(ref); err == nil && string(b) == commit {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(ref), 0o755); err != nil {
		return err
	}
	var rnd [4]byte
	_, _ = rand.Read(rnd[:])
	tmp, err := os.OpenFile(ref+"."+hex.EncodeToString(rnd[:])+".tmp", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	if _, err := tmp.WriteString(commit); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	tmp.Close()
	if err := os.Rename(tmp.Name(), ref); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// cacheTag is the CACHEDIR.TAG huggingface_hub writes at the cache's root (_local_folder.py's
// CACHEDIR_TAG_CONTENT: the standard's signature line, then its comment).
const cacheTag = "Signature: 8a477f597d28d172789f06886806bc55\n" +
	"# This file is a cache directory tag created by huggingface_hub.\n" +
	"# For information about cache directory tags, see:\n" +
	"#\thttps://bford.info/cachedir/\n"

func writeCacheTag(cache string) {
	p := filepath.Join(cache, "CACHEDIR.TAG")
	if _, err := os.Lstat(p); err == nil {
		return
	}
	_ = os.WriteFile(p, []byte(cacheTag), 0o644)
}

// link makes pointer a relative symlink to blob (_create_symlink: os.path.relpath from the
// pointer's folder), replacing what was there (a dangling link is so repaired).
func link(blob, pointer string) error {
	rel, err := filepath.Rel(filepath.Dir(pointer), blob)
	if err != nil {
		return err
	}
	_ = os.Remove(pointer)
	if err := os.Symlink(rel, pointer); err != nil {
		if target, rerr := os.Readlink(pointer); rerr == nil && target == rel {
			return nil // another process linked it between the remove and the symlink
		}
		return err
	}
	return nil
}

// maxAttempts is how many times one download is tried (http_get's _nb_retries).
const maxAttempts = 5

// fetch writes the bytes at info's location to blob, through blob.incomplete.
func (c *Client) fetch(ctx context.Context, repo Repo, info FileInfo, blob string) error {
	inc := blob + ".incomplete"
	f, err := os.OpenFile(inc, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	d := &download{f: f, have: st.Size()}
	if sha256Hex.MatchString(info.ETag) {
		d.sum = sha256.New()
	}
	if info.Size >= 0 && d.have > info.Size {
		d.have = 0
	}
	if err := d.restart(d.have); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	if c.progress != nil {
		d.bar = progressbar.NewOptions64(info.Size, progressbar.OptionSetWriter(c.progress),
			progressbar.OptionSetDescription(repo.ID+": "+info.Path), progressbar.OptionShowBytes(true),
			progressbar.OptionSetWidth(25), progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionOnCompletion(func() { fmt.Fprintln(c.progress) }))
		_ = d.bar.Set64(d.have)
	}
	for attempt := 1; info.Size < 0 || d.have < info.Size; attempt++ {
		done, err := c.get(ctx, info.location, d)
		if err == nil && (done || info.Size < 0) {
			break
		}
		if err != nil && (attempt >= maxAttempts || !transient(err) || ctx.Err() != nil) {
			return fmt.Errorf("hub: %s: %s: the download stopped after %d of %d bytes (kept in %s, resumed by the next try): %w",
				repo, info.Path, d.have, info.Size, inc, err)
		}
		if attempt >= maxAttempts {
			return fmt.Errorf("hub: %s: %s: the download stopped after %d of %d bytes (kept in %s)", repo, info.Path, d.have, info.Size, inc)
		}
	}
	if d.bar != nil {
		_ = d.bar.Finish()
	}
	if info.Size >= 0 && d.have != info.Size {
		f.Close()
		os.Remove(inc)
		return fmt.Errorf("hub: %s: %s: got %d bytes, the Hub says %d (deleted): %w", repo, info.Path, d.have, info.Size, ErrCorrupt)
	}
	if d.sum != nil {
		if got := hex.EncodeToString(d.sum.Sum(nil)); got != info.ETag {
			f.Close()
			os.Remove(inc)
			return fmt.Errorf("hub: %s: %s: sha256 %s, the Hub's is %s (the download was deleted): %w", repo, info.Path, got, info.ETag, ErrCorrupt)
		}
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	if err := os.Rename(inc, blob); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	return nil
}

// download is one file's transfer state: the .incomplete file, the bytes it holds and their
// running sha256.
type download struct {
	f    *os.File
	have int64
	sum  hash.Hash
	bar  *progressbar.ProgressBar
}

// restart keeps the first n bytes of the file and rehashes them.
func (d *download) restart(n int64) error {
	if err := d.f.Truncate(n); err != nil {
		return err
	}
	d.have = n
	if d.sum != nil {
		d.sum.Reset()
		if _, err := d.f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if _, err := io.CopyN(d.sum, d.f, n); err != nil {
			return err
		}
	}
	if d.bar != nil {
		_ = d.bar.Set64(n)
	}
	_, err := d.f.Seek(n, io.SeekStart)
	return err
}

func (d *download) Write(p []byte) (int, error) {
	n, err := d.f.Write(p)
	if d.sum != nil {
		d.sum.Write(p[:n])
	}
	d.have += int64(n)
	if d.bar != nil {
		_ = d.bar.Add(n)
	}
	return n, err
}

// get requests the bytes from d.have on (Range) and appends them; done reports that the
// answer ended where its length said. A wait of more than the download timeout for a byte is
// an error naming $HF_HUB_DOWNLOAD_TIMEOUT.
func (c *Client) get(ctx context.Context, u *url.URL, d *download) (done bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var idle atomic.Bool
	timer := time.AfterFunc(c.downloadTimeout, func() { idle.Store(true); cancel() })
	defer timer.Stop()
	req, err := c.newRequest(ctx, http.MethodGet, u)
	if err != nil {
		return false, err
	}
	if d.have > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", d.have))
	}
	timedOut := func(err error) error {
		if idle.Load() {
			return fmt.Errorf("no bytes for %s ($%s): %w", c.downloadTimeout, envvar.HFHubDownloadTimeout.Name, context.DeadlineExceeded)
		}
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return false, timedOut(err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK && d.have > 0:
		// The server ignored the Range: start again (http_get does the same).
		if err := d.restart(0); err != nil {
			return false, err
		}
	case resp.StatusCode == http.StatusPartialContent && d.have > 0:
		if !strings.HasPrefix(resp.Header.Get("Content-Range"), fmt.Sprintf("bytes %d-", d.have)) {
			return false, fmt.Errorf("asked for bytes from %d, got Content-Range %q", d.have, resp.Header.Get("Content-Range"))
		}
	case resp.StatusCode == http.StatusRequestedRangeNotSatisfiable:
		return true, nil // d.have is the whole file; the size check decides
	case resp.StatusCode >= 300:
		return false, statusError(resp)
	}
	want := resp.ContentLength
	buf := make([]byte, 1<<20)
	var n int64
	for {
		k, rerr := resp.Body.Read(buf)
		if k > 0 {
			timer.Reset(c.downloadTimeout)
			if _, werr := d.Write(buf[:k]); werr != nil {
				return false, werr
			}
			n += int64(k)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return false, timedOut(rerr)
		}
	}
	if want >= 0 && n != want {
		return false, fmt.Errorf("the answer ended after %d of its %d bytes: %w", n, want, io.ErrUnexpectedEOF)
	}
	return true, nil
}
