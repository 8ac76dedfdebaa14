package strategy

import (
	"fmt"
	"strings"

	. "github.com/gomlx/gomlx/core/graph"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

// Buffers are a model's buffers, in PyTorch's word: the variables that are not trained but
// that the forward pass of a training step changes (BatchNorm's running statistics), as the
// gradients graph of Host finds them. The Store's random state and goaccel's own variables
// (InternalScope) are rank-local and never buffers.
//
// Over several processes each process's forward pass sees its own part of the global batch,
// so its buffers drift apart from the others'; after each update Sync makes them rank 0's,
// as DistributedDataParallel does with broadcast_buffers (its default): the buffers, and so
// evaluation and the checkpoint, are the same on every process.
type Buffers struct {
	vars  []*model.Variable
	paths map[string]bool
	buf   []byte
}

// Note records the buffers a gradients graph g changed (the Store's variables that are not
// trainable, ChangedInGraph, and neither the random state nor goaccel's own).
func (b *Buffers) Note(store *model.Store, g *Graph) {
	rng := model.JoinPath("/", model.RNGStateVariableName)
	for v := range store.IterVariables() {
		p := v.Path()
		if v.Trainable || !v.ChangedInGraph(g) || p == rng || strings.HasPrefix(p, "/"+InternalScope+"/") || b.paths[p] {
			continue
		}
		if b.paths == nil {
			b.paths = map[string]bool{}
		}
		b.paths[p] = true
		b.vars = append(b.vars, v)
	}
}

// Has reports whether path is one of the buffers noted so far.
func (b *Buffers) Has(path string) bool { return b.paths[path] }

// Save copies the buffers' values to the host, for Restore.
func (b *Buffers) Save() ([]*tensors.Tensor, error) {
	saved := make([]*tensors.Tensor, len(b.vars))
	for i, v := range b.vars {
		t, err := v.Value()
		if err != nil {
			return nil, fmt.Errorf("reading the buffer %s: %w", v.Path(), err)
		}
		if saved[i], err = t.LocalClone(); err != nil {
			return nil, fmt.Errorf("copying the buffer %s: %w", v.Path(), err)
		}
	}
	return saved, nil
}

// Restore sets the buffers to the values Save gave.
func (b *Buffers) Restore(saved []*tensors.Tensor) error {
	for i, t := range saved {
		if err := b.vars[i].SetValue(t); err != nil {
			return fmt.Errorf("setting the buffer %s: %w", b.vars[i].Path(), err)
		}
	}
	return nil
}

// Sync makes every process's buffers rank 0's (one broadcast of their bytes); with one
// process, or no buffer, it does nothing.
func (b *Buffers) Sync(env *Env) error {
	grp := env.Group
	if len(b.vars) == 0 || grp == nil || grp.Size() < 2 {
		return nil
	}
	values := make([]*tensors.Tensor, len(b.vars))
	total := 0
	for i, v := range b.vars {
		t, err := v.Value()
		if err != nil {
			return fmt.Errorf("reading the buffer %s: %w", v.Path(), err)
		}
		values[i] = t
		total += int(t.Shape().ByteSize())
	}
	if cap(b.buf) < total {
		b.buf = make([]byte, total)
	}
	b.buf = b.buf[:total]
	off := 0
	for i, t := range values {
		n := int(t.Shape().ByteSize())
		if err := t.ConstBytes(func(raw []byte) { copy(b.buf[off:off+n], raw) }); err != nil {
			return fmt.Errorf("reading the buffer %s: %w", b.vars[i].Path(), err)
		}
		off += n
	}
	if err := grp.Broadcast(b.buf, 0); err != nil {
		return fmt.Errorf("broadcasting rank 0's buffers (%d variables, such as %s): %w",
			len(b.vars), b.vars[0].Path(), err)
	}
	if grp.Rank() == 0 {
		return nil
	}
	off = 0
	for i, v := range b.vars {
		n := int(values[i].Shape().ByteSize())
		t := tensors.FromShape(v.Shape())
		if err := t.MutableBytes(func(raw []byte) { copy(raw, b.buf[off:off+n]) }); err != nil {
			return fmt.Errorf("setting the buffer %s: %w", v.Path(), err)
		}
		if err := v.SetValue(t); err != nil {
			return fmt.Errorf("setting the buffer %s: %w", v.Path(), err)
		}
		off += n
	}
	return nil
}
