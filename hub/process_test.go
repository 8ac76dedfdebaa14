package hub_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goaccel/goaccel/hub"
	"github.com/goaccel/goaccel/hub/hubtest"
	"golang.org/x/sys/unix"
)

// childArgs, set, makes this test binary one of the processes of TestTwoProcessesOneDownload:
// "ENDPOINT CACHE" it downloads org/big's weights and prints OK <path> or ERR <error>.
var childArgs = flag.String("hub.child", "", "internal: run as a downloading child process (ENDPOINT CACHE)")

func runChild() {
	endpoint, cache, _ := strings.Cut(*childArgs, " ")
	c, err := hub.New(hub.Options{Endpoint: endpoint, CacheDir: cache, DownloadTimeout: time.Minute})
	if err == nil {
		var p string
		if p, err = c.Download(context.Background(), hub.Repo{ID: "org/big"}, "model.safetensors"); err == nil {
			fmt.Println("OK", p)
			os.Exit(0)
		}
	}
	fmt.Println("ERR", err)
	os.Exit(1)
}

// TestTwoProcessesOneDownload: two processes ask for the same file at once; the one that
// takes the lock downloads while the other waits on it (the lock is seen held, one GET in
// flight), then finds the blob: the bytes cross the network once. When the download fails
// (a wrong sha256), it is an error in both.
func TestTwoProcessesOneDownload(t *testing.T) {
	if *childArgs != "" {
		runChild()
	}
	clean(t)
	s := hubtest.NewServer()
	defer s.Close()
	const size = 4 << 20
	s.Commit("model", "org/big", map[string][]byte{"model.safetensors": bytesOf(size, 3)})
	cache := t.TempDir()
	lock := filepath.Join(cache, ".locks", "models--org--big", sha(bytesOf(size, 3))+".lock")

	start := func() [2]*exec.Cmd {
		var cmds [2]*exec.Cmd
		for i := range cmds {
			cmds[i] = exec.Command(os.Args[0], "-test.run=^TestTwoProcessesOneDownload$", "-hub.child="+s.URL+" "+cache)
			cmds[i].Env = os.Environ()
			cmds[i].Stderr = os.Stderr
		}
		return cmds
	}
	// waitFor polls the stand-in's log until cond holds (bounded).
	waitFor := func(what string, cond func([]hubtest.Request) bool) {
		t.Helper()
		for deadline := time.Now().Add(2 * time.Minute); !cond(s.Requests()); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waiting for %s: requests %+v", what, s.Requests())
			}
		}
	}
	count := func(rs []hubtest.Request, server, method string) int {
		n := 0
		for _, r := range rs {
			if r.Server == server && r.Method == method {
				n++
			}
		}
		return n
	}
	run := func(wantOK bool) []string {
		release := s.Hold("model.safetensors")
		defer release()
		from := len(s.Requests())
		cmds := start()
		outs := make([]chan string, 2)
		for i, c := range cmds {
			outs[i] = make(chan string, 1)
			go func() {
				b, _ := c.Output()
				outs[i] <- strings.TrimSpace(string(b))
			}()
		}
		waitFor("both HEADs and one GET", func(rs []hubtest.Request) bool {
			return count(rs[from:], "hub", "HEAD") >= 2 && count(rs[from:], "cdn", "GET") == 1
		})
		// The GET is held: the lock must be taken by its process, the other waiting on it.
		f, err := os.OpenFile(lock, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != unix.EWOULDBLOCK {
			t.Errorf("the lock %s during the download: flock gave %v, want EWOULDBLOCK", lock, err)
		}
		f.Close()
		release()
		got := []string{<-outs[0], <-outs[1]}
		for _, o := range got {
			if strings.HasPrefix(o, "OK ") != wantOK {
				t.Errorf("a process printed %q", o)
			}
		}
		return got
	}

	got := run(true)
	if got[0] != got[1] {
		t.Errorf("the processes found %q and %q", got[0], got[1])
	}
	if n := count(s.Requests(), "cdn", "GET"); n != 1 || s.BytesSent() != size {
		t.Errorf("%d GETs, %d bytes sent: want 1 and %d", n, s.BytesSent(), size)
	}

	// A download that fails is an error in both processes.
	s.Commit("model", "org/big", map[string][]byte{"model.safetensors": bytesOf(size, 4)})
	lock = filepath.Join(cache, ".locks", "models--org--big", sha(bytesOf(size, 4))+".lock")
	s.Corrupt("model.safetensors")
	got = run(false)
	for _, o := range got {
		if !strings.Contains(o, "sha256") || !strings.Contains(o, "model.safetensors") {
			t.Errorf("a failed process printed %q", o)
		}
	}
	t.Logf("the failures: %q", got)
}
