package collective

import (
	"time"

	"github.com/goaccel/goaccel/internal/timeline"
)

// Timed keeps a step's account of its collectives: every collective a strategy runs goes
// through Do, which adds its time to *Sync, its bytes to *Bytes when it succeeds, and a span
// to the timeline (TL, nil when off).
type Timed struct {
	Sync  *time.Duration
	Bytes *int64
	TL    *timeline.Recorder
}

// Do runs fn, one collective of bytes bytes (over variables variables, when > 0), and
// accounts for it; with a name it is also a span of the timeline, in category "collective".
func (t Timed) Do(name string, bytes int64, variables int, fn func() error) error {
	start := time.Now()
	err := fn()
	end := time.Now()
	*t.Sync += end.Sub(start)
	if t.TL != nil && name != "" {
		if variables > 0 {
			t.TL.Add(name, "collective", start, end, "bytes", bytes, "variables", variables)
		} else {
			t.TL.Add(name, "collective", start, end, "bytes", bytes)
		}
	}
	if err == nil {
		*t.Bytes += bytes
	}
	return err
}
