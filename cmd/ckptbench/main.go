// Command ckptbench measures how fast the checkpoint package saves and loads a training state,
// next to cp of the same bytes on the same disk in the same run.
//
// The default state is BERT-base sized: 110M float32 parameters plus two Adam moments per
// parameter (about 1.3 GB). Use --params for a smaller or larger state.
//
//	go run ./cmd/ckptbench --dir /path/on/the/disk/to/test [--params 110000000]
//
// Save writes, hashes (SHA-256) and fsyncs every file. SaveAsync is timed twice: the time the
// caller is blocked (the host copy of the state) and the time until Wait returns. Load reads,
// hashes and checks every file against the manifest, and sets the Store's variables. The
// references, on the same files in the same run, read them from the page cache (they are read
// once, untimed, before: Save writes with O_DIRECT and leaves nothing there): cp -r (GNU cp
// copies in the kernel with copy_file_range: no user-space copy, no fsync), cp -r followed by
// sync of the copies, dd with conv=fsync (writes from user memory and fsyncs, as Save must),
// and cat to /dev/null (reads). The figures say what the disk and the CPU allow together.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/goaccel/goaccel/checkpoint"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/shapes"
	"github.com/gomlx/gomlx/core/tensors"
	"github.com/gomlx/gomlx/ml/model"
)

func main() {
	params := flag.Int64("params", 110_000_000, "number of float32 model parameters (each also gets two Adam moments)")
	dir := flag.String("dir", os.TempDir(), "directory on the disk to measure (a temporary folder is made inside)")
	keep := flag.Bool("keep", false, "keep the files written")
	repeat := flag.Int("repeat", 3, "number of measurement runs (the median and the best are printed)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "ckptbench: --cpuprofile:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	err := run(*params, *dir, *keep, *repeat)
	pprof.StopCPUProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "ckptbench:", err)
		os.Exit(1)
	}
}

// asyncStep is added to the step of a round for its asynchronous save.
const asyncStep = 1_000_000

// tensorElems is the size of most tensors: a BERT-base feed-forward matrix (768 x 3072).
const tensorElems = 768 * 3072

func run(params int64, dir string, keep bool, repeat int) error {
	if params <= 0 {
		return fmt.Errorf("--params must be positive, got %d", params)
	}
	if repeat <= 0 {
		return fmt.Errorf("--repeat must be positive, got %d", repeat)
	}
	work, err := os.MkdirTemp(dir, "ckptbench-")
	if err != nil {
		return fmt.Errorf("--dir: %w", err)
	}
	if !keep {
		defer os.RemoveAll(work)
	}

	start := time.Now()
	store, err := buildStore(params)
	if err != nil {
		return err
	}
	stateBytes := store.ByteSize()
	fmt.Printf("state: %d parameters + 2 Adam moments = %d variables, %.1f MB; built in %s\n",
		params, store.NumVariables(), mb(stateBytes), since(start))

	m, err := checkpoint.NewManager(filepath.Join(work, "ckpts"), checkpoint.Options{KeepLast: 1})
	if err != nil {
		return err
	}
	rows := []string{
		"Save (write + SHA-256 + fsync)",
		"cp -r of the same files (no fsync)",
		"cp -r + sync of the copy (fsync)",
		"dd bs=8M conv=fsync of the same files",
		"Load (read + SHA-256 verify + set Store)",
		"VerifyManifest (read + SHA-256 only)",
		"cat of the same files > /dev/null",
		"SaveAsync: caller blocked (host copy)",
		"SaveAsync + Wait (copy + background save)",
	}
	times := make([][]time.Duration, len(rows))
	var fileBytes int64
	for r := range repeat {
		d, n, err := measure(m, store, int64(r), work)
		if err != nil {
			return err
		}
		fileBytes = n
		for i := range rows {
			times[i] = append(times[i], d[i])
		}
	}
	fmt.Printf("checkpoint: %.1f MB in %d files; %d run(s), MB/s of the median (and best) run:\n",
		mb(fileBytes), len(checkpointFiles), repeat)
	for i, what := range rows {
		slices.Sort(times[i])
		med, best := times[i][len(times[i])/2], times[i][0]
		fmt.Printf("  %-42s %7.2f s %7.0f MB/s   (best %6.2f s %7.0f MB/s)\n", what,
			med.Seconds(), mb(fileBytes)/med.Seconds(), best.Seconds(), mb(fileBytes)/best.Seconds())
	}
	return nil
}

// checkpointFiles are the files of a checkpoint directory.
var checkpointFiles = []string{checkpoint.WeightsFile, checkpoint.OptimizerFile, checkpoint.ProgressFile, checkpoint.ManifestFile}

// measure saves and loads the store once, and runs the references on the files written. It
// returns the durations in the order of the rows printed by run, and the bytes written.
func measure(m *checkpoint.Manager, store *model.Store, step int64, work string) ([]time.Duration, int64, error) {
	var d []time.Duration
	start := time.Now()
	path, err := m.Save(&checkpoint.State{Store: store, Progress: checkpoint.Progress{Step: step}})
	if err != nil {
		return nil, 0, err
	}
	d = append(d, time.Since(start))
	fileBytes, err := dirSize(path)
	if err != nil {
		return nil, 0, err
	}
	files := make([]string, len(checkpointFiles))
	for i, f := range checkpointFiles {
		files[i] = filepath.Join(path, f)
	}

	// The references read the files from the page cache, whether Save left them there or not
	// (it writes with O_DIRECT): they measure the writing. The files are read before the
	// previous copies are deleted, so that the new copies reuse the pages those free.
	if err := readFiles(files); err != nil {
		return nil, 0, err
	}
	copyDir := filepath.Join(work, "copy")
	ddDir := filepath.Join(work, "dd")
	for _, dir := range []string{copyDir, ddDir} {
		if err := os.RemoveAll(dir); err != nil {
			return nil, 0, err
		}
	}
	start = time.Now()
	if out, err := exec.Command("cp", "-r", path, copyDir).CombinedOutput(); err != nil {
		return nil, 0, fmt.Errorf("cp: %v: %s", err, out)
	}
	cpTime := time.Since(start)
	copies, _ := filepath.Glob(filepath.Join(copyDir, "*"))
	start = time.Now()
	if out, err := exec.Command("sync", copies...).CombinedOutput(); err != nil {
		return nil, 0, fmt.Errorf("sync: %v: %s", err, out)
	}
	d = append(d, cpTime, cpTime+time.Since(start))

	if err := os.Mkdir(ddDir, 0o755); err != nil {
		return nil, 0, err
	}
	start = time.Now()
	ddArgs := []string{"-c", `d="$1"; shift; for f in "$@"; do dd if="$f" of="$d/${f##*/}" bs=8M conv=fsync status=none || exit 1; done`, "dd", ddDir}
	if out, err := exec.Command("sh", append(ddArgs, files...)...).CombinedOutput(); err != nil {
		return nil, 0, fmt.Errorf("dd: %v: %s", err, out)
	}
	d = append(d, time.Since(start))

	fresh := &checkpoint.State{Store: model.NewStore()}
	start = time.Now()
	if err := m.Load(path, fresh); err != nil {
		return nil, 0, err
	}
	d = append(d, time.Since(start))
	if fresh.Store.NumVariables() != store.NumVariables() {
		return nil, 0, fmt.Errorf("loaded %d variables, saved %d", fresh.Store.NumVariables(), store.NumVariables())
	}
	fresh.Store.Finalize()

	start = time.Now()
	if err := checkpoint.VerifyManifest(path); err != nil {
		return nil, 0, err
	}
	d = append(d, time.Since(start))

	start = time.Now()
	catArgs := []string{"-c", `cat "$@" > /dev/null`, "cat"}
	if out, err := exec.Command("sh", append(catArgs, files...)...).CombinedOutput(); err != nil {
		return nil, 0, fmt.Errorf("cat: %v: %s", err, out)
	}
	d = append(d, time.Since(start))

	// An asynchronous save of the same state: the time the caller waits (the host copy, into
	// the previous round's copy after the first round), then until the files are written.
	start = time.Now()
	if _, err := m.SaveAsync(&checkpoint.State{Store: store, Progress: checkpoint.Progress{Step: step + asyncStep}}); err != nil {
		return nil, 0, err
	}
	blocked := time.Since(start)
	if err := m.Wait(); err != nil {
		return nil, 0, err
	}
	d = append(d, blocked, time.Since(start))
	return d, fileBytes, nil
}

// buildStore creates params float32 trainable parameters in tensors of tensorElems elements,
// two non-trainable moments for each, and a step counter, with non-constant contents.
func buildStore(params int64) (*model.Store, error) {
	store := model.NewStore()
	seed := uint32(1)
	add := func(path string, n int64, trainable bool) error {
		t := tensors.FromShape(shapes.Make(dtypes.Float32, int(n)))
		t.MustMutableFlatData(func(flat any) {
			s := flat.([]float32)
			for i := range s {
				seed ^= seed << 13
				seed ^= seed >> 17
				seed ^= seed << 5
				s[i] = float32(seed) / (1 << 32)
			}
		})
		v, err := store.CreateVariable(path, t)
		if err != nil {
			return err
		}
		v.SetTrainable(trainable)
		return nil
	}
	for i := int64(0); i*tensorElems < params; i++ {
		n := min(int64(tensorElems), params-i*tensorElems)
		name := fmt.Sprintf("/model/w%04d", i)
		if err := add(name, n, true); err != nil {
			return nil, err
		}
		for _, moment := range []string{"m1", "m2"} {
			if err := add(fmt.Sprintf("/optimizer/adam%s_%s", name, moment), n, false); err != nil {
				return nil, err
			}
		}
	}
	v, err := store.CreateVariable("/global_step", tensors.FromScalar(int64(1000)))
	if err != nil {
		return nil, err
	}
	v.SetTrainable(false)
	return store, nil
}

// readFiles reads the files once, untimed, so that they are in the page cache.
func readFiles(files []string) error {
	args := append([]string{"-c", `cat "$@" > /dev/null`, "cat"}, files...)
	if out, err := exec.Command("sh", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("cat: %v: %s", err, out)
	}
	return nil
}

func dirSize(dir string) (int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			return 0, err
		}
		total += info.Size()
	}
	return total, nil
}

func mb(b int64) float64 { return float64(b) / 1e6 }

func since(t time.Time) string { return time.Since(t).Round(time.Millisecond).String() }
