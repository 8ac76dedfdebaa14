package launch

import (
	"fmt"
	"strconv"
	"strings"
)

// maxHostList bounds how many names ExpandHostList writes: a list such as n[0-99999999] is
// refused instead of filling the memory.
const maxHostList = 1 << 16

// ExpandHostList writes out a host list in Slurm's syntax (SLURM_JOB_NODELIST,
// SLURM_STEP_NODELIST), in its order:
//
//	gpu[01-04,07]         gpu01 gpu02 gpu03 gpu04 gpu07
//	a1,b[2-3]             a1 b2 b3
//	rack[1-2]-n[1-2]      rack1-n1 rack1-n2 rack2-n1 rack2-n2
//
// A range keeps the zero padding of its first number (01-04: two digits). Commas between
// brackets separate names; inside brackets, ranges. An unbalanced bracket, an empty name or
// range, a range that runs backwards or a number that is not one is an error quoting the list.
func ExpandHostList(list string) ([]string, error) {
	bad := func(why string) error { return fmt.Errorf("host list %q: %s", list, why) }
	var out []string
	depth, start := 0, 0
	for i := 0; i <= len(list); i++ {
		if i < len(list) {
			switch list[i] {
			case '[':
				if depth++; depth > 1 {
					return nil, bad("a bracket inside a bracket")
				}
				continue
			case ']':
				if depth--; depth < 0 {
					return nil, bad("a ] without its [")
				}
				continue
			case ',':
				if depth > 0 {
					continue
				}
			default:
				continue
			}
		}
		if depth != 0 {
			return nil, bad("a [ without its ]")
		}
		item := strings.TrimSpace(list[start:i])
		start = i + 1
		if item == "" {
			return nil, bad("an empty name")
		}
		names, err := expandHost(item, maxHostList-len(out))
		if err != nil {
			return nil, bad(err.Error())
		}
		out = append(out, names...)
	}
	return out, nil
}

// FirstHost is the first name of a host list in Slurm's syntax (see ExpandHostList), which is
// where Slurm's block distribution puts a job step's task 0.
func FirstHost(list string) (string, error) {
	names, err := ExpandHostList(list)
	if err != nil {
		return "", err
	}
	return names[0], nil
}

// expandHost writes out one name of a host list, whose brackets may be several
// (rack[1-2]-n[1-2]), refusing more than limit names.
func expandHost(item string, limit int) ([]string, error) {
	open := strings.IndexByte(item, '[')
	if open < 0 {
		if strings.ContainsRune(item, ']') {
			return nil, fmt.Errorf("a ] without its [ in %q", item)
		}
		return []string{item}, nil
	}
	end := strings.IndexByte(item[open:], ']')
	if end < 0 {
		return nil, fmt.Errorf("a [ without its ] in %q", item)
	}
	end += open
	prefix, ranges, rest := item[:open], item[open+1:end], item[end+1:]
	tails, err := expandHost(rest, limit)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range strings.Split(ranges, ",") {
		r = strings.TrimSpace(r)
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		switch {
		case r == "":
			return nil, fmt.Errorf("an empty range in [%s]", ranges)
		case err1 != nil || err2 != nil || a < 0 || b < 0:
			return nil, fmt.Errorf("%q in [%s] is not a number or a range of numbers such as 01-04", r, ranges)
		case b < a:
			return nil, fmt.Errorf("the range %q in [%s] runs backwards", r, ranges)
		case (b-a+1)*len(tails) > limit-len(out):
			return nil, fmt.Errorf("more than %d names", maxHostList)
		}
		width := len(lo)
		for n := a; n <= b; n++ {
			num := fmt.Sprintf("%0*d", width, n)
			for _, t := range tails {
				out = append(out, prefix+num+t)
			}
		}
	}
	return out, nil
}
