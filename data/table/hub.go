package table

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/goaccel/goaccel/hub"
)

// HubDataset names a data set of the Hugging Face Hub, as datasets.load_dataset takes it.
type HubDataset struct {
	// Name is "org/name", optionally "org/name@revision" (--dataset_name).
	Name string
	// Config is the configuration (--dataset_config_name); empty: the README's default one,
	// else the only one.
	Config string
	// Revision is a branch, tag or commit (--dataset_revision); empty: Name's, else main.
	Revision string
	// CacheDir, Token and Progress are package hub's Options (empty: the environment).
	CacheDir, Token string
	Progress        io.Writer
}

// Splits are a Hub data set's data files by split ("train", "validation", "test", or the names
// its README gives), downloaded into the Hugging Face cache, each list sorted.
type Splits map[string][]string

// The split keywords and separators of datasets' data_files.py (SPLIT_KEYWORDS,
// NON_WORDS_CHARS): a file or folder named by a keyword, alone or between separators, is that
// split's.
var splitKeywords = []struct {
	split    string
	keywords []string
}{
	{"train", []string{"train", "training"}},
	{"validation", []string{"validation", "valid", "dev", "val"}},
	{"test", []string{"test", "testing", "eval", "evaluation"}},
}

// dataExtensions are the formats this package reads.
var dataExtensions = []string{".parquet", ".csv", ".tsv", ".jsonl", ".json"}

// shardedSplit is datasets' SPLIT_PATTERN_SHARDED, data/{split}-NNNNN-of-NNNNN*.*: any split
// name.
var shardedSplit = regexp.MustCompile(`^data/([^/]+?)-[0-9]{5}-of-[0-9]{5}[^/]*\.[^/]*$`)

// FromHub finds a Hub data set's data files by split, as datasets does without a loading
// script, downloads them into the Hugging Face cache (package hub: offline, the cache alone),
// and returns their local paths: the README's configs (data_files, data_dir) when it has any;
// else, under the config's folder when one is named, the first of datasets' conventions that
// matches: data/{split}-00000-of-00002.parquet shards, folders named by split, files named by
// split, and else every file as train. A repository with only a loading script is read at its
// refs/convert/parquet revision, the Hub's Parquet conversion ({config}/{split}/*.parquet).
// What it cannot resolve is an error listing the files it saw.
func FromHub(ctx context.Context, d HubDataset) (Splits, error) {
	c, err := hub.New(hub.Options{CacheDir: d.CacheDir, Token: d.Token, Progress: d.Progress})
	if err != nil {
		return nil, err
	}
	repo, err := hub.ParseRepo(d.Name, hub.Dataset)
	if err != nil {
		return nil, err
	}
	switch {
	case d.Revision != "" && repo.Revision != "" && d.Revision != repo.Revision:
		return nil, fmt.Errorf("table: %s and revision %s name two revisions: give one", d.Name, d.Revision)
	case d.Revision != "":
		repo.Revision = d.Revision
	}
	commit, entries, err := c.ListFiles(ctx, repo)
	if err != nil {
		return nil, fmt.Errorf("table: dataset %s: %w", d.Name, err)
	}
	at := hub.Repo{ID: repo.ID, Type: hub.Dataset, Revision: commit}
	var files []string
	for _, e := range entries {
		files = append(files, e.Path)
	}
	slices.Sort(files)
	splits, err := chooseSplits(ctx, c, at, d, files)
	if err != nil {
		return nil, err
	}
	if len(splits) == 0 && hasScript(files) && repo.Revision != "refs/convert/parquet" {
		parquet := d
		parquet.Name, parquet.Revision = repo.ID+"@refs/convert/parquet", ""
		return FromHub(ctx, parquet)
	}
	if len(splits) == 0 {
		return nil, fmt.Errorf("table: dataset %s%s: no data files (%s) by datasets' conventions among its files: %s",
			d.Name, configNote(d.Config), strings.Join(dataExtensions, ", "), strings.Join(files, ", "))
	}
	out := Splits{}
	for split, names := range splits {
		for _, n := range names {
			p, err := c.Download(ctx, at, n)
			if err != nil {
				return nil, fmt.Errorf("table: dataset %s, split %s: %w", d.Name, split, err)
			}
			out[split] = append(out[split], p)
		}
	}
	return out, nil
}

func configNote(config string) string {
	if config == "" {
		return ""
	}
	return " (config " + config + ")"
}

func hasScript(files []string) bool {
	for _, f := range files {
		if !strings.Contains(f, "/") && strings.HasSuffix(f, ".py") {
			return true
		}
	}
	return false
}

// chooseSplits maps split names to repository paths.
func chooseSplits(ctx context.Context, c *hub.Client, at hub.Repo, d HubDataset, files []string) (map[string][]string, error) {
	var data []string
	for _, f := range files {
		if slices.Contains(dataExtensions, path.Ext(f)) && !hidden(f) {
			data = append(data, f)
		}
	}
	if at.Revision != "" && strings.HasSuffix(d.Name, "@refs/convert/parquet") {
		return parquetConversion(d, data)
	}
	if slices.Contains(files, "README.md") {
		readme, err := c.Download(ctx, at, "README.md")
		if err != nil {
			return nil, fmt.Errorf("table: dataset %s: %w", d.Name, err)
		}
		b, err := os.ReadFile(readme)
		if err != nil {
			return nil, fmt.Errorf("table: dataset %s: %w", d.Name, err)
		}
		configs, err := readmeConfigs(string(b))
		if err != nil {
			return nil, fmt.Errorf("table: dataset %s: README.md: %w", d.Name, err)
		}
		if len(configs) > 0 {
			return fromConfigs(d, configs, data)
		}
	}
	if d.Config != "" {
		var under []string
		for _, f := range data {
			if strings.HasPrefix(f, d.Config+"/") {
				under = append(under, strings.TrimPrefix(f, d.Config+"/"))
			}
		}
		if len(under) == 0 {
			return nil, fmt.Errorf("table: dataset %s: config %s: neither the README's configs nor a folder %s/ name it (its files: %s)",
				d.Name, d.Config, d.Config, strings.Join(files, ", "))
		}
		splits := conventions(under)
		for s, fs := range splits {
			for i := range fs {
				fs[i] = d.Config + "/" + fs[i]
			}
			splits[s] = fs
		}
		return splits, nil
	}
	return conventions(data), nil
}

// hidden is a path with a part starting with "." or "__" (datasets leaves those out).
func hidden(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if strings.HasPrefix(part, ".") || strings.HasPrefix(part, "__") {
			return true
		}
	}
	return false
}

// conventions applies datasets' default patterns in their order; the first that matches any
// file decides.
func conventions(files []string) map[string][]string {
	splits := map[string][]string{}
	for _, f := range files {
		if m := shardedSplit.FindStringSubmatch(f); m != nil {
			splits[m[1]] = append(splits[m[1]], f)
		}
	}
	if len(splits) > 0 {
		return splits
	}
	const sep = `[-._ 0-9]`
	for _, group := range []func(keyword string) *regexp.Regexp{
		// a folder named by the split (datasets' KEYWORDS_IN_DIR_NAME_BASE_PATTERNS)
		func(k string) *regexp.Regexp {
			return regexp.MustCompile(`^(?:.*/)?(?:[^/]*` + sep + `)?` + k + `(?:` + sep + `[^/]*)?/.+$`)
		},
		// a file named by the split (KEYWORDS_IN_FILENAME_BASE_PATTERNS)
		func(k string) *regexp.Regexp {
			return regexp.MustCompile(`^(?:.*/)?(?:[^/]*` + sep + `)?` + k + sep + `[^/]*$`)
		},
	} {
		for _, f := range files {
			for _, s := range splitKeywords {
				if slices.ContainsFunc(s.keywords, func(k string) bool { return group(k).MatchString(f) }) {
					splits[s.split] = append(splits[s.split], f)
					break
				}
			}
		}
		if len(splits) > 0 {
			return splits
		}
	}
	if len(files) > 0 {
		splits["train"] = slices.Clone(files)
	}
	return splits
}

// parquetConversion reads the Hub's refs/convert/parquet layout: {config}/{split}/*.parquet
// (also {config}/partial-{split}/ for a partial conversion).
func parquetConversion(d HubDataset, data []string) (map[string][]string, error) {
	configs := map[string]bool{}
	for _, f := range data {
		if i := strings.IndexByte(f, '/'); i > 0 {
			configs[f[:i]] = true
		}
	}
	config := d.Config
	if config == "" {
		switch {
		case configs["default"]:
			config = "default"
		case len(configs) == 1:
			for k := range configs {
				config = k
			}
		default:
			names := slices.Sorted(func(yield func(string) bool) {
				for k := range configs {
					if !yield(k) {
						return
					}
				}
			})
			return nil, fmt.Errorf("table: dataset %s has several configs (%s): name one (--dataset_config_name)", d.Name, strings.Join(names, ", "))
		}
	}
	var under []string // the older layout: {config}/{name}-{split}.parquet
	splits := map[string][]string{}
	for _, f := range data {
		parts := strings.Split(f, "/")
		switch {
		case parts[0] != config || path.Ext(f) != ".parquet":
		case len(parts) == 3:
			split := strings.TrimPrefix(parts[1], "partial-")
			splits[split] = append(splits[split], f)
		case len(parts) == 2:
			under = append(under, f)
		}
	}
	if len(splits) == 0 {
		return conventions(under), nil
	}
	return splits, nil
}

// hubConfig is one entry of a dataset card's configs: its data_files by split.
type hubConfig struct {
	name    string
	isDflt  bool
	dataDir string
	files   map[string][]string // split -> patterns
	order   []string
}

// fromConfigs picks the config and matches its patterns against the files.
func fromConfigs(d HubDataset, configs []hubConfig, data []string) (map[string][]string, error) {
	var cfg *hubConfig
	var names []string
	for i := range configs {
		names = append(names, configs[i].name)
		switch {
		case d.Config != "" && configs[i].name == d.Config:
			cfg = &configs[i]
		case d.Config == "" && configs[i].isDflt:
			cfg = &configs[i]
		}
	}
	if cfg == nil && d.Config == "" {
		if len(configs) == 1 {
			cfg = &configs[0]
		} else if i := slices.Index(names, "default"); i >= 0 {
			cfg = &configs[i]
		}
	}
	if cfg == nil {
		if d.Config != "" {
			return nil, fmt.Errorf("table: dataset %s has no config %s: its README names %s", d.Name, d.Config, strings.Join(names, ", "))
		}
		return nil, fmt.Errorf("table: dataset %s has several configs (%s): name one (--dataset_config_name)", d.Name, strings.Join(names, ", "))
	}
	if len(cfg.files) == 0 { // a config with data_dir alone: the conventions under it
		var under []string
		for _, f := range data {
			if cfg.dataDir == "" || strings.HasPrefix(f, cfg.dataDir+"/") {
				under = append(under, f)
			}
		}
		return conventions(under), nil
	}
	splits := map[string][]string{}
	for _, split := range cfg.order {
		for _, pattern := range cfg.files[split] {
			if cfg.dataDir != "" {
				pattern = cfg.dataDir + "/" + pattern
			}
			re, err := globRegexp(pattern)
			if err != nil {
				return nil, fmt.Errorf("table: dataset %s, config %s: data_files %q: %w", d.Name, cfg.name, pattern, err)
			}
			n := len(splits[split])
			for _, f := range data {
				if re.MatchString(f) {
					splits[split] = append(splits[split], f)
				}
			}
			if len(splits[split]) == n {
				return nil, fmt.Errorf("table: dataset %s, config %s, split %s: data_files %q matches none of its data files (%s)",
					d.Name, cfg.name, split, pattern, strings.Join(data, ", "))
			}
		}
	}
	return splits, nil
}

// globRegexp translates a data_files pattern as fsspec globs it: '*' within a path part,
// '**' across parts, '?' one character, [...] a set.
func globRegexp(p string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(p); i++ {
		switch ch := p[i]; {
		case strings.HasPrefix(p[i:], "**/"):
			b.WriteString(`(?:.*/)?`)
			i += 2
		case strings.HasPrefix(p[i:], "**"):
			b.WriteString(`.*`)
			i++
		case ch == '*':
			b.WriteString(`[^/]*`)
		case ch == '?':
			b.WriteString(`[^/]`)
		case ch == '[':
			j := strings.IndexByte(p[i+1:], ']')
			if j < 0 {
				return nil, fmt.Errorf("an unclosed [")
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
	b.WriteString("$")
	return regexp.Compile(b.String())
}
