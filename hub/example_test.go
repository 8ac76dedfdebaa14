package hub_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/goaccel/goaccel/hub"
	"github.com/goaccel/goaccel/hub/hubtest"
)

// A model's files into a cache folder, from a Hub stand-in (a real program leaves Endpoint
// and CacheDir empty: $HF_ENDPOINT, $HF_HUB_CACHE and the rest decide).
func ExampleClient_Snapshot() {
	s := hubtest.NewServer()
	defer s.Close()
	s.Commit("model", "org/tiny", map[string][]byte{"config.json": []byte(`{"model_type":"bert"}`), "README.md": []byte("#")})
	cache, _ := os.MkdirTemp("", "hub-example")
	defer os.RemoveAll(cache)

	// The stand-in is on this machine: the example goes online even where the environment
	// says offline (the Makefile's tests set HF_HUB_OFFLINE=1 to keep off huggingface.co).
	os.Unsetenv("HF_HUB_OFFLINE")
	os.Unsetenv("TRANSFORMERS_OFFLINE")
	c, err := hub.New(hub.Options{Endpoint: s.URL, CacheDir: cache})
	if err != nil {
		fmt.Println(err)
		return
	}
	repo, _ := hub.ParseRepo("org/tiny@main", hub.Model)
	dir, err := c.Snapshot(context.Background(), repo, hub.Filter{Include: []string{"*.json"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := os.ReadFile(filepath.Join(dir, "config.json"))
	fmt.Println(filepath.Base(filepath.Dir(filepath.Dir(dir))), string(b))
	// Output: models--org--tiny {"model_type":"bert"}
}
