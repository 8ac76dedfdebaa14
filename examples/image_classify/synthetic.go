package main

import (
	"fmt"
	"math/rand/v2"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/image"
)

// syntheticClasses name the built-in set's classes: a hue, and stripes or none, what
// survives a random crop, a flip and a resize.
var syntheticClasses = []string{"red-plain", "red-striped", "green-plain", "green-striped", "blue-plain", "blue-striped"}

// synthetic is n images of the built-in classes, seeded: 40 to 63 pixels a side (so that the
// processor resizes and the crops differ), a tinted background, noise and, for the striped
// classes, stripes of a random direction, period and phase.
func synthetic(n int, seed int64) data.Slice[image.Example] {
	tints := [][3]float64{{200, 70, 60}, {60, 180, 70}, {60, 80, 210}}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x696d616765)) // "image"
	out := make(data.Slice[image.Example], n)
	for i := range out {
		label := rng.IntN(len(syntheticClasses))
		tint, striped, vertical := tints[label/2], label%2 == 1, rng.IntN(2) == 1
		w, h := 40+rng.IntN(24), 40+rng.IntN(24)
		period, phase := 5+rng.IntN(5), rng.IntN(10)
		m := &image.RGB{Width: w, Height: h, Pix: make([]uint8, w*h*3)}
		for y := range h {
			for x := range w {
				along := y
				if vertical {
					along = x
				}
				shade := 0.85
				if striped && (along+phase)/period%2 == 0 {
					shade = 0.45
				}
				for c := range 3 {
					v := tint[c]*shade + rng.NormFloat64()*18
					m.Pix[(y*w+x)*3+c] = uint8(min(max(v, 0), 255))
				}
			}
		}
		out[i] = image.Example{Image: m, Label: label, Source: fmt.Sprintf("synthetic[%d]", i)}
	}
	return out
}
