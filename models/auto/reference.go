package auto

import "encoding/json"

// shapeKeys adds a shape's config.json keys (hidden_size, num_hidden_layers,
// num_attention_heads, intermediate_size, vocab_size) and num_labels 2 to a reference
// model's other keys.
func shapeKeys(s Shape, keys map[string]any) map[string]any {
	keys["vocab_size"], keys["hidden_size"], keys["num_hidden_layers"] = s.Vocab, s.Hidden, s.Layers
	keys["num_attention_heads"], keys["intermediate_size"], keys["num_labels"] = s.Heads, s.FF, 2
	return keys
}

// parseKeys reads config.json keys with a family's ParseConfig (name names them in errors).
func parseKeys[C any](keys map[string]any, name string, parse func([]byte, string) (C, error)) (C, error) {
	b, err := json.Marshal(keys)
	if err != nil {
		var zero C
		return zero, err
	}
	return parse(b, name)
}
