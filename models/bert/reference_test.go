package bert

import (
	"fmt"
	"math"
)

// hostBERT is an independent, plain-Go float64 implementation of BertForSequenceClassification
// (inference), written from the model's definition, used to check the GoMLX graph.
type hostBERT struct {
	cfg Config
	w   map[string][]float32 // HF name -> row-major values
}

// linear computes x·Wᵀ + b for x [n, in], W [out, in].
func (h *hostBERT) linear(name string, x [][]float64) [][]float64 {
	w, b := h.w[name+".weight"], h.w[name+".bias"]
	out := len(b)
	in := len(w) / out
	y := make([][]float64, len(x))
	for i, row := range x {
		if len(row) != in {
			panic(fmt.Sprintf("%s: input width %d, want %d", name, len(row), in))
		}
		y[i] = make([]float64, out)
		for o := range out {
			sum := float64(b[o])
			for k := range in {
				sum += row[k] * float64(w[o*in+k])
			}
			y[i][o] = sum
		}
	}
	return y
}

// layerNorm normalises each row (biased variance, eps inside the square root).
func (h *hostBERT) layerNorm(name string, x [][]float64) [][]float64 {
	gamma, beta := h.w[name+".weight"], h.w[name+".bias"]
	y := make([][]float64, len(x))
	for i, row := range x {
		mean, variance := 0.0, 0.0
		for _, v := range row {
			mean += v
		}
		mean /= float64(len(row))
		for _, v := range row {
			variance += (v - mean) * (v - mean)
		}
		variance /= float64(len(row))
		y[i] = make([]float64, len(row))
		for j, v := range row {
			y[i][j] = (v-mean)/math.Sqrt(variance+h.cfg.LayerNormEps)*float64(gamma[j]) + float64(beta[j])
		}
	}
	return y
}

// forward returns hidden [L][H], pooled [H] and logits [labels] of one sequence.
func (h *hostBERT) forward(ids, mask, types []int32) (hidden [][]float64, pooled, logits []float64) {
	cfg := h.cfg
	H := cfg.HiddenSize
	L := len(ids)
	x := make([][]float64, L)
	word := h.w["bert.embeddings.word_embeddings.weight"]
	pos := h.w["bert.embeddings.position_embeddings.weight"]
	typ := h.w["bert.embeddings.token_type_embeddings.weight"]
	for i := range L {
		x[i] = make([]float64, H)
		for j := range H {
			x[i][j] = float64(word[int(ids[i])*H+j]) + float64(pos[i*H+j]) + float64(typ[int(types[i])*H+j])
		}
	}
	x = h.layerNorm("bert.embeddings.LayerNorm", x)

	heads, d := cfg.NumAttentionHeads, cfg.HeadDim()
	for layer := range cfg.NumHiddenLayers {
		p := fmt.Sprintf("bert.encoder.layer.%d.", layer)
		q := h.linear(p+"attention.self.query", x)
		k := h.linear(p+"attention.self.key", x)
		v := h.linear(p+"attention.self.value", x)
		ctx := make([][]float64, L)
		for i := range L {
			ctx[i] = make([]float64, H)
		}
		for hd := range heads {
			for i := range L {
				scores := make([]float64, L)
				maxScore := math.Inf(-1)
				for j := range L {
					if mask[j] == 0 {
						continue
					}
					s := 0.0
					for c := range d {
						s += q[i][hd*d+c] * k[j][hd*d+c]
					}
					scores[j] = s / math.Sqrt(float64(d))
					maxScore = math.Max(maxScore, scores[j])
				}
				total := 0.0
				for j := range L {
					if mask[j] == 0 {
						scores[j] = 0
						continue
					}
					scores[j] = math.Exp(scores[j] - maxScore)
					total += scores[j]
				}
				for j := range L {
					for c := range d {
						ctx[i][hd*d+c] += scores[j] / total * v[j][hd*d+c]
					}
				}
			}
		}
		a := h.linear(p+"attention.output.dense", ctx)
		for i := range L {
			for j := range H {
				a[i][j] += x[i][j]
			}
		}
		x = h.layerNorm(p+"attention.output.LayerNorm", a)
		inter := h.linear(p+"intermediate.dense", x)
		for i := range inter {
			for j, val := range inter[i] {
				inter[i][j] = 0.5 * val * (1 + math.Erf(val/math.Sqrt2))
			}
		}
		out := h.linear(p+"output.dense", inter)
		for i := range L {
			for j := range H {
				out[i][j] += x[i][j]
			}
		}
		x = h.layerNorm(p+"output.LayerNorm", out)
	}
	pooledRows := h.linear("bert.pooler.dense", x[:1])
	pooled = pooledRows[0]
	for j := range pooled {
		pooled[j] = math.Tanh(pooled[j])
	}
	if _, ok := h.w["classifier.weight"]; ok {
		logits = h.linear("classifier", [][]float64{pooled})[0]
	}
	return x, pooled, logits
}
