package accelerator

// The block cache's malloc is linked into every program that imports this package: it keeps
// the large blocks XLA's CPU plugin frees, so that training steps do not fault their
// temporaries in again. Nothing runs at import; GOACCEL_HOST_MALLOC=system turns it off.
// See internal/blockcache and docs/hostmalloc.md.
import _ "github.com/goaccel/goaccel/internal/blockcache"
