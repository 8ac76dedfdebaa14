package mpi

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/goaccel/goaccel/internal/envvar"
)

// ringSize is how many of its last collectives a Comm remembers for its hang report.
const ringSize = 64

// callerDepth is how many frames a collective keeps of its caller's stack.
const callerDepth = 24

// HangFile is the name of a rank's hang report in its log folder ($GOACCEL_LOG_DIR).
const HangFile = "hang.txt"

// HangLinePrefix starts the first line of a hang report and the line a rank prints on stderr
// when it writes one; after it comes "rank R waits in ..." or "rank R is not in a collective ...".
const HangLinePrefix = "goaccel hang report: "

// call is one collective as the ring remembers it.
type call struct {
	seq     uint32
	op      string
	bytes   int64
	pcs     [callerDepth]uintptr
	npc     int
	start   time.Time
	end     time.Time
	state   string // "queued", "waiting", "done", "timed out", "failed"
	pending bool
	varies  bool // the ranks' bytes may differ
}

// site is where a collective was called from: the first frame outside goaccel's machinery (a
// _test.go file counts as outside; see machinery), and the public operation it called (the
// frame just inside).
type site struct {
	public string // "WaitForEveryone", "(*Job).Evaluate"; "" when unknown
	where  string // "trainer/loop.go:201"
}

func (s site) String() string {
	if s.public == "" {
		return "at " + s.where
	}
	return s.public + " at " + s.where
}

// module is the import path of the module this package belongs to, with a trailing slash
// ("github.com/goaccel/goaccel/"), read from this package's own frame so that no caller's
// package is named here.
var module = func() string {
	pc, _, _, _ := runtime.Caller(0)
	fn := runtime.FuncForPC(pc).Name() // ".../internal/mpi.init.func1" or similar
	if i := strings.Index(fn, "/internal/mpi."); i >= 0 {
		return fn[:i+1]
	}
	return "\x00" // matches no function: every frame is then a caller's
}()

// pkgOf is the import path of a function's package: "github.com/goaccel/goaccel/trainer" for
// "github.com/goaccel/goaccel/trainer.(*Loop).Run".
func pkgOf(fn string) string {
	slash := strings.LastIndexByte(fn, '/')
	if i := strings.IndexByte(fn[slash+1:], '.'); i >= 0 {
		return fn[:slash+1+i]
	}
	return fn
}

// internalPkg says whether a frame belongs to one of the module's internal packages (any
// package with an "internal" element in its path below the module: internal/mpi itself,
// internal/launch, a facade's own internal packages); a _test.go file never does.
func internalPkg(fn, file string) bool {
	if strings.HasSuffix(file, "_test.go") {
		return false
	}
	rest, ok := strings.CutPrefix(pkgOf(fn), module)
	return ok && (strings.HasPrefix(rest, "internal/") || strings.Contains(rest, "/internal/"))
}

// machinery marks the frames of goaccel's own machinery in a stack (innermost first): the
// module's internal packages, and the package of the module that called into them (the
// facade: the first frame outward from the internal ones that is not itself internal, when
// its package is in the module, such as the accelerator). No package is named: the facade
// is recognised by where it sits in the stack, so moving or renaming it changes nothing here.
func machinery(all []runtime.Frame) []bool {
	in := make([]bool, len(all))
	facade := ""
	for i, f := range all {
		if internalPkg(f.Function, f.File) {
			in[i] = true
			continue
		}
		if facade == "" && i > 0 && in[i-1] && !strings.HasSuffix(f.File, "_test.go") {
			if p := pkgOf(f.Function); strings.HasPrefix(p, module) {
				facade = p
			}
		}
		in[i] = facade != "" && pkgOf(f.Function) == facade && !strings.HasSuffix(f.File, "_test.go")
	}
	return in
}

// resolve turns the stack a collective kept into its site: the frame just outside the
// outermost of goaccel's own frames, so that a data source's iterator that an Evaluate runs
// (outside code called back from inside) is not taken for the caller.
func resolve(pcs []uintptr) site {
	frames := runtime.CallersFrames(pcs)
	var all []runtime.Frame
	for {
		f, more := frames.Next()
		if f.Function != "" {
			all = append(all, f)
		}
		if !more {
			break
		}
	}
	outer := -1
	for i, in := range machinery(all) {
		if in {
			outer = i
		}
	}
	switch {
	case len(all) == 0:
		return site{where: "unknown"}
	case outer >= 0 && outer+1 < len(all):
		f := all[outer+1]
		return site{public: publicName(all[outer].Function), where: shortFile(f.File, f.Line)}
	case outer < 0:
		return site{where: shortFile(all[0].File, all[0].Line)}
	}
	f := all[len(all)-1]
	return site{where: shortFile(f.File, f.Line) + " (no caller outside goaccel within the kept frames)"}
}

// publicName is a function's name without its package path: "(*Job).Evaluate".
func publicName(fn string) string {
	if fn == "" {
		return ""
	}
	if i := strings.LastIndexByte(fn, '/'); i >= 0 {
		fn = fn[i+1:]
	}
	if i := strings.IndexByte(fn, '.'); i >= 0 {
		fn = fn[i+1:]
	}
	return fn
}

// shortFile is a file's folder and name with its line: "trainer/loop.go:201".
func shortFile(file string, line int) string {
	dir, base := filepath.Split(file)
	if d := filepath.Base(filepath.Clean(dir)); d != "." && d != "/" && dir != "" {
		base = d + "/" + base
	}
	return fmt.Sprintf("%s:%d", base, line)
}

// begin describes a new collective of n bytes (this rank's buffer) and takes its caller's
// stack: one runtime.Callers per collective, resolved only for a report or GOACCEL_DEBUG. It
// runs on the calling goroutine, before the collective is handed to the MPI thread. varies
// says that the ranks' byte counts may differ (an all-gather of bytes).
func begin(op string, n int64, varies bool) *call {
	e := &call{op: op, bytes: n, varies: varies, state: "queued", pending: true}
	e.npc = runtime.Callers(2, e.pcs[:])
	return e
}

// push puts e into the ring as collective number seq. c.mu is held.
func (c *Comm) push(e *call, seq uint32) {
	e.seq, e.start, e.state = seq, time.Now(), "waiting"
	c.ring[c.ringN%ringSize] = e
	c.ringN++
}

// finish marks e done or failed. c.mu is held.
func (c *Comm) finish(e *call, err error) {
	e.end, e.pending = time.Now(), false
	switch {
	case err == nil:
		e.state = "done"
	case errors.Is(err, ErrTimeout):
		e.state = "timed out"
	default:
		e.state = "failed"
	}
}

// snapshot copies the ring, oldest first. c.mu is held.
func (c *Comm) snapshot() []call {
	n := min(c.ringN, ringSize)
	out := make([]call, 0, n)
	for i := c.ringN - n; i < c.ringN; i++ {
		out = append(out, *c.ring[i%ringSize])
	}
	return out
}

// hangLine says where this rank stands, from the ring (oldest first): the collective it waits
// in, or that it waits in none.
func hangLine(rank int, ring []call, now time.Time) string {
	for i := len(ring) - 1; i >= 0; i-- {
		e := ring[i]
		if e.pending || e.state == "timed out" {
			return fmt.Sprintf("rank %d waits in %s #%d (%s), %d bytes, for %v",
				rank, e.op, e.seq, resolve(e.pcs[:e.npc]), e.bytes, now.Sub(e.start).Round(time.Millisecond))
		}
	}
	if len(ring) == 0 {
		return fmt.Sprintf("rank %d is not in a collective (none so far)", rank)
	}
	e := ring[len(ring)-1]
	return fmt.Sprintf("rank %d is not in a collective; its last was %s #%d (%s), %s", rank, e.op, e.seq, resolve(e.pcs[:e.npc]), e.state)
}

// hangPath is where this rank's hang report goes: $GOACCEL_LOG_DIR/hang.txt under goaccel
// launch, else $GOACCEL_HANG_DIR (or the working folder)/goaccel-hang-rank<R>.txt.
func (c *Comm) hangPath() string {
	if d := envvar.LogDir.Value(); d != "" {
		return filepath.Join(d, HangFile)
	}
	d := envvar.HangDir.Value()
	if d == "" {
		d = "."
	}
	return filepath.Join(d, fmt.Sprintf("goaccel-hang-rank%d.txt", c.rank))
}

// WriteHangReport writes this rank's hang report: a first line that says where it waits
// (HangLinePrefix), its last 64 collectives (sequence, operation, bytes, caller, start, state),
// then every goroutine's stack. It goes to $GOACCEL_LOG_DIR/hang.txt under goaccel launch, else
// to $GOACCEL_HANG_DIR or the working folder as goaccel-hang-rank<R>.txt (written whole, then
// renamed into place). It prints the first line and the path on stderr, and returns the path.
// A collective that times out calls it; why is said in the report.
func (c *Comm) WriteHangReport(why string) (string, error) {
	c.mu.Lock()
	ring := c.snapshot()
	c.mu.Unlock()
	now := time.Now()
	line := hangLine(c.rank, ring, now)
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s%s\n\n", HangLinePrefix, line)
	fmt.Fprintf(&b, "rank %d of %d, pid %d, %s: %s\n\n", c.rank, c.size, os.Getpid(), now.Format(time.RFC3339Nano), why)
	fmt.Fprintf(&b, "last %d collectives, oldest first (seq, operation, bytes, caller, start, state):\n", len(ring))
	for _, e := range ring {
		fmt.Fprintf(&b, "  #%-6d %-16s %12d  %-50s %s  %s\n", e.seq, e.op, e.bytes, resolve(e.pcs[:e.npc]),
			e.start.Format("15:04:05.000000"), e.state)
	}
	b.WriteString("\ngoroutines:\n")
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= 64<<20 {
			b.Write(buf[:n])
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	path := c.hangPath()
	tmp := path + ".tmp"
	err := os.WriteFile(tmp, b.Bytes(), 0o644)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s%s (the report could not be written: %v)\n", HangLinePrefix, line, err)
		return "", fmt.Errorf("mpi: hang report: %w", err)
	}
	fmt.Fprintf(os.Stderr, "%s%s; report: %s\n", HangLinePrefix, line, path)
	return path, nil
}

// verifyBytes is the size of one rank's description in GOACCEL_DEBUG's exchange.
const verifyBytes = 512

// ErrMismatch is wrapped by the error of a collective that the ranks called differently
// (another operation, sequence number or length), found by GOACCEL_DEBUG's exchange.
var ErrMismatch = errors.New("the ranks call different collectives")

// verify is GOACCEL_DEBUG's check, on the MPI thread before e's data operations: every rank
// sends (sequence, operation, bytes, caller) to every other one (an all-gather of verifyBytes
// per rank), and a difference fails at once with an error naming each rank's call site.
func (r *round) verify(e *call) error {
	me := resolve(e.pcs[:e.npc])
	desc := fmt.Sprintf("%d\x1f%s\x1f%d\x1f%t\x1f%s\x1f%s", e.seq, e.op, e.bytes, e.varies, me.public, me.where)
	mine := make([]byte, verifyBytes)
	copy(mine[:verifyBytes-1], desc)
	all := make([]byte, verifyBytes*r.c.size)
	if err := r.allgatherBytes(" (GOACCEL_DEBUG check)", mine, all); err != nil {
		return err
	}
	type rec struct {
		key  string
		s    site
		desc string
	}
	recs := make([]rec, r.c.size)
	differ := false
	for p := range recs {
		raw := all[p*verifyBytes : (p+1)*verifyBytes]
		if i := bytes.IndexByte(raw, 0); i >= 0 {
			raw = raw[:i]
		}
		f := strings.Split(string(raw), "\x1f")
		for len(f) < 6 {
			f = append(f, "?")
		}
		key := f[0] + " " + f[1]
		if f[3] != "true" {
			key += " " + f[2]
		}
		recs[p] = rec{key: key, s: site{public: f[4], where: f[5]}, desc: fmt.Sprintf("%s #%s (%s bytes)", f[1], f[0], f[2])}
		if recs[p].key != recs[0].key {
			differ = true
		}
	}
	if !differ {
		return nil
	}
	var parts []string
	for p, x := range recs {
		if p == 0 || x.key != recs[0].key || r.c.size <= 8 {
			parts = append(parts, fmt.Sprintf("rank %d calls %s in %s", p, x.desc, x.s))
		}
		if len(parts) == 9 {
			parts = append(parts, "...")
			break
		}
	}
	return fmt.Errorf("mpi: %s: %w (GOACCEL_DEBUG): %s", r.op, ErrMismatch, strings.Join(parts, "; "))
}
