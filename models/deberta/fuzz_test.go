package deberta

import (
	"testing"

	"github.com/goaccel/goaccel/models/internal/configfuzz"
)

// FuzzParseConfig: whatever config.json holds, ParseConfig returns a configuration whose
// tensors can be listed, or an error naming the file; it never panics. The seeds are the
// fixtures' config.json files (testdata/*/config.json).
func FuzzParseConfig(f *testing.F) { configfuzz.Fuzz(f, "deberta-v2", ParseConfig) }
