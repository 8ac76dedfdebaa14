package auto

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseImageProcessor: any preprocessor_config.json contents give an image processor or
// an error, never a panic; a processor it gives writes a file that parses again.
func FuzzParseImageProcessor(f *testing.F) {
	for _, p := range []string{"../vit/testdata/tiny", "../resnet/testdata/basic", "../convnext/testdata/tiny", "../vit/testdata/dinov2"} {
		if b, err := os.ReadFile(filepath.Join(p, ImageProcessorFile)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"image_processor_type": "ViTImageProcessor", "size": {"height": 0, "width": -3}}`))
	f.Add([]byte(`{"feature_extractor_type": "ViTFeatureExtractor", "size": 1e300, "resample": 9}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseImageProcessor(b, "preprocessor_config.json")
		if err != nil {
			return
		}
		dir := t.TempDir()
		if err := p.SavePretrained(dir); err != nil {
			return
		}
		again, err := os.ReadFile(filepath.Join(dir, ImageProcessorFile))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseImageProcessor(again, "written"); err != nil {
			t.Fatalf("a processor parsed from %q writes %q, which does not parse: %v", b, again, err)
		}
	})
}
