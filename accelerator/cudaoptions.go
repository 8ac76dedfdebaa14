package accelerator

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/goaccel/goaccel/internal/envvar"
	"github.com/goaccel/goaccel/internal/plugins"
	"github.com/gomlx/go-xla/pjrt"
)

// The CUDA plugin's knobs (Config.TF32, Config.MemoryFraction, Config.Preallocate), resolved
// from three places and turned into what go-xla's NewWithOptions receives by xlaClientOptions, a
// pure function: go-xla splits its config string at commas into the plugin and its options
// (tf32, preallocate, memory_fraction...) and passes its options map to the PJRT client. The
// map alone cannot carry preallocate (go-xla sets it to false there for every CUDA plugin), so
// tf32 and preallocate travel in the config string, memory_fraction in the map.

// cudaKnob is one CUDA setting as the user gave it.
type cudaKnob struct {
	name  string // go-xla's option: "tf32", "memory_fraction" or "preallocate"
	value string // normalised for go-xla: "true"/"false", or the fraction
	from  string // where the user set it, as typed: Config.TF32="off", $GOACCEL_TF32="0"
}

// cudaKnobDefs are the knobs in the order they are resolved and written: the option's name
// after a backend string's comma, the Config field, the variable, and the value's parser.
var cudaKnobDefs = []struct {
	name, field string
	env         envvar.String
	config      func(Config) string
	parse       func(string) (string, error)
}{
	{"tf32", "TF32", envvar.TF32, func(c Config) string { return c.TF32 }, parseSwitch},
	{"memory_fraction", "MemoryFraction", envvar.MemoryFraction, func(c Config) string {
		if c.MemoryFraction == 0 {
			return ""
		}
		return strconv.FormatFloat(c.MemoryFraction, 'g', -1, 64)
	}, parseFraction},
	{"preallocate", "Preallocate", envvar.Preallocate, func(c Config) string { return c.Preallocate }, parseSwitch},
}

// parseSwitch reads an on/off setting: on, true, 1, yes or off, false, 0, no.
func parseSwitch(s string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "on", "true", "1", "yes", "t":
		return "true", nil
	case "off", "false", "0", "no", "f":
		return "false", nil
	}
	return "", fmt.Errorf("is not on or off (also true/false, 1/0)")
}

// parseFraction reads a share of the GPU's memory: a number above 0 and at most 1.
func parseFraction(s string) (string, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || !(f > 0 && f <= 1) {
		return "", fmt.Errorf("is not a fraction above 0 and at most 1 (such as 0.45)")
	}
	return strconv.FormatFloat(f, 'g', -1, 64), nil
}

// splitBackendOptions splits a backend string such as "xla:cuda,tf32=false,memory_fraction=0.45"
// into the backend ("xla:cuda") and its CUDA knobs; source names where the string came from
// ("Config.Backend" or "$GOMLX_BACKEND") for messages.
func splitBackendOptions(choice, source string) (string, []cudaKnob, error) {
	backend, rest, found := strings.Cut(choice, ",")
	if !found {
		return choice, nil, nil
	}
	from := fmt.Sprintf("%s=%q", source, choice)
	var knobs []cudaKnob
	for _, part := range strings.Split(rest, ",") {
		key, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		i := knobIndex(key)
		if !ok || i < 0 {
			return "", nil, fmt.Errorf("accelerator: %s: option %q is not one of tf32=on|off, "+
				"memory_fraction=F (0 < F <= 1) or preallocate=on|off", from, part)
		}
		v, err := cudaKnobDefs[i].parse(val)
		if err != nil {
			return "", nil, fmt.Errorf("accelerator: %s: %s=%q %v", from, key, val, err)
		}
		knobs = append(knobs, cudaKnob{name: key, value: v, from: from})
	}
	return backend, knobs, nil
}

func knobIndex(name string) int {
	for i, d := range cudaKnobDefs {
		if d.name == name {
			return i
		}
	}
	return -1
}

// resolveCUDAKnobs picks each knob from cfg's field, else the backend string's option, else its
// variable, and checks every value given. A field and a backend option that disagree are an
// error naming both.
func resolveCUDAKnobs(cfg Config, fromBackend []cudaKnob) ([]cudaKnob, error) {
	if cfg.MemoryFraction < 0 || cfg.MemoryFraction > 1 {
		return nil, fmt.Errorf("accelerator: Config.MemoryFraction=%g is not a fraction above 0 and at most 1 "+
			"(or 0 for the plugin's default)", cfg.MemoryFraction)
	}
	var knobs []cudaKnob
	for _, d := range cudaKnobDefs {
		var given []cudaKnob // the field, then the backend string's option
		if s := d.config(cfg); s != "" {
			v, err := d.parse(s)
			if err != nil {
				return nil, fmt.Errorf("accelerator: Config.%s=%q %v", d.field, s, err)
			}
			given = append(given, cudaKnob{d.name, v, fmt.Sprintf("Config.%s=%q", d.field, s)})
		}
		for _, k := range fromBackend {
			if k.name == d.name {
				given = append(given, k)
			}
		}
		if len(given) == 2 && given[0].value != given[1].value {
			return nil, fmt.Errorf("accelerator: %s and %s disagree on %s; set it in one place",
				given[0].from, given[1].from, d.name)
		}
		if s := d.env.Value(); s != "" { // checked even when unused: a bad setting is an error
			v, err := d.parse(s)
			if err != nil {
				return nil, fmt.Errorf("accelerator: $%s=%q %v", d.env.Name, s, err)
			}
			given = append(given, cudaKnob{d.name, v, fmt.Sprintf("$%s=%q", d.env.Name, s)})
		}
		if len(given) == 0 {
			continue
		}
		knobs = append(knobs, given[0])
	}
	return knobs, nil
}

// refuseCUDAKnobs is the error for knobs set on a backend other than XLA's CUDA plugin
// (backend names it, such as "xla:cpu (/path/plugin.so)"), naming the first as the user set it.
func refuseCUDAKnobs(knobs []cudaKnob, backend string) error {
	if len(knobs) == 0 {
		return nil
	}
	k := knobs[0]
	return fmt.Errorf("accelerator: %s (from %s) applies to XLA's CUDA plugin only, but the backend is %s; "+
		"unset it, or choose the CUDA plugin (Backend \"xla:cuda\")", k.name, k.from, backend)
}

// xlaClientOptions builds what go-xla's NewWithOptions is given for plugin p: the
// config string (the plugin's path, then tf32 and preallocate after commas) and the client
// options map (cpu_device_count when cpuCount > 0, asynchronous false for one CPU device,
// memory_fraction). The knobs are refused on
// any plugin but CUDA's: on the CPU plugin tf32=on would make go-xla ask for a TF32 dot
// algorithm, and the others mean nothing there.
func xlaClientOptions(p Plugin, cpuCount int, knobs []cudaKnob) (string, pjrt.NamedValuesMap, error) {
	if strings.Contains(p.Path, ",") {
		return "", nil, fmt.Errorf("accelerator: the plugin path %q (from %s) contains a comma, which go-xla "+
			"reads as the start of its options; move or link the plugin to a path without one", p.Path, p.From)
	}
	opts := pjrt.NamedValuesMap{}
	if p.Kind != plugins.CUDA {
		if err := refuseCUDAKnobs(knobs, fmt.Sprintf("xla:%s (%s)", p.Kind, p.Path)); err != nil {
			return "", nil, err
		}
		if cpuCount > 0 {
			opts["cpu_device_count"] = int64(cpuCount)
		}
		if p.Kind == plugins.CPU && cpuCount == 1 {
			// One device: each execution runs on the calling thread (goaccel waits for it
			// anyway), not on the client's pool. On the pool, at a random step, a step's
			// temporaries were allocated while the last step's were still held by the pool
			// thread that ran it, and the block cache then kept both resident: ModernBERT's
			// 40-step bf16 run peaked at 1.6-1.9 or 2.6-2.7 GB from the same command, 1.9-2.2
			// GB in 4 of 4 runs with this, at the same speed (docs/endtoend.md). Not with
			// several devices: their executions must run at the same time for collectives.
			opts["asynchronous"] = false
		}
		return p.Path, opts, nil
	}
	config := p.Path
	for _, k := range knobs {
		if k.name == "memory_fraction" {
			f, _ := strconv.ParseFloat(k.value, 32) // checked by parseFraction
			opts[k.name] = float32(f)
			continue
		}
		config += "," + k.name + "=" + k.value
	}
	return config, opts, nil
}

// describeKnobs is the knobs for the plan line: "tf32=false memory_fraction=0.45", or "".
func describeKnobs(knobs []cudaKnob) string {
	parts := make([]string, len(knobs))
	for i, k := range knobs {
		parts[i] = k.name + "=" + k.value
	}
	return strings.Join(parts, " ")
}
