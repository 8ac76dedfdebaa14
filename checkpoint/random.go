package checkpoint

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/goaccel/goaccel/checkpoint/safetensors"
	"github.com/gomlx/gomlx/ml/model"
)

// RandomStateFile holds the device random state of every process of a multi-process run, one
// tensor per rank named "rank<r>" (see Ranks). Single-process checkpoints do not have it.
const RandomStateFile = "random_state.safetensors"

// Ranks is the optional part of Processes that saves each process's device random state
// (the Store variable "/#rngState", which dropout draws from) and gives it back to the same
// rank. *accelerator.Accelerator satisfies it. Each process seeds its state differently, so
// without it every rank of a resumed run would draw the main process's dropout masks.
type Ranks interface {
	// ProcessIndex is this process's rank, from 0.
	ProcessIndex() int
	// AllGather returns every process's bytes, indexed by rank. Every process calls it.
	AllGather(mine []byte) ([][]byte, error)
}

// rngPath is the Store variable of the device random state.
var rngPath = model.JoinPath("/", model.RNGStateVariableName)

// The first byte of what a process sends to AllGather in Save.
const (
	rngNone   = 0 // the Store has no random state: nothing to save for this rank
	rngOK     = 1 // followed by a safetensors blob with the state
	rngFailed = 2 // followed by the reason it could not be read
)

// rankName is the tensor name of rank r's state in RandomStateFile.
func rankName(r int) string { return "rank" + strconv.Itoa(r) }

// rank is this process's rank for Load: 0 without Ranks, where every process loads the
// main process's random state.
func (m *Manager) rank() int {
	if r, ok := m.opts.Processes.(Ranks); ok {
		return r.ProcessIndex()
	}
	return 0
}

// gatherRandomStates collects every process's random state on the main process, for
// RandomStateFile. Every process calls it. It returns nil with one process or without Ranks,
// and nil on the other processes; the error is this process's (on the main process, also
// any other rank's failure to read its state).
func (m *Manager) gatherRandomStates(store *model.Store) (*varFile, error) {
	r, ok := m.opts.Processes.(Ranks)
	if !ok {
		return nil, nil
	}
	mine, mineErr := encodeRandomState(store)
	all, err := r.AllGather(mine)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: gathering the random state of every process: %w", err)
	}
	if mineErr != nil {
		return nil, mineErr
	}
	if len(all) <= 1 || !m.isMain() {
		return nil, nil
	}
	vf := &varFile{metadata: map[string]string{metaFormat: "pt"}}
	for rank, b := range all {
		if len(b) == 0 {
			return nil, fmt.Errorf("checkpoint: rank %d sent no random state", rank)
		}
		switch b[0] {
		case rngNone:
			continue
		case rngFailed:
			return nil, fmt.Errorf("checkpoint: rank %d could not read its random state: %s", rank, b[1:])
		}
		rd, err := safetensors.NewReader(bytes.NewReader(b[1:]))
		if err != nil {
			return nil, fmt.Errorf("checkpoint: the random state of rank %d: %w", rank, err)
		}
		_, t, err := rd.Next()
		if err != nil {
			return nil, fmt.Errorf("checkpoint: the random state of rank %d: %w", rank, err)
		}
		vf.tensors = append(vf.tensors, safetensors.Named{Name: rankName(rank), Tensor: t})
	}
	return vf, nil
}

// encodeRandomState is what this process sends to gatherRandomStates: the state of its Store
// as a one-tensor safetensors blob, behind the tag byte.
func encodeRandomState(store *model.Store) ([]byte, error) {
	v := store.GetVariable(rngPath)
	if v == nil || !v.HasValue() {
		return []byte{rngNone}, nil
	}
	fail := func(err error) ([]byte, error) {
		err = fmt.Errorf("checkpoint: reading variable %q: %w", rngPath, err)
		return append([]byte{rngFailed}, err.Error()...), err
	}
	t, err := v.Value()
	if err != nil {
		return fail(err)
	}
	buf := bytes.NewBuffer([]byte{rngOK})
	if _, err := safetensors.Write(buf, []safetensors.Named{{Name: rngPath, Tensor: t}}, nil); err != nil {
		return fail(err)
	}
	return buf.Bytes(), nil
}

// pickRandomState makes vars (read from the checkpoint at dir) give this rank its own random
// state: entry "rank<r>" of RandomStateFile when the checkpoint has it (states holds the
// file's tensors, nil without the file). Without one — a rank that did not exist at save
// time, or a rank > 0 with a checkpoint saved by one process or before RandomStateFile
// existed — the "/#rngState" of the checkpoint (the main process's) is dropped and keep is
// true: the Store's own state is kept. It takes ownership of states.
func pickRandomState(dir string, vars, states []loadedVar, rank int) (_ []loadedVar, keep bool, err error) {
	defer freeLoaded(states)
	var mine *loadedVar
	for i := range states {
		if states[i].path == rankName(rank) {
			mine = &states[i]
		}
	}
	at := -1
	for i := range vars {
		if vars[i].path == rngPath {
			at = i
		}
	}
	if mine == nil && (states != nil || rank > 0) {
		if at >= 0 {
			freeLoaded(vars[at : at+1])
			vars = append(vars[:at:at], vars[at+1:]...)
		}
		return vars, true, nil
	}
	if mine == nil {
		return vars, false, nil
	}
	lv := loadedVar{path: rngPath, file: RandomStateFile, value: mine.value}
	mine.value = nil
	if at < 0 {
		return append(vars, lv), false, nil
	}
	if !lv.value.Shape().Equal(vars[at].value.Shape()) {
		err := fmt.Errorf("%s: %s has %s, %s has %s", rankName(rank), RandomStateFile, lv.value.Shape(),
			OptimizerFile, vars[at].value.Shape())
		_ = lv.value.FinalizeAll()
		return vars, false, corrupt(dir, err)
	}
	freeLoaded(vars[at : at+1])
	vars[at] = lv
	return vars, false, nil
}

// readRandomStates reads RandomStateFile of the checkpoint at dir, if its manifest lists it.
func readRandomStates(dir string, man *manifest) ([]loadedVar, error) {
	fe, ok := man.Files[RandomStateFile]
	if !ok {
		return nil, nil
	}
	states, err := readVarFile(dir, RandomStateFile, fe, false)
	if err != nil {
		return nil, err
	}
	if states == nil {
		states = []loadedVar{} // The file is there, with no state: no rank has one.
	}
	return states, nil
}
