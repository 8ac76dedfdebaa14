package bench

import "fmt"

// Shardings are the values of Spec.Sharding (accelerator.Config.Sharding within the worker's
// one process: "no" keeps every variable replicated on every device, zero1 shards the
// optimizer state over the devices, zero2 the gradient accumulators too, zero3 the weights
// too).
var Shardings = []string{"no", "zero1", "zero2", "zero3"}

// DefaultShardingDevices is the number of XLA CPU devices a sharded work runs on when no
// device count is asked for.
const DefaultShardingDevices = 4

// validSharding checks Spec.Sharding ("" is "no").
func validSharding(s string) error {
	if s == "" {
		return nil
	}
	for _, v := range Shardings {
		if s == v {
			return nil
		}
	}
	return fmt.Errorf("bench: sharding %q: valid values are no, zero1, zero2, zero3", s)
}

// ShardingNotes compares, for every framework and work measured under several shardings in
// one run (`--sharding no,zero1,zero3`), each sharding's steps/s and CPU s/step with those
// of "no" on the same shape, precision and devices, one line each, e.g.
//
//	sharding: mlp h1024 B256 fp32 4dev goaccel: zero1 0.93x no's steps/s (4.600 / 4.900), 1.05x its CPU s/step (0.400 / 0.380)
//
// As with the precisions, the shardings of a work run one after the other.
func ShardingNotes(ms []*Measurement) string {
	return axisNotes(ms, "sharding", func(s *Spec) *string { return &s.Sharding }, "no")
}

// ShardingDevices is the device count a sharded work runs on when none is asked for: every
// GPU when there are gpus, else 4 of XLA's CPU devices (on one device there is nothing to
// shard).
func ShardingDevices(gpus int) int {
	if gpus > 0 {
		return gpus
	}
	return DefaultShardingDevices
}

// WithShardings returns each spec once under each of shardings, in that order (the
// shardings of a work one after the other); no shardings returns specs as they are.
func WithShardings(specs []Spec, shardings []string) ([]Spec, error) {
	if len(shardings) == 0 {
		return specs, nil
	}
	out := make([]Spec, 0, len(specs)*len(shardings))
	for _, s := range specs {
		for _, sh := range shardings {
			s.Sharding = sh
			if err := s.Validate(); err != nil {
				return nil, err
			}
			out = append(out, s)
		}
	}
	return out, nil
}
