// Package hub downloads models and datasets from the Hugging Face Hub into the cache that
// Python's huggingface_hub (and so transformers and datasets) reads and writes, so that a
// file downloaded by either is found by the other, online or offline.
//
// The cache is huggingface_hub's, byte for byte:
//
//	<cache>/models--org--name/blobs/<etag>                  the file's bytes
//	<cache>/models--org--name/snapshots/<commit>/<path>     a relative symlink to its blob
//	<cache>/models--org--name/refs/<branch or tag>          the commit it names
//	<cache>/models--org--name/.no_exist/<commit>/<path>     an empty file: the repository lacks path
//	<cache>/.locks/models--org--name/<etag>.lock             flock(2)ed while the blob is written
//
// (datasets--org--name for datasets). <cache> is, in huggingface_hub's order, Options.CacheDir,
// $HF_HUB_CACHE, $HUGGINGFACE_HUB_CACHE, $HF_HOME/hub, $XDG_CACHE_HOME/huggingface/hub,
// ~/.cache/huggingface/hub. The Hub is $HF_ENDPOINT (default https://huggingface.co); the token
// is Options.Token, else $HF_TOKEN, else $HUGGING_FACE_HUB_TOKEN, else the file
// $HF_TOKEN_PATH (default $HF_HOME/token). The token is sent to the endpoint's origin only
// (scheme, host and port), never to a host a redirect leads to, and no error or log of this
// package holds it. $HF_HUB_OFFLINE (or $TRANSFORMERS_OFFLINE) makes every call read the cache
// alone; without it, a network failure falls back to the cache as huggingface_hub does.
//
// The hubtest package beside this one is a Hub stand-in for tests.
package hub

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// RepoType is the kind of a repository: Model or Dataset.
type RepoType string

// The repository types this package reads.
const (
	Model   RepoType = "model"
	Dataset RepoType = "dataset"
)

// plural is the type as the Hub's API and the cache folders spell it.
func (t RepoType) plural() string {
	if t == "" {
		return "models"
	}
	return string(t) + "s"
}

// urlPrefix is the path prefix of a file URL: "" for models, "datasets/" for datasets.
func (t RepoType) urlPrefix() string {
	if t == Dataset {
		return "datasets/"
	}
	return ""
}

// Repo names a repository at a revision.
type Repo struct {
	// ID is "org/name" (or "name").
	ID string
	// Type is Model when empty.
	Type RepoType
	// Revision is a branch, a tag or a commit hash; "main" when empty.
	Revision string
}

// repoID is what a Hub repository id looks like: "name" or "org/name", each part letters,
// digits, '.', '_' and '-', not starting with '.' or '-'.
var repoID = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)?$`)

// commitHash is a full commit id (huggingface_hub's REGEX_COMMIT_HASH).
var commitHash = regexp.MustCompile(`^[0-9a-f]{40}$`)

// sha256Hex is an LFS file's etag: the sha256 of its bytes (huggingface_hub's REGEX_SHA256).
var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ParseRepo reads "org/name" or "org/name@revision" as a repository of type t.
func ParseRepo(s string, t RepoType) (Repo, error) {
	id, rev, _ := strings.Cut(s, "@")
	r := Repo{ID: id, Type: t, Revision: rev}
	if err := r.check(); err != nil {
		return Repo{}, err
	}
	return r, nil
}

// check refuses an id or revision that could not be a Hub name or that would leave the cache.
func (r Repo) check() error {
	if r.Type != "" && r.Type != Model && r.Type != Dataset {
		return fmt.Errorf("hub: repository type %q: want %q or %q", r.Type, Model, Dataset)
	}
	if !repoID.MatchString(r.ID) || strings.Contains(r.ID, "..") {
		return fmt.Errorf("hub: %q is not a Hub repository id (org/name)", r.ID)
	}
	if err := checkRevision(r.Revision); err != nil {
		return fmt.Errorf("hub: %s: %w", r.ID, err)
	}
	return nil
}

func checkRevision(rev string) error {
	if rev == "" {
		return nil
	}
	if strings.HasPrefix(rev, "/") || strings.ContainsAny(rev, "\\\x00") {
		return fmt.Errorf("revision %q is not a branch, tag or commit", rev)
	}
	for _, part := range strings.Split(rev, "/") {
		if part == "" || part == "." || part == ".." {
			return fmt.Errorf("revision %q is not a branch, tag or commit", rev)
		}
	}
	return nil
}

func (r Repo) revision() string {
	if r.Revision == "" {
		return "main"
	}
	return r.Revision
}

func (r Repo) typ() RepoType {
	if r.Type == "" {
		return Model
	}
	return r.Type
}

// Folder is the repository's folder name in the cache: models--org--name or
// datasets--org--name (huggingface_hub's repo_folder_name).
func (r Repo) Folder() string {
	return r.typ().plural() + "--" + strings.ReplaceAll(r.ID, "/", "--")
}

// String is "org/name@revision" (a dataset prefixed "datasets/").
func (r Repo) String() string {
	return r.typ().urlPrefix() + r.ID + "@" + r.revision()
}

// The kinds of failure a caller may test with errors.Is.
var (
	// ErrRepoNotFound: the Hub knows no such repository, or it is private and the token
	// (if any) has no access (the Hub answers both alike).
	ErrRepoNotFound = errors.New("repository not found")
	// ErrGated: the repository is gated and the token has not been granted access.
	ErrGated = errors.New("gated repository")
	// ErrBadToken: the Hub refused the token itself.
	ErrBadToken = errors.New("the Hub refused the token")
	// ErrRevisionNotFound: the repository has no such branch, tag or commit.
	ErrRevisionNotFound = errors.New("revision not found")
	// ErrEntryNotFound: the revision has no such file.
	ErrEntryNotFound = errors.New("file not in the repository")
	// ErrNotCached: offline (or the Hub unreachable), and the cache does not hold it.
	ErrNotCached = errors.New("not in the local cache")
	// ErrCorrupt: downloaded bytes whose size or sha256 is not the Hub's (the blob was deleted).
	ErrCorrupt = errors.New("downloaded file does not match the Hub's checksum")
	// ErrUnsafePath: a name from the server (or a revision) that would escape the cache.
	ErrUnsafePath = errors.New("unsafe path")
)

// HTTPError is an answer of the Hub that is not a success.
type HTTPError struct {
	Method, URL string
	// Status is the HTTP status; Code the X-Error-Code header (RepoNotFound, GatedRepo,
	// RevisionNotFound, EntryNotFound), Message the X-Error-Message header or the body's
	// "error".
	Status        int
	Code, Message string
	// Commit is X-Repo-Commit when the Hub sent one (an EntryNotFound answer names the
	// commit that lacks the file).
	Commit string
	kind   error
}

func (e *HTTPError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %d", e.Method, e.URL, e.Status)
	if e.Code != "" {
		fmt.Fprintf(&b, " %s", e.Code)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	switch e.kind {
	case ErrRepoNotFound:
		b.WriteString(" (check the id and --repo_type; a private repository needs a token with access: --token, $HF_TOKEN or the token file)")
	case ErrGated:
		b.WriteString(" (ask for access on the repository's page on the Hub, then give that account's token: --token, $HF_TOKEN or the token file)")
	case ErrBadToken:
		b.WriteString(" (the token given, by --token, $HF_TOKEN, $HUGGING_FACE_HUB_TOKEN or the token file, is not one the Hub knows)")
	case ErrRevisionNotFound:
		b.WriteString(" (no such branch, tag or commit)")
	}
	return b.String()
}

// Unwrap returns the kind (ErrRepoNotFound, ...), or nil.
func (e *HTTPError) Unwrap() error { return e.kind }
