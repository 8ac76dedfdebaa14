package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goaccel/goaccel/examples/internal/exampletest"
	"github.com/goaccel/goaccel/hub/hubtest"
	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/launch"
	"github.com/goaccel/goaccel/internal/testutil"
)

// TestModelAndDatasetByHubID: --model_name_or_path org/name (transformers' tiny ViT folder)
// and --dataset_name org/name (Parquet shards of PNG bytes, train and validation, as datasets
// names them) from the Hub stand-in: the first run downloads both, the second runs offline
// (HF_HUB_OFFLINE=1) from the cache with no request.
func TestModelAndDatasetByHubID(t *testing.T) {
	s := hubtest.NewServer()
	defer s.Close()
	cache := s.Setenv(t)
	if _, err := s.Folder("model", "org/tiny-vit", transformersFolders["vit"]); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string][]byte{"README.md": []byte("# images\n")}
	for split, n := range map[string]int{"train": 48, "validation": 12} {
		p := filepath.Join(dir, split+".parquet")
		writeParquet(t, p, n, int64(n))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files["data/"+split+"-00000-of-00001.parquet"] = b
	}
	s.Commit("dataset", "org/images", files)
	for i, offline := range []string{"", "1"} {
		before := len(s.Requests())
		out := filepath.Join(dir, "run", string(rune('a'+i)))
		log := exampletest.Run(t, []string{"HF_HUB_OFFLINE=" + offline}, "--model_name_or_path", "org/tiny-vit", "--ignore_mismatched_sizes",
			"--dataset_name", "org/images", "--max_steps", "2", "--batch_size", "8", "--output_dir", out, "--workers", "1")
		if !strings.Contains(log, "training on 48 images, validating on 12") || !strings.Contains(log, "model: vit ") {
			t.Errorf("offline=%q:\n%s", offline, log)
		}
		if n := len(s.Requests()) - before; (offline == "1") != (n == 0) {
			t.Errorf("offline=%q: %d requests to the Hub", offline, n)
		}
	}
	if _, err := os.Stat(filepath.Join(cache, "datasets--org--images", "refs", "main")); err != nil {
		t.Errorf("the data set's ref: %v", err)
	}
}

// TestTwoLaunchesOneDownload: two jobs started at once under goaccel launch ask for the same
// Hub id with an empty cache: the files' locks make one process download each file while the
// other waits, so the stand-in sends the weights' bytes once, and both runs train from the one
// cached snapshot. Each job has 1 rank: two jobs of 2 ranks each at once on this machine hung in
// training (not in the download) in 2 of 6 runs, one rank spinning, the other asleep, until the
// 3-minute timeout; that is its own defect (the note of 2026-12-08), not this test's subject.
func TestTwoLaunchesOneDownload(t *testing.T) {
	testutil.Long(t, "two goaccel launch jobs of 2 ranks downloading one Hub id at once (tier 1: hub's own two-process test)")
	testutil.NeedMPI(t)
	s := hubtest.NewServer()
	defer s.Close()
	s.Setenv(t)
	if _, err := s.Folder("model", "org/tiny-vit", transformersFolders["vit"]); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	trainDir := filepath.Join(root, "train")
	writeFolder(t, trainDir, 24, 3)
	errs := make([]error, 2)
	logs := make([]bytes.Buffer, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			job := filepath.Join(root, fmt.Sprintf("job%d", i))
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			errs[i] = launch.Run(ctx, launch.Config{Program: os.Args[0], NprocPerNode: 1, LogDir: filepath.Join(job, "logs"),
				Args: []string{"--model_name_or_path", "org/tiny-vit", "--ignore_mismatched_sizes", "--train_dir", trainDir,
					"--max_steps", "2", "--batch_size", "4", "--workers", "1", "--output_dir", filepath.Join(job, "run")},
				Env:    append(envvar.Environ(), envvar.ExampleChild.KV("1"), envvar.Devices.KV("1"), envvar.Timeout.KV("3m")),
				Stdout: &logs[i], Stderr: &logs[i]})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			ranks, _ := filepath.Glob(filepath.Join(root, fmt.Sprintf("job%d", i), "logs", "*", "*", "stderr.log"))
			for _, r := range ranks {
				b, _ := os.ReadFile(r)
				t.Logf("%s:\n%s", r, b)
			}
			t.Fatalf("job %d: %v\n%s", i, err, logs[i].String())
		}
	}
	var gets int
	var bytesSent int64
	for _, r := range s.Requests() {
		if r.Method == "GET" && r.Server == "cdn" { // the LFS files' bytes (the weights, here) come from the CDN
			gets++
			bytesSent += r.Sent
		}
	}
	info, err := os.Stat(filepath.Join(transformersFolders["vit"], "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("2 jobs at once: %d GET of model.safetensors from the CDN (%d bytes sent, the file has %d); %d requests in all",
		gets, bytesSent, info.Size(), len(s.Requests()))
	if bytesSent != info.Size() {
		t.Errorf("the stand-in sent %d bytes of model.safetensors in %d GETs, want the file's %d once", bytesSent, gets, info.Size())
	}
}
