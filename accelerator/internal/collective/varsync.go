package collective

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// SyncVariables makes the variables of every process equal to rank 0's, as DDP's constructor
// broadcasts the module's parameters: each process describes its variables (path, shape,
// dtype and a checksum of the value), the descriptions are gathered, and
//   - different variables (a missing one, another shape) are an error naming the first
//     difference, returned on every process, so that none is left waiting in a collective;
//   - equal variables with different values are broadcast from rank 0.
//
// The random-number state (dropout) and the variables for which own(path) is true (the
// gradient accumulators: each process keeps its own part of the update's gradient sums) are
// left alone. It returns whether any value changed. Strategies over several processes call it.
func SyncVariables(grp Group, store *model.Store, own func(path string) bool) (changed bool, err error) {
	vars := syncedVariables(store, own)
	var desc strings.Builder
	values := make([]*tensors.Tensor, len(vars))
	for i, v := range vars {
		sum := "none"
		if v.HasValue() {
			if values[i], err = v.Value(); err != nil {
				return false, fmt.Errorf("accelerator: reading variable %s: %w", v.Path(), err)
			}
			err = values[i].ConstBytes(func(b []byte) { sum = fmt.Sprintf("%08x", crc32.Checksum(b, castagnoli)) })
			if err != nil {
				return false, fmt.Errorf("accelerator: reading variable %s: %w", v.Path(), err)
			}
		}
		fmt.Fprintf(&desc, "%s %s %s\n", v.Path(), v.Shape(), sum)
	}
	all, err := grp.Allgather([]byte(desc.String()))
	if err != nil {
		return false, fmt.Errorf("accelerator: comparing the variables of the processes: %w", err)
	}
	root := lines(all[0])
	differ := false
	for rank, b := range all[1:] {
		mine := lines(b)
		for k := range max(len(mine), len(root)) {
			var a, r string
			if k < len(mine) {
				a = mine[k]
			}
			if k < len(root) {
				r = root[k]
			}
			if pathShape(a) != pathShape(r) {
				return false, fmt.Errorf("accelerator: the processes build different models: rank %d has variable %q "+
					"where rank 0 has %q; every process must create the same variables with the same shapes",
					rank+1, orNone(pathShape(a)), orNone(pathShape(r)))
			}
			if a != r {
				differ = true
			}
		}
	}
	if !differ {
		return false, nil
	}
	// Broadcast every variable that has a value, in one buffer.
	var total int
	for _, t := range values {
		if t != nil {
			total += int(t.Shape().ByteSize())
		}
	}
	buf := make([]byte, 0, total)
	if grp.Rank() == 0 {
		for _, t := range values {
			if t != nil {
				if err := t.ConstBytes(func(b []byte) { buf = append(buf, b...) }); err != nil {
					return false, err
				}
			}
		}
	} else {
		buf = buf[:total]
	}
	if err := grp.Broadcast(buf, 0); err != nil {
		return false, fmt.Errorf("accelerator: broadcasting the variables from rank 0: %w", err)
	}
	if grp.Rank() == 0 {
		return true, nil
	}
	off := 0
	for i, t := range values {
		if t == nil {
			continue
		}
		n := int(t.Shape().ByteSize())
		nt := tensors.FromShape(t.Shape())
		if err := nt.MutableBytes(func(b []byte) { copy(b, buf[off:off+n]) }); err != nil {
			return false, err
		}
		off += n
		if err := vars[i].SetValue(nt); err != nil {
			return false, fmt.Errorf("accelerator: setting variable %s from rank 0: %w", vars[i].Path(), err)
		}
	}
	return true, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// syncedVariables are the store's variables that every process must hold equal (all but the
// random state and those own claims for the process), by path.
func syncedVariables(store *model.Store, own func(path string) bool) []*model.Variable {
	rng := model.JoinPath("/", model.RNGStateVariableName)
	var vars []*model.Variable
	for v := range store.IterVariables() {
		if v.Path() != rng && !own(v.Path()) {
			vars = append(vars, v)
		}
	}
	slices.SortFunc(vars, func(a, b *model.Variable) int { return strings.Compare(a.Path(), b.Path()) })
	return vars
}

// lines splits a description into its lines.
func lines(b []byte) []string {
	b = bytes.TrimRight(b, "\n")
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), "\n")
}

// pathShape is a description line without its checksum.
func pathShape(line string) string {
	if i := strings.LastIndexByte(line, ' '); i >= 0 {
		return line[:i]
	}
	return line
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
