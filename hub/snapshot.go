package hub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/goaccel/goaccel/internal/envvar"
)

// Filter chooses the files of a snapshot.
type Filter struct {
	// Include keeps only the files matching one of these patterns (all when empty); Exclude
	// then drops those matching one. Patterns are fnmatch's, as huggingface_hub's
	// allow_patterns and ignore_patterns: '*' matches any run of characters, '/' included,
	// '?' one character, [abc] a set; a pattern ending in '/' matches everything below it.
	Include, Exclude []string
	// Choose, when set, picks from the files left (and may refuse the repository with an
	// error) before anything is downloaded.
	Choose func(files []Entry) ([]Entry, error)
}

// Snapshot downloads the files of repo's revision that f chooses (huggingface_hub's
// snapshot_download) and returns the snapshot folder, writing refs/<revision>. Offline, or
// when the Hub cannot be reached, it returns the cached snapshot of that revision if there is
// one (whatever files it holds).
func (c *Client) Snapshot(ctx context.Context, repo Repo, f Filter) (string, error) {
	if err := repo.check(); err != nil {
		return "", err
	}
	match, err := f.matcher()
	if err != nil {
		return "", err
	}
	if c.offline {
		dir, err := c.cachedSnapshot(repo)
		if err != nil {
			return "", fmt.Errorf("%w (offline: $%s or $%s is set, or Options.Offline)", err, envvar.HFHubOffline.Name, envvar.TransformersOffline.Name)
		}
		return dir, nil
	}
	commit, err := c.Revision(ctx, repo)
	if err != nil {
		if !errors.Is(err, ErrRevisionNotFound) && !errors.Is(err, ErrBadToken) && !errors.Is(err, ErrUnsafePath) {
			if dir, cerr := c.cachedSnapshot(repo); cerr == nil {
				return dir, nil
			}
			return "", fmt.Errorf("%w (and the cache %s has no snapshot of it)", err, c.cache)
		}
		return "", err
	}
	at := Repo{ID: repo.ID, Type: repo.Type, Revision: commit}
	storage := filepath.Join(c.cache, repo.Folder())
	files := readTree(storage, commit)
	if files == nil {
		if files, err = c.Files(ctx, at); err != nil {
			return "", err
		}
		writeTree(storage, commit, files)
	}
	var kept []Entry
	for _, e := range files {
		if match(e.Path) {
			kept = append(kept, e)
		}
	}
	if f.Choose != nil {
		if kept, err = f.Choose(kept); err != nil {
			return "", err
		}
	}
	dir := filepath.Join(storage, "snapshots", commit)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("hub: %w", err)
	}
	for _, e := range kept {
		if _, err := c.Download(ctx, at, e.Path); err != nil {
			return "", err
		}
	}
	if err := writeRef(storage, repo.revision(), commit); err != nil {
		return "", fmt.Errorf("hub: %s: %w", repo, err)
	}
	return dir, nil
}

// matcher compiles the filter's patterns.
func (f Filter) matcher() (func(string) bool, error) {
	compile := func(ps []string) ([]*regexp.Regexp, error) {
		var out []*regexp.Regexp
		for _, p := range ps {
			if strings.HasSuffix(p, "/") {
				p += "*"
			}
			re, err := fnmatch(p)
			if err != nil {
				return nil, fmt.Errorf("hub: pattern %q: %w", p, err)
			}
			out = append(out, re)
		}
		return out, nil
	}
	inc, err := compile(f.Include)
	if err != nil {
		return nil, err
	}
	exc, err := compile(f.Exclude)
	if err != nil {
		return nil, err
	}
	any := func(res []*regexp.Regexp, s string) bool {
		for _, re := range res {
			if re.MatchString(s) {
				return true
			}
		}
		return false
	}
	return func(name string) bool {
		return (len(inc) == 0 || any(inc, name)) && !any(exc, name)
	}, nil
}

// fnmatch translates a shell pattern as Python's fnmatch does ('*' crossing '/').
func fnmatch(p string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString(`^`)
	for i := 0; i < len(p); i++ {
		switch ch := p[i]; ch {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		case '[':
			j := strings.IndexByte(p[i+1:], ']')
			if j < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := p[i+1 : i+1+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += j + 1
		default:
			b.WriteString(regexp.QuoteMeta(string(ch)))
		}
	}
	b.WriteString(`$`)
	return regexp.Compile(b.String())
}

// ListFiles returns the commit of repo's revision and its files: from the Hub (the tree
// cached in trees/<commit>.json as Snapshot keeps it), or, offline or with the Hub
// unreachable, from the cache alone (that tree file, else the files of the cached snapshot).
func (c *Client) ListFiles(ctx context.Context, repo Repo) (string, []Entry, error) {
	if err := repo.check(); err != nil {
		return "", nil, err
	}
	storage := filepath.Join(c.cache, repo.Folder())
	commit, err := c.Revision(ctx, repo)
	if err != nil {
		if !c.offline && !transient(err) {
			return "", nil, err
		}
		dir, cerr := c.cachedSnapshot(repo)
		if cerr != nil {
			return "", nil, fmt.Errorf("%w (%v)", cerr, err)
		}
		commit = filepath.Base(dir)
		if files := readTree(storage, commit); files != nil {
			return commit, files, nil
		}
		var files []Entry
		werr := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			files = append(files, Entry{Path: filepath.ToSlash(rel), Type: "file"})
			return nil
		})
		return commit, files, werr
	}
	files := readTree(storage, commit)
	if files == nil {
		if files, err = c.Files(ctx, Repo{ID: repo.ID, Type: repo.Type, Revision: commit}); err != nil {
			return "", nil, err
		}
		writeTree(storage, commit, files)
	}
	if err := writeRef(storage, repo.revision(), commit); err != nil { // found offline later
		return "", nil, fmt.Errorf("hub: %s: %w", repo, err)
	}
	return commit, files, nil
}
