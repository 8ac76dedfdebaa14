package image

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// This file is a reader for the pickles of the CIFAR Python version: protocol 2, written by
// Python 2's cPickle, holding dicts of py2 str keys, lists of ints and strs, and numpy uint8
// arrays rebuilt by numpy.core.multiarray._reconstruct. Only the opcodes such files use are
// understood; any other is an error naming the file, the offset and the opcode. Nothing is
// ever called: the two globals a CIFAR pickle names (_reconstruct and numpy.dtype) are
// recognised by name and built here.

type pyTuple []any

type pyList []any

// pyDict keeps its keys (py2 str or unicode keys, as Go strings) in file order.
type pyDict struct {
	keys []string
	vals map[string]any
}

type pyGlobal struct{ module, name string }

type pyDtype struct{ str string }

// pyArray is a numpy array of uint8 (the only dtype CIFAR stores).
type pyArray struct {
	shape []int
	data  []byte
}

type pyMark struct{}

// unpickle reads one pickle from b; name is the file, for errors.
func unpickle(name string, b []byte) (any, error) {
	u := &unpickler{name: name, b: b, memo: map[uint32]any{}}
	v, err := u.run()
	if err != nil {
		return nil, fmt.Errorf("image: %s: pickle: %w", name, err)
	}
	return v, nil
}

type unpickler struct {
	name  string
	b     []byte
	pos   int
	stack []any
	memo  map[uint32]any
}

func (u *unpickler) take(n int) ([]byte, error) {
	if n < 0 || n > len(u.b)-u.pos {
		return nil, fmt.Errorf("offset %d: truncated (needs %d bytes, %d left)", u.pos, n, len(u.b)-u.pos)
	}
	s := u.b[u.pos : u.pos+n]
	u.pos += n
	return s, nil
}

func (u *unpickler) line() (string, error) {
	i := strings.IndexByte(string(u.b[u.pos:]), '\n')
	if i < 0 {
		return "", fmt.Errorf("offset %d: truncated (no end of line)", u.pos)
	}
	s := string(u.b[u.pos : u.pos+i])
	u.pos += i + 1
	return s, nil
}

func (u *unpickler) pop() (any, error) {
	if len(u.stack) == 0 {
		return nil, fmt.Errorf("offset %d: stack underflow", u.pos)
	}
	v := u.stack[len(u.stack)-1]
	u.stack = u.stack[:len(u.stack)-1]
	if _, ok := v.(pyMark); ok {
		return nil, fmt.Errorf("offset %d: unexpected mark", u.pos)
	}
	return v, nil
}

// popMark pops everything down to the last mark.
func (u *unpickler) popMark() ([]any, error) {
	for i := len(u.stack) - 1; i >= 0; i-- {
		if _, ok := u.stack[i].(pyMark); ok {
			items := append([]any(nil), u.stack[i+1:]...)
			u.stack = u.stack[:i]
			return items, nil
		}
	}
	return nil, fmt.Errorf("offset %d: no mark on the stack", u.pos)
}

// popN pops n values, returned in the order they were pushed.
func (u *unpickler) popN(n int) ([]any, error) {
	out := make([]any, n)
	for i := n - 1; i >= 0; i-- {
		v, err := u.pop()
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// items pops the values an APPEND(S) or SETITEM(S) adds (down to the mark, or n of them)
// and returns them with the container below them.
func (u *unpickler) items(marked bool, n int) ([]any, any, error) {
	var items []any
	var err error
	if marked {
		items, err = u.popMark()
	} else {
		items, err = u.popN(n)
	}
	if err != nil {
		return nil, nil, err
	}
	t, err := u.top()
	return items, t, err
}

func (u *unpickler) top() (any, error) {
	if len(u.stack) == 0 {
		return nil, fmt.Errorf("offset %d: stack underflow", u.pos)
	}
	return u.stack[len(u.stack)-1], nil
}

func (u *unpickler) run() (any, error) {
	for {
		at := u.pos
		op, err := u.take(1)
		if err != nil {
			return nil, err
		}
		if err := u.step(op[0]); err != nil {
			if err == errStop {
				v, err := u.pop()
				if err != nil {
					return nil, err
				}
				return v, nil
			}
			if strings.HasPrefix(err.Error(), "offset ") {
				return nil, err
			}
			return nil, fmt.Errorf("offset %d: opcode %q: %w", at, op[0], err)
		}
	}
}

var errStop = fmt.Errorf("stop")

func (u *unpickler) push(v any) { u.stack = append(u.stack, v) }

func (u *unpickler) step(op byte) error {
	switch op {
	case 0x80: // PROTO
		p, err := u.take(1)
		if err != nil {
			return err
		}
		if p[0] > 2 {
			return fmt.Errorf("protocol %d (the CIFAR files are protocol 2)", p[0])
		}
	case '.': // STOP
		return errStop
	case '(': // MARK
		u.push(pyMark{})
	case 'N':
		u.push(nil)
	case 0x88:
		u.push(true)
	case 0x89:
		u.push(false)
	case 'K', 'M', 'J': // BININT1, BININT2, BININT
		n := map[byte]int{'K': 1, 'M': 2, 'J': 4}[op]
		s, err := u.take(n)
		if err != nil {
			return err
		}
		switch n {
		case 1:
			u.push(int64(s[0]))
		case 2:
			u.push(int64(binary.LittleEndian.Uint16(s)))
		default:
			u.push(int64(int32(binary.LittleEndian.Uint32(s))))
		}
	case 0x8a: // LONG1
		s, err := u.take(1)
		if err != nil {
			return err
		}
		d, err := u.take(int(s[0]))
		if err != nil {
			return err
		}
		if len(d) > 8 {
			return fmt.Errorf("integer of %d bytes", len(d))
		}
		var v uint64
		for i := len(d) - 1; i >= 0; i-- {
			v = v<<8 | uint64(d[i])
		}
		if len(d) > 0 && len(d) < 8 && d[len(d)-1]&0x80 != 0 {
			v -= 1 << (8 * uint(len(d)))
		}
		u.push(int64(v))
	case 'G': // BINFLOAT
		s, err := u.take(8)
		if err != nil {
			return err
		}
		u.push(math.Float64frombits(binary.BigEndian.Uint64(s)))
	case 'U', 'T', 'X': // SHORT_BINSTRING, BINSTRING, BINUNICODE
		var n int
		if op == 'U' {
			s, err := u.take(1)
			if err != nil {
				return err
			}
			n = int(s[0])
		} else {
			s, err := u.take(4)
			if err != nil {
				return err
			}
			n = int(int32(binary.LittleEndian.Uint32(s)))
		}
		s, err := u.take(n)
		if err != nil {
			return err
		}
		u.push(string(s))
	case 'c': // GLOBAL
		mod, err := u.line()
		if err != nil {
			return err
		}
		name, err := u.line()
		if err != nil {
			return err
		}
		u.push(pyGlobal{mod, name})
	case 'q', 'r', 'h', 'j': // BINPUT, LONG_BINPUT, BINGET, LONG_BINGET
		n := 1
		if op == 'r' || op == 'j' {
			n = 4
		}
		s, err := u.take(n)
		if err != nil {
			return err
		}
		k := uint32(s[0])
		if n == 4 {
			k = binary.LittleEndian.Uint32(s)
		}
		if op == 'q' || op == 'r' {
			v, err := u.top()
			if err != nil {
				return err
			}
			u.memo[k] = v
			return nil
		}
		v, ok := u.memo[k]
		if !ok {
			return fmt.Errorf("memo key %d not defined", k)
		}
		u.push(v)
	case ')':
		u.push(pyTuple{})
	case 't':
		items, err := u.popMark()
		if err != nil {
			return err
		}
		u.push(pyTuple(items))
	case 0x85, 0x86, 0x87: // TUPLE1..3
		t, err := u.popN(int(op - 0x84))
		if err != nil {
			return err
		}
		u.push(pyTuple(t))
	case ']':
		u.push(&pyList{})
	case '}':
		u.push(&pyDict{vals: map[string]any{}})
	case 'a', 'e': // APPEND, APPENDS
		items, t, err := u.items(op == 'e', 1)
		if err != nil {
			return err
		}
		l, ok := t.(*pyList)
		if !ok {
			return fmt.Errorf("append to a %T, not a list", t)
		}
		*l = append(*l, items...)
	case 's', 'u': // SETITEM, SETITEMS
		items, t, err := u.items(op == 'u', 2)
		if err != nil {
			return err
		}
		d, ok := t.(*pyDict)
		if !ok || len(items)%2 != 0 {
			return fmt.Errorf("set items of a %T (%d values)", t, len(items))
		}
		for i := 0; i < len(items); i += 2 {
			k, ok := items[i].(string)
			if !ok {
				return fmt.Errorf("dict key of type %T", items[i])
			}
			if _, dup := d.vals[k]; !dup {
				d.keys = append(d.keys, k)
			}
			d.vals[k] = items[i+1]
		}
	case 'R': // REDUCE
		args, err := u.pop()
		if err != nil {
			return err
		}
		f, err := u.pop()
		if err != nil {
			return err
		}
		v, err := reduce(f, args)
		if err != nil {
			return err
		}
		u.push(v)
	case 'b': // BUILD
		state, err := u.pop()
		if err != nil {
			return err
		}
		t, err := u.top()
		if err != nil {
			return err
		}
		return build(t, state)
	default:
		return fmt.Errorf("offset %d: unsupported opcode 0x%02x (%q)", u.pos-1, op, op)
	}
	return nil
}

// reduce builds the objects of the two callables a CIFAR pickle names.
func reduce(f, args any) (any, error) {
	g, ok := f.(pyGlobal)
	t, ok2 := args.(pyTuple)
	if !ok || !ok2 {
		return nil, fmt.Errorf("REDUCE of %T with %T", f, args)
	}
	switch {
	case (g.module == "numpy.core.multiarray" || g.module == "numpy._core.multiarray") && g.name == "_reconstruct":
		if len(t) != 3 || t[0] != (pyGlobal{"numpy", "ndarray"}) {
			return nil, fmt.Errorf("_reconstruct%v: want (numpy.ndarray, shape, typecode)", t)
		}
		return &pyArray{}, nil
	case g.module == "numpy" && g.name == "dtype":
		if len(t) < 1 {
			return nil, fmt.Errorf("numpy.dtype without arguments")
		}
		s, ok := t[0].(string)
		if !ok {
			return nil, fmt.Errorf("numpy.dtype(%T)", t[0])
		}
		return &pyDtype{str: s}, nil
	}
	return nil, fmt.Errorf("global %s.%s is not one a CIFAR pickle uses", g.module, g.name)
}

// build sets the state of an array (version, shape, dtype, is_fortran, raw data) or a dtype.
func build(obj, state any) error {
	st, ok := state.(pyTuple)
	if !ok {
		return fmt.Errorf("BUILD with a %T state", state)
	}
	switch o := obj.(type) {
	case *pyDtype:
		return nil // (version, byte order, ...): one-byte dtypes have no byte order
	case *pyArray:
		if len(st) != 5 {
			return fmt.Errorf("array state of %d items, want 5", len(st))
		}
		shape, ok := st[1].(pyTuple)
		dt, ok2 := st[2].(*pyDtype)
		fortran, ok3 := st[3].(bool)
		raw, ok4 := st[4].(string)
		if !ok || !ok2 || !ok3 || !ok4 {
			return fmt.Errorf("array state (%T, %T, %T, %T), want (shape, dtype, bool, str)", st[1], st[2], st[3], st[4])
		}
		if dt.str != "u1" {
			return fmt.Errorf("array of dtype %q; CIFAR's pixels are u1", dt.str)
		}
		if fortran && len(shape) > 1 {
			return fmt.Errorf("array in Fortran order")
		}
		n := 1
		for _, d := range shape {
			v, ok := d.(int64)
			if !ok || v < 0 || v > math.MaxInt32 {
				return fmt.Errorf("array dimension %v", d)
			}
			o.shape = append(o.shape, int(v))
			if n > math.MaxInt32/max(int(v), 1) {
				return fmt.Errorf("array shape %v too large", shape)
			}
			n *= int(v)
		}
		if n != len(raw) {
			return fmt.Errorf("array of shape %v holds %d bytes, want %d", o.shape, len(raw), n)
		}
		o.data = []byte(raw)
		return nil
	}
	return fmt.Errorf("BUILD of a %T", obj)
}
