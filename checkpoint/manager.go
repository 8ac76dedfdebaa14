package checkpoint

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/goaccel/goaccel/internal/fsutil"
)

// Names used inside a Manager's directory.
const (
	// LatestFile is the pointer file: it holds the directory name of the last completed save.
	LatestFile = "latest"
	// DirPrefix starts every checkpoint directory name: DirPrefix + zero-padded step.
	DirPrefix = "ckpt-"

	tmpPrefix   = fsutil.TempPrefix // Checkpoints and the latest file being written.
	trashPrefix = ".trash-"         // Checkpoints being deleted.
)

// ckptNameRE matches checkpoint directory names and captures the step.
var ckptNameRE = regexp.MustCompile(`^` + DirPrefix + `([0-9]+)$`)

// Processes is the part of the Accelerator a Manager needs in a multi-process run: the main
// process writes, and every process waits for the others. *accelerator.Accelerator satisfies it.
type Processes interface {
	IsMainProcess() bool
	WaitForEveryone() error
}

// Options configure a Manager. The zero value keeps every checkpoint, runs single-process and
// logs with the standard logger.
type Options struct {
	// KeepLast is how many checkpoints to keep (the ones with the highest steps); older ones are
	// deleted after each save. The checkpoint just written is always kept. 0 keeps all.
	KeepLast int

	// Processes coordinates a multi-process run; nil means a single process.
	Processes Processes

	// Logf receives notices, such as a fallback to an older checkpoint. nil means log.Printf;
	// pass func(string, ...any) {} to silence them.
	Logf func(format string, args ...any)

	// AllowMissing lets Load leave alone Store variables that the checkpoint does not have (for
	// example a freshly initialized head). By default they are an error.
	AllowMissing bool

	// WeightName, if set, gives the tensor name to use in weights.safetensors for a trainable
	// variable path (for instance its Hugging Face name); ok=false keeps the path. The mapping is
	// recorded in the file's metadata, so Load needs no inverse.
	WeightName func(varPath string) (name string, ok bool)
}

// Manager saves and loads the checkpoints of one run, in one directory:
//
//	dir/
//	  latest                 -> "ckpt-000001200": the last completed save
//	  ckpt-000001000/
//	  ckpt-000001200/
//	    weights.safetensors  trainable variables
//	    optimizer.safetensors  other variables (optimizer state, random state, ...)
//	    random_state.safetensors  every process's random state (several processes, Ranks)
//	    progress.json  config.json  metrics.json
//	    MANIFEST.json        size and SHA-256 of every other file; written last
//
// A save is atomic: files are written and fsynced in a hidden temporary directory beside the
// target, the directory is fsynced and renamed to its final name, and only then is "latest"
// replaced (write, fsync, rename, fsync). A crash at any moment leaves "latest" pointing to a
// complete checkpoint, and every directory named ckpt-* complete. Leftover temporary
// directories are deleted by the next save.
//
// Only one Manager (one run) may write to a directory at a time.
type Manager struct {
	dir   string
	opts  Options
	async asyncSave // The asynchronous save in flight, if any (SaveAsync).

	// beforeCommit, when not nil, is called by a save once every file of the checkpoint of
	// step is written and synced in its temporary directory, before that is renamed into
	// place: the crash tests set it on their Manager to stop their helper there and kill it
	// in the middle of a save.
	beforeCommit func(step int64)
}

// NewManager returns a Manager for the checkpoints under dir, creating dir if needed.
func NewManager(dir string, opts Options) (*Manager, error) {
	if dir == "" {
		return nil, errors.New("checkpoint: empty directory")
	}
	if opts.KeepLast < 0 {
		return nil, fmt.Errorf("checkpoint: Options.KeepLast must be >= 0, got %d", opts.KeepLast)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	if opts.Logf == nil {
		opts.Logf = log.Printf
	}
	return &Manager{dir: dir, opts: opts}, nil
}

// Dir returns the directory holding the checkpoints.
func (m *Manager) Dir() string { return m.dir }

// isMain reports whether this process writes.
func (m *Manager) isMain() bool { return m.opts.Processes == nil || m.opts.Processes.IsMainProcess() }

// wait is the barrier at the end of a save.
func (m *Manager) wait() error {
	if m.opts.Processes == nil {
		return nil
	}
	if err := m.opts.Processes.WaitForEveryone(); err != nil {
		return fmt.Errorf("checkpoint: waiting for the other processes: %w", err)
	}
	return nil
}

// PathFor returns the directory a save at the given step writes to.
func (m *Manager) PathFor(step int64) string {
	return filepath.Join(m.dir, fmt.Sprintf("%s%09d", DirPrefix, step))
}

// Save writes st as the checkpoint for st.Progress.Step and returns its directory. A checkpoint
// already saved at that step is replaced atomically. Only the main process writes; every
// process then waits for the others (Processes.WaitForEveryone), so on return the checkpoint is
// complete for all of them. On the other processes the error reports only the barrier (and
// their own random state, see Ranks): a failed write is reported by the main process.
//
// When Processes also implements Ranks (the Accelerator does), every process's random state
// is gathered first and the main process writes them all to RandomStateFile, so that Load
// gives each rank its own back. When Processes implements StoreCompleter (the Accelerator
// does), the state it keeps outside the Store (sharded optimizer state) is written whole too.
//
// An asynchronous save still in flight (SaveAsync) is waited for first; if it failed, Save
// returns its error and writes nothing.
func (m *Manager) Save(st *State) (string, error) {
	b, err := m.begin("Save", st)
	if err != nil {
		return "", err
	}
	defer b.release()
	err = cmp.Or(b.cerr, b.gatherErr, b.prev) // the first that is not nil
	if err == nil && m.isMain() {
		var job *saveJob
		if job, err = m.prepare(b.path, st, b.states); err == nil {
			err = m.write(job)
		}
	}
	if werr := m.wait(); err == nil {
		err = werr
	}
	if err != nil {
		return "", err
	}
	return b.path, nil
}

// saveBegun is what Save and SaveAsync start with on every process (begin).
type saveBegun struct {
	path      string
	prev      error    // the error of the asynchronous save that was in flight
	cerr      error    // joining the state kept outside the Store (StoreCompleter)
	gatherErr error    // gathering the random states
	states    *varFile // the gathered random states (nil for none)
	release   func()   // ends the joining of the state kept outside the Store
}

// begin starts a save of st (op names the call in errors): it checks st, ends the
// asynchronous save in flight (every process takes part), joins the state kept outside the
// Store to it and gathers the random states, which every process joins even after an error,
// so that all of them run the same collectives. Only a bad st is returned as an error, before
// any of that; the caller ranks the others and calls release.
func (m *Manager) begin(op string, st *State) (saveBegun, error) {
	if st == nil || st.Store == nil {
		return saveBegun{}, fmt.Errorf("checkpoint: %s needs a State with a Store", op)
	}
	if st.Progress.Step < 0 {
		return saveBegun{}, fmt.Errorf("checkpoint: negative step %d", st.Progress.Step)
	}
	b := saveBegun{path: m.PathFor(st.Progress.Step), prev: m.endPrevious()}
	b.release, b.cerr = m.completeStore(st.Store)
	b.states, b.gatherErr = m.gatherRandomStates(st.Store)
	return b, nil
}

// saveJob is what one save writes, ready to go: the variable files (whose tensors are the
// Store's own values, or a snapshot of them for SaveAsync) and the encoded JSON files.
type saveJob struct {
	path  string
	step  int64
	vars  []jobVarFile
	jsons []jobJSONFile
}

type jobVarFile struct {
	name string
	vf   *varFile
}

type jobJSONFile struct {
	name string
	raw  []byte
}

// prepare collects what a save of st to path writes; states is the gathered random state file
// (nil for none). The JSON files are encoded now, so that later changes to st do not reach them.
func (m *Manager) prepare(path string, st *State, states *varFile) (*saveJob, error) {
	job := &saveJob{path: path, step: st.Progress.Step}
	weights, others, err := collectVariables(st.Store, m.opts.WeightName)
	if err != nil {
		return nil, err
	}
	job.vars = []jobVarFile{{WeightsFile, weights}, {OptimizerFile, others}}
	if states != nil {
		job.vars = append(job.vars, jobVarFile{RandomStateFile, states})
	}
	for _, f := range []struct {
		name  string
		value any
	}{{ProgressFile, st.Progress}, {ConfigFile, st.Config}, {MetricsFile, st.Metrics}} {
		if f.value == nil {
			continue
		}
		raw, err := json.MarshalIndent(f.value, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("checkpoint: encoding %s: %w", f.name, err)
		}
		job.jsons = append(job.jsons, jobJSONFile{f.name, append(raw, '\n')})
	}
	return job, nil
}

// write does the main process's part of a save: it writes job into a temporary directory,
// puts it in place, points "latest" to it and prunes.
func (m *Manager) write(job *saveJob) error {
	path := job.path
	m.removeLeftovers()
	// fsutil.MkdirTemp: 0755 less the umask, so that the checkpoint, renamed into place, can be
	// read by others like the rest of the run directory (os.MkdirTemp makes 0700).
	tmp, err := fsutil.MkdirTemp(m.dir, tmpPrefix+filepath.Base(path)+"-")
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = os.RemoveAll(tmp)
		}
	}()

	man := newManifest(job.step)
	// The files are written concurrently: each write is bound by its SHA-256, on one core.
	entries := make([]fileEntry, len(job.vars))
	errs := make([]error, len(job.vars))
	var wg sync.WaitGroup
	for i, f := range job.vars {
		wg.Go(func() { entries[i], errs[i] = writeVarFile(tmp, f.name, f.vf) })
	}
	wg.Wait()
	for i, f := range job.vars {
		if errs[i] != nil {
			return errs[i]
		}
		man.Files[f.name] = entries[i]
	}
	for _, f := range job.jsons {
		if err := fsutil.WriteFileSync(filepath.Join(tmp, f.name), f.raw); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		man.Files[f.name] = entryFor(f.raw)
	}
	raw, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return fmt.Errorf("checkpoint: encoding manifest: %w", err)
	}
	if err := fsutil.WriteFileSync(filepath.Join(tmp, ManifestFile), append(raw, '\n')); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if err := syncDir(tmp); err != nil {
		return err
	}
	if m.beforeCommit != nil {
		m.beforeCommit(job.step)
	}

	old, err := replaceDir(tmp, path)
	if err != nil {
		return err
	}
	committed = true
	if err := syncDir(m.dir); err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(m.dir, LatestFile), []byte(filepath.Base(path)+"\n")); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if old != "" {
		if err := os.RemoveAll(old); err != nil {
			m.opts.Logf("checkpoint: could not delete the replaced checkpoint %s: %v", old, err)
		}
	}
	return m.prune(filepath.Base(path))
}

// entryFor returns the manifest entry of in-memory content.
func entryFor(raw []byte) fileEntry {
	p := newPipeHash()
	p.submit(raw)
	sum, n := p.sum()
	return fileEntry{Size: n, SHA256: sum}
}

// removeLeftovers deletes temporary and half-deleted directories left by an interrupted save.
func (m *Manager) removeLeftovers() {
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) || strings.HasPrefix(e.Name(), trashPrefix) {
			if err := os.RemoveAll(filepath.Join(m.dir, e.Name())); err != nil {
				m.opts.Logf("checkpoint: could not delete leftover %s: %v", e.Name(), err)
			}
		}
	}
}

// prune deletes the checkpoints beyond KeepLast (by step), never the one named keep.
func (m *Manager) prune(keep string) error {
	if m.opts.KeepLast == 0 {
		return nil
	}
	names, err := m.list()
	if err != nil {
		return err
	}
	slices.Reverse(names) // Highest step first.
	kept := 0
	for _, name := range names {
		if name == keep || kept < m.opts.KeepLast {
			kept++
			continue
		}
		if err := removeDir(filepath.Join(m.dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// List returns the paths of the checkpoint directories, lowest step first. A directory is listed
// by name only; use VerifyManifest to check one.
func (m *Manager) List() ([]string, error) {
	names, err := m.list()
	if err != nil {
		return nil, err
	}
	paths := make([]string, len(names))
	for i, n := range names {
		paths[i] = filepath.Join(m.dir, n)
	}
	return paths, nil
}

// list returns the checkpoint directory names, lowest step first.
func (m *Manager) list() ([]string, error) {
	entries, err := os.ReadDir(m.dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %w", err)
	}
	type named struct {
		name string
		step uint64
	}
	var found []named
	for _, e := range entries {
		sm := ckptNameRE.FindStringSubmatch(e.Name())
		if sm == nil || !e.IsDir() {
			continue
		}
		step, err := strconv.ParseUint(sm[1], 10, 64)
		if err != nil {
			continue
		}
		found = append(found, named{e.Name(), step})
	}
	slices.SortFunc(found, func(a, b named) int {
		if a.step != b.step {
			if a.step < b.step {
				return -1
			}
			return 1
		}
		return strings.Compare(a.name, b.name)
	})
	names := make([]string, len(found))
	for i, f := range found {
		names[i] = f.name
	}
	return names, nil
}

// latest returns the checkpoint name in the "latest" pointer; "" if there is no usable pointer,
// with a reason when there is a pointer file that is not usable.
func (m *Manager) latest() (name string, problem string) {
	raw, err := os.ReadFile(filepath.Join(m.dir, LatestFile))
	if errors.Is(err, os.ErrNotExist) {
		return "", ""
	}
	if err != nil {
		return "", err.Error()
	}
	name = strings.TrimSpace(string(raw))
	if !ckptNameRE.MatchString(name) {
		return "", fmt.Sprintf("%s holds %q, not a checkpoint name", LatestFile, name)
	}
	if info, err := os.Stat(filepath.Join(m.dir, name)); err != nil || !info.IsDir() {
		return "", fmt.Sprintf("%s points to %s, which does not exist", LatestFile, name)
	}
	return name, ""
}

// Load restores the checkpoint at path into st: the Store's variables (see below), Progress,
// and Config and Metrics (decoded into them when they are non-nil pointers, else set to
// json.RawMessage). path is a directory returned by Save or List, or a bare checkpoint name in
// the Manager's directory.
//
// Every file is checked against the manifest (size and SHA-256) while it is read, and nothing
// in st changes unless the whole checkpoint is intact and matches the Store; damage gives an
// error wrapping ErrCorrupt.
//
// Variables are matched by path. Values saved on any number of devices load on any number:
// Save stores full (merged) values, and Load sets full values on the host with
// Variable.SetValue, which drops any device copy or distributed value of whatever mesh, so the
// next execution sends or shards them for the devices it uses. A variable in both must have
// the same dtype and shape; one only in the Store is an error unless Options.AllowMissing; one
// only in the checkpoint is created (GoMLX creates variables lazily, so a Store whose model has
// not run yet is empty), except a trainable one when the Store already has trainable variables,
// which is an error. Errors name the variables. The random state ("/#rngState") is this
// process's own: see Ranks and the package documentation.
func (m *Manager) Load(path string, st *State) error {
	if st == nil || st.Store == nil {
		return errors.New("checkpoint: Load needs a State with a Store")
	}
	if !strings.ContainsRune(path, filepath.Separator) && ckptNameRE.MatchString(path) {
		path = filepath.Join(m.dir, path)
	}
	m.settle()
	return load(path, st, m.opts.AllowMissing, m.rank())
}

// load implements Manager.Load, for the process of the given rank.
func load(path string, st *State, allowMissing bool, rank int) error {
	man, err := readManifest(path)
	if err != nil {
		return err
	}
	raws := map[string][]byte{}
	for _, name := range []string{ProgressFile, ConfigFile, MetricsFile} {
		if _, ok := man.Files[name]; !ok {
			continue
		}
		if raws[name], err = man.readVerified(path, name); err != nil {
			return err
		}
	}
	var progress Progress
	if err := json.Unmarshal(raws[ProgressFile], &progress); err != nil {
		return corrupt(path, fmt.Errorf("%s does not parse: %w", ProgressFile, err))
	}
	// The two files are read concurrently: each read is bound by its SHA-256, on one core.
	files := []struct {
		name      string
		trainable bool
		vars      []loadedVar
		err       error
	}{{name: WeightsFile, trainable: true}, {name: OptimizerFile, trainable: false}}
	var wg sync.WaitGroup
	for i := range files {
		f := &files[i]
		wg.Go(func() { f.vars, f.err = readVarFile(path, f.name, man.Files[f.name], f.trainable) })
	}
	wg.Wait()
	var vars []loadedVar
	for _, f := range files {
		vars = append(vars, f.vars...)
	}
	for _, f := range files {
		if f.err != nil {
			freeLoaded(vars)
			return f.err
		}
	}
	states, err := readRandomStates(path, man)
	if err != nil {
		freeLoaded(vars)
		return err
	}
	vars, keepRNG, err := pickRandomState(path, vars, states, rank)
	if err != nil {
		freeLoaded(vars)
		return err
	}
	if err := restore(st.Store, vars, allowMissing, keepRNG); err != nil {
		freeLoaded(vars)
		return fmt.Errorf("checkpoint %s: %w", path, err)
	}
	st.Progress = progress
	if err := decodeInto(raws[ConfigFile], &st.Config); err != nil {
		return fmt.Errorf("checkpoint %s: decoding %s: %w", path, ConfigFile, err)
	}
	if err := decodeInto(raws[MetricsFile], &st.Metrics); err != nil {
		return fmt.Errorf("checkpoint %s: decoding %s: %w", path, MetricsFile, err)
	}
	return nil
}

// decodeInto decodes raw into *dst if *dst is a non-nil pointer, else sets *dst to the raw JSON.
func decodeInto(raw []byte, dst *any) error {
	if rv := reflect.ValueOf(*dst); rv.Kind() == reflect.Pointer && !rv.IsNil() {
		if raw == nil {
			return nil
		}
		return json.Unmarshal(raw, *dst)
	}
	if raw == nil {
		*dst = nil
		return nil
	}
	*dst = json.RawMessage(raw)
	return nil
}

// LoadLatest loads the checkpoint named by the "latest" pointer and returns its path. If that
// one is damaged (an error wrapping ErrCorrupt), or the pointer is missing or bad, it tries the
// other checkpoints from the highest step down, loads the first intact one, and says so through
// Options.Logf. Errors that are not damage (such as a Store mismatch) are returned at once. With
// no checkpoint at all it returns an error wrapping ErrNoCheckpoint.
func (m *Manager) LoadLatest(st *State) (string, error) {
	m.settle()
	names, err := m.list()
	if err != nil {
		return "", err
	}
	latest, problem := m.latest()
	if problem != "" {
		m.opts.Logf("checkpoint: %s: %s; looking for the newest intact checkpoint", m.dir, problem)
	}
	slices.Reverse(names)
	if latest != "" {
		names = slices.DeleteFunc(names, func(n string) bool { return n == latest })
		names = slices.Insert(names, 0, latest)
	}
	if len(names) == 0 {
		return "", fmt.Errorf("checkpoint: %s: %w", m.dir, ErrNoCheckpoint)
	}
	var failures []string
	for i, name := range names {
		path := filepath.Join(m.dir, name)
		err := load(path, st, m.opts.AllowMissing, m.rank())
		if err == nil {
			if i > 0 {
				m.opts.Logf("checkpoint: fell back to %s (%d newer checkpoint(s) damaged)", path, i)
			}
			return path, nil
		}
		if !errors.Is(err, ErrCorrupt) {
			return "", err
		}
		m.opts.Logf("%v", err)
		failures = append(failures, err.Error())
	}
	return "", fmt.Errorf("checkpoint: no intact checkpoint in %s:\n  - %s: %w", m.dir, strings.Join(failures, "\n  - "), ErrCorrupt)
}
