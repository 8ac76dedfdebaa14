package hub

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
)

// The tree cache: huggingface_hub 2.5's snapshot_download keeps a revision's file list in
// <repo folder>/trees/<commit>.json (its _tree_cache.py), {"format_version": 1, "files":
// {path: {"size", "blob_id", ["lfs_sha256", "lfs_size"], ["xet_hash"]}}}, the paths sorted,
// written by Python's json.dump with indent=1 (ASCII only). A commit never changes, so a
// listing found there is used instead of asking the Hub.

const treeFormat = 1

type treeFile struct {
	Size      int64   `json:"size"`
	BlobID    string  `json:"blob_id"`
	LFSSHA256 *string `json:"lfs_sha256,omitempty"`
	LFSSize   *int64  `json:"lfs_size,omitempty"`
	XetHash   *string `json:"xet_hash,omitempty"`
}

func treePath(storage, commit string) string {
	return filepath.Join(storage, "trees", commit+".json")
}

// readTree returns the cached listing of commit, or nil.
func readTree(storage, commit string) []Entry {
	b, err := os.ReadFile(treePath(storage, commit))
	if err != nil {
		return nil
	}
	var doc struct {
		Version int                 `json:"format_version"`
		Files   map[string]treeFile `json:"files"`
	}
	if json.Unmarshal(b, &doc) != nil || doc.Version != treeFormat {
		return nil
	}
	out := make([]Entry, 0, len(doc.Files))
	for p, f := range doc.Files {
		if checkName(p) != nil {
			return nil
		}
		e := Entry{Path: p, Size: f.Size, OID: f.BlobID, Type: "file"}
		if f.LFSSHA256 != nil {
			e.LFS = &LFS{SHA256: *f.LFSSHA256}
			if f.LFSSize != nil {
				e.LFS.Size = *f.LFSSize
			}
		}
		if f.XetHash != nil {
			e.XetHash = *f.XetHash
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// writeTree writes the listing of commit as huggingface_hub does (a temporary file renamed
// into place; failures are ignored, as there).
func writeTree(storage, commit string, files []Entry) {
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	var b strings.Builder
	b.WriteString("{\n \"format_version\": 1,\n \"files\": {")
	for i, e := range sorted {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n  %s: {\n   \"size\": %d,\n   \"blob_id\": %s", pyString(e.Path), e.Size, pyString(e.OID))
		if e.LFS != nil {
			fmt.Fprintf(&b, ",\n   \"lfs_sha256\": %s,\n   \"lfs_size\": %d", pyString(e.LFS.SHA256), e.LFS.Size)
		}
		if e.XetHash != "" {
			fmt.Fprintf(&b, ",\n   \"xet_hash\": %s", pyString(e.XetHash))
		}
		b.WriteString("\n  }")
	}
	if len(sorted) > 0 {
		b.WriteString("\n }\n}")
	} else {
		b.WriteString("}\n}")
	}
	dir := filepath.Join(storage, "trees")
	if os.MkdirAll(dir, 0o755) != nil {
		return
	}
	tmp, err := os.CreateTemp(dir, "*.tmp")
	if err != nil {
		return
	}
	_, werr := tmp.WriteString(b.String())
	if cerr := tmp.Close(); werr != nil || cerr != nil || os.Rename(tmp.Name(), treePath(storage, commit)) != nil {
		os.Remove(tmp.Name())
	}
}

// pyString is s as Python's json.dumps writes it with ensure_ascii: ", \ and control
// characters escaped, every non-ASCII character as \uXXXX (UTF-16 surrogates above U+FFFF).
func pyString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20 || (r >= 0x7f && r <= 0xffff):
			if r == 0x7f {
				b.WriteRune(r)
				continue
			}
			b.WriteString(`\u` + leftPad(strconv.FormatInt(int64(r), 16)))
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			b.WriteString(`\u` + leftPad(strconv.FormatInt(int64(r1), 16)) + `\u` + leftPad(strconv.FormatInt(int64(r2), 16)))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func leftPad(h string) string { return strings.Repeat("0", 4-len(h)) + h }
