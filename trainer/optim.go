package trainer

import (
	"github.com/goaccel/goaccel/optim"
	"github.com/gomlx/gomlx/ml/train/optimizer"
)

// AdamEpsilon is the epsilon of torch.optim.Adam and torch.optim.AdamW, optim.AdamConfig's
// default Epsilon.
//
// Deprecated: optim.Adam applies it when AdamConfig.Epsilon is 0; name 1e-8 where a value is
// needed. It goes in the next release.
const AdamEpsilon = 1e-8

// AdamConfig configures Adam.
//
// Deprecated: use optim.AdamConfig. It goes in the next release.
type AdamConfig = optim.AdamConfig

// Adam returns the Adam (or AdamW) optimizer of c.
//
// Deprecated: use optim.Adam. It goes in the next release.
func Adam(c AdamConfig) (optimizer.Interface, error) { return optim.Adam(c) }

// NoWeightDecay says whether weight decay leaves the variable at path alone.
//
// Deprecated: use optim.NoWeightDecay. It goes in the next release.
func NoWeightDecay(path string) bool { return optim.NoWeightDecay(path) }
