package checkpoint

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/ml/model"
)

// maxProblems bounds how many mismatching variables one error lists.
const maxProblems = 20

// restore puts the loaded values into the Store, after checking that they match it. It changes
// nothing unless every check passes.
//
// Matching rules:
//   - A variable in both: dtype and shape must be equal; the value is set with Variable.SetValue,
//     which drops any device or distributed copy (of whatever mesh), so the next execution
//     transfers or shards the value for the devices it runs on. The variable's sharding spec
//     and Trainable flag are kept.
//   - A variable only in the Store: an error, unless allowMissing (it then keeps its value, or is
//     initialized as usual if it has none).
//   - A variable only in the checkpoint: GoMLX creates variables lazily, when a model function
//     first asks for them, so it is created in the Store with its saved value and Trainable flag;
//     the model function then picks it up (and GoMLX fails, naming it, if it asks for another
//     shape). The exception is a trainable (weights) variable when the Store already has
//     trainable variables: the model has been built and has no such weight, so it is an error.
//
// With keepRNG the Store's random state ("/#rngState") is this rank's own and is not in vars:
// it is left as it is (see pickRandomState).
func restore(store *model.Store, vars []loadedVar, allowMissing, keepRNG bool) error {
	byPath := make(map[string]*loadedVar, len(vars))
	var problems []string
	for i := range vars {
		lv := &vars[i]
		if prev, dup := byPath[lv.path]; dup {
			problems = append(problems, fmt.Sprintf("variable %q is saved twice (%s and %s)", lv.path, prev.file, lv.file))
		}
		byPath[lv.path] = lv
	}
	storeHasWeights := false
	inStore := map[string]*model.Variable{}
	for v := range store.IterVariables() {
		inStore[v.Path()] = v
		storeHasWeights = storeHasWeights || v.Trainable
		lv, ok := byPath[v.Path()]
		if !ok {
			if !allowMissing && !(keepRNG && v.Path() == rngPath) {
				problems = append(problems, fmt.Sprintf("variable %q (%s) is in the Store but not in the checkpoint "+
					"(set Options.AllowMissing to keep its current value)", v.Path(), v.Shape()))
			}
			continue
		}
		if got := lv.value.Shape(); !got.Equal(v.Shape()) {
			problems = append(problems, fmt.Sprintf("variable %q: checkpoint has %s, Store has %s", v.Path(), got, v.Shape()))
		}
	}
	for _, lv := range vars {
		if inStore[lv.path] == nil && lv.trainable && storeHasWeights {
			problems = append(problems, fmt.Sprintf("variable %q (%s, from %s) is not in the Store: the model has no such weight",
				lv.path, lv.value.Shape(), lv.file))
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		more := ""
		if len(problems) > maxProblems {
			more = fmt.Sprintf("\n  ... and %d more", len(problems)-maxProblems)
			problems = problems[:maxProblems]
		}
		return fmt.Errorf("the checkpoint does not match the Store:\n  - %s%s", strings.Join(problems, "\n  - "), more)
	}

	for i := range vars {
		lv := &vars[i]
		if v := inStore[lv.path]; v != nil {
			if err := v.SetValue(lv.value); err != nil {
				return fmt.Errorf("checkpoint: setting variable %q: %w", lv.path, err)
			}
		} else {
			v, err := store.CreateVariable(lv.path, lv.value)
			if err != nil {
				return fmt.Errorf("checkpoint: creating variable %q: %w", lv.path, err)
			}
			v.SetTrainable(lv.trainable)
		}
		lv.value = nil // Owned by the Store now.
	}
	return nil
}
