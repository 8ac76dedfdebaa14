package table

import (
	"fmt"
	"strings"
)

// readmeConfigs reads the configs: list of a dataset card's YAML front matter (between the
// first two "---" lines of README.md): each config's config_name, data_dir, default and
// data_files, which is a pattern, a list of patterns (both the train split), or a list of
// {split, path} where path is a pattern or a list of them. Only that key is read, with the
// part of YAML such cards use (block maps and lists, flow lists, quoted scalars, comments).
func readmeConfigs(readme string) ([]hubConfig, error) {
	lines := strings.Split(strings.ReplaceAll(readme, "\r\n", "\n"), "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "---" {
		return nil, nil
	}
	var block []yline
	in := false
	for i, l := range lines[1:] {
		if strings.TrimSpace(l) == "---" {
			break
		}
		indent := len(l) - len(strings.TrimLeft(l, " "))
		text := strings.TrimSpace(stripComment(l))
		if text == "" {
			continue
		}
		switch {
		case indent == 0 && (text == "configs:" || strings.HasPrefix(text, "configs: ")):
			in = true
			if rest := strings.TrimSpace(strings.TrimPrefix(text, "configs:")); rest != "" {
				return nil, fmt.Errorf("line %d: configs: %q, want a list below it", i+2, rest)
			}
			continue
		case indent == 0 && !strings.HasPrefix(text, "-"):
			in = false
		}
		if in {
			block = append(block, yline{indent: indent, text: text, line: i + 2})
		}
	}
	if len(block) == 0 {
		return nil, nil
	}
	v, next, err := parseYAML(block, 0, block[0].indent)
	if err != nil {
		return nil, err
	}
	if next != len(block) {
		return nil, fmt.Errorf("line %d: %q is not part of the configs list", block[next].line, block[next].text)
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("line %d: configs is not a list", block[0].line)
	}
	var out []hubConfig
	for _, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("configs: an entry %v is not a map", item)
		}
		c := hubConfig{name: str(m["config_name"]), dataDir: strings.Trim(str(m["data_dir"]), "/"), files: map[string][]string{}}
		if c.name == "" {
			c.name = "default"
		}
		c.isDflt = str(m["default"]) == "true"
		add := func(split string, patterns ...string) {
			if _, ok := c.files[split]; !ok {
				c.order = append(c.order, split)
			}
			c.files[split] = append(c.files[split], patterns...)
		}
		switch df := m["data_files"].(type) {
		case nil:
		case string:
			add("train", df)
		case []any:
			for _, e := range df {
				switch e := e.(type) {
				case string:
					add("train", e)
				case map[string]any:
					split := str(e["split"])
					if split == "" {
						split = "train"
					}
					switch p := e["path"].(type) {
					case string:
						add(split, p)
					case []any:
						for _, q := range p {
							add(split, str(q))
						}
					default:
						return nil, fmt.Errorf("config %s: data_files split %s has no path", c.name, split)
					}
				}
			}
		case map[string]any: // {train: pattern, test: [patterns]}
			for split, p := range df {
				switch p := p.(type) {
				case string:
					add(split, p)
				case []any:
					for _, q := range p {
						add(split, str(q))
					}
				}
			}
		}
		out = append(out, c)
	}
	return out, nil
}

type yline struct {
	indent int
	text   string
	line   int
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// stripComment removes a " #" comment outside quotes.
func stripComment(l string) string {
	quote := byte(0)
	for i := 0; i < len(l); i++ {
		switch c := l[i]; {
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case quote == 0 && c == '#' && (i == 0 || l[i-1] == ' '):
			return l[:i]
		}
	}
	return l
}

// parseYAML parses the block of lines at indent from i: a list ("- ...") or a map.
func parseYAML(ls []yline, i, indent int) (any, int, error) {
	if strings.HasPrefix(ls[i].text, "- ") || ls[i].text == "-" {
		var list []any
		for i < len(ls) && ls[i].indent == indent && (strings.HasPrefix(ls[i].text, "- ") || ls[i].text == "-") {
			rest := strings.TrimSpace(strings.TrimPrefix(ls[i].text, "-"))
			switch {
			case rest == "":
				if i+1 >= len(ls) || ls[i+1].indent <= indent {
					list = append(list, "")
					i++
					continue
				}
				v, next, err := parseYAML(ls, i+1, ls[i+1].indent)
				if err != nil {
					return nil, 0, err
				}
				list, i = append(list, v), next
			case isKey(rest):
				// "- key: v" opens a map whose other keys are indented as its first.
				sub := []yline{{indent: indent + 2, text: rest, line: ls[i].line}}
				j := i + 1
				for ; j < len(ls) && ls[j].indent > indent; j++ {
					sub = append(sub, ls[j])
				}
				inner := indent + 2
				if len(sub) > 1 && sub[1].indent > indent && !(sub[1].indent > inner) {
					inner = sub[1].indent
					sub[0].indent = inner
				}
				v, next, err := parseYAML(sub, 0, inner)
				if err != nil {
					return nil, 0, err
				}
				if next != len(sub) {
					return nil, 0, fmt.Errorf("line %d: %q: unexpected indentation", sub[next].line, sub[next].text)
				}
				list, i = append(list, v), j
			default:
				list, i = append(list, scalar(rest)), i+1
			}
		}
		return list, i, nil
	}
	m := map[string]any{}
	for i < len(ls) && ls[i].indent == indent {
		if !isKey(ls[i].text) {
			return nil, 0, fmt.Errorf("line %d: %q is not a key: value", ls[i].line, ls[i].text)
		}
		key, rest, _ := strings.Cut(ls[i].text, ":")
		key, rest = strings.Trim(strings.TrimSpace(key), `"'`), strings.TrimSpace(rest)
		if rest != "" {
			m[key] = scalar(rest)
			i++
			continue
		}
		if i+1 < len(ls) && (ls[i+1].indent > indent || (ls[i+1].indent == indent && strings.HasPrefix(ls[i+1].text, "-"))) {
			v, next, err := parseYAML(ls, i+1, ls[i+1].indent)
			if err != nil {
				return nil, 0, err
			}
			m[key], i = v, next
			continue
		}
		m[key] = ""
		i++
	}
	return m, i, nil
}

// isKey reports whether a line is "key: value" or "key:" (not a quoted scalar or a flow list).
func isKey(t string) bool {
	if strings.HasPrefix(t, "[") || strings.HasPrefix(t, "{") {
		return false
	}
	if t[0] == '"' || t[0] == '\'' {
		end := strings.IndexByte(t[1:], t[0])
		return end >= 0 && strings.HasPrefix(t[end+2:], ":")
	}
	i := strings.Index(t, ":")
	return i > 0 && (i == len(t)-1 || t[i+1] == ' ')
}

// scalar reads a quoted or plain scalar, or a flow list [a, "b"].
func scalar(s string) any {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		var out []any
		for _, part := range strings.Split(s[1:len(s)-1], ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, scalar(part))
			}
		}
		return out
	}
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}
