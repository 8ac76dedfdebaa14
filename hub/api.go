package hub

import (
	"context"
	"fmt"
	"net/url"
	"path"
	"strings"
)

// Entry is one file of a repository's file list.
type Entry struct {
	// Path is the file's path in the repository, "/"-separated.
	Path string `json:"path"`
	// Size is its size in bytes.
	Size int64 `json:"size"`
	// OID is its git blob id.
	OID string `json:"oid"`
	// LFS is set for a file the Hub stores outside git (large files): its sha256 and size.
	LFS *LFS `json:"lfs,omitempty"`
	// XetHash is set for a file the Hub stores with Xet (fetched over plain HTTP here, as
	// huggingface_hub does without hf_xet).
	XetHash string `json:"xetHash,omitempty"`
	// Type is "file" (directories are left out of the list).
	Type string `json:"type"`
}

// LFS is a large file's content address.
type LFS struct {
	SHA256 string `json:"oid"`
	Size   int64  `json:"size"`
}

// Revision returns the commit hash of repo's revision, asking the Hub
// (/api/{models|datasets}/{id}/revision/{rev}, the revision escaped whole, as hf_api.py's
// repo_info quotes it).
func (c *Client) Revision(ctx context.Context, repo Repo) (string, error) {
	if err := repo.check(); err != nil {
		return "", err
	}
	if c.offline {
		if commit := c.cachedCommit(repo); commit != "" {
			return commit, nil
		}
		return "", fmt.Errorf("hub: %s: offline, and %s names no commit: %w", repo, c.refPath(repo), ErrNotCached)
	}
	var info struct {
		SHA string `json:"sha"`
	}
	u := c.url("/api/" + repo.typ().plural() + "/" + escapePath(repo.ID) + "/revision/" + url.PathEscape(repo.revision()))
	if _, err := c.getJSON(ctx, u, &info); err != nil {
		return "", fmt.Errorf("hub: %s: %w", repo, err)
	}
	if !commitHash.MatchString(info.SHA) {
		return "", fmt.Errorf("hub: %s: the Hub's commit %q is not a commit hash: %w", repo, info.SHA, ErrUnsafePath)
	}
	return info.SHA, nil
}

// Files lists every file of repo's revision (/api/{models|datasets}/{id}/tree/{rev}?recursive=true,
// page after page), refusing a name that would escape the snapshot folder.
func (c *Client) Files(ctx context.Context, repo Repo) ([]Entry, error) {
	if err := repo.check(); err != nil {
		return nil, err
	}
	if c.offline {
		return nil, fmt.Errorf("hub: %s: the file list needs the Hub, and the client is offline: %w", repo, ErrNotCached)
	}
	u := c.url("/api/" + repo.typ().plural() + "/" + escapePath(repo.ID) + "/tree/" + url.PathEscape(repo.revision()))
	u.RawQuery = "recursive=true&expand=false"
	var all []Entry
	for pages := 0; u != nil; pages++ {
		if pages > 10000 {
			return nil, fmt.Errorf("hub: %s: the file list has more than 10000 pages", repo)
		}
		var page []Entry
		next, err := c.getJSON(ctx, u, &page)
		if err != nil {
			return nil, fmt.Errorf("hub: %s: %w", repo, err)
		}
		for _, e := range page {
			switch e.Type {
			case "directory":
				continue
			case "file":
			default:
				return nil, fmt.Errorf("hub: %s: the file list holds %q of type %q: %w", repo, e.Path, e.Type, ErrUnsafePath)
			}
			if err := checkName(e.Path); err != nil {
				return nil, fmt.Errorf("hub: %s: %w", repo, err)
			}
			all = append(all, e)
		}
		u = next
	}
	return all, nil
}

// checkName refuses a repository file name that is empty, absolute, a Windows drive or UNC
// path, or has a ".." part, as huggingface_hub's _validate_relative_filename does.
func checkName(name string) error {
	bad := name == "" || strings.HasPrefix(name, "/") || strings.HasPrefix(name, `\`) || strings.ContainsRune(name, 0) ||
		(len(name) >= 2 && name[1] == ':') || path.Clean(name) != name
	for _, part := range strings.Split(strings.ReplaceAll(name, `\`, "/"), "/") {
		bad = bad || part == ".." || part == "." || part == ""
	}
	if bad {
		return fmt.Errorf("file name %q would leave the snapshot folder: %w", name, ErrUnsafePath)
	}
	return nil
}
