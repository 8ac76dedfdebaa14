package image_test

import (
	"fmt"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/image"
	"github.com/goaccel/goaccel/data/table"
	"github.com/gomlx/gomlx/core/tensors"
)

// CIFAR-10 as torchvision's CIFAR10(root, train=True) reads it, from either format.
func ExampleLoadCIFAR() {
	train, err := image.LoadCIFAR("testdata/cifar/cifar-10-batches-py", true)
	if err != nil {
		fmt.Println(err)
		return
	}
	ex, _ := train.Get(0)
	fmt.Println(train.Len(), len(train.Classes), ex.Image.Width, ex.Image.Height, len(ex.Image.Pix), ex.Source)
	// Output: 15 10 32 32 3072 data_batch_1[0]
}

// Decoding a file as transformers' load_image does.
func ExampleLoad() {
	m, err := image.Load("testdata/decode/orient6.png") // 13x9, EXIF orientation 6
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(m.Width, m.Height)
	// Output: 9 13
}

// A seeded train/validation split of one folder, as run_image_classification.py's
// train_val_split.
func ExampleOpenFolder() {
	folder, err := image.OpenFolder("testdata/folder", image.FolderOptions{}) // cat/, dog/
	if err != nil {
		fmt.Println(err)
		return
	}
	train, val, err := data.Split(folder, 0.4, 42)
	if err != nil {
		fmt.Println(err)
		return
	}
	ex, _ := val.Get(0) // decoded now, not when the folder was opened
	fmt.Println(folder.Classes, folder.Len(), train.Len(), val.Len(), ex.Image.Width, ex.Image.Height)
	// Output: [cat dog] 5 3 2 8 6
}

// A Parquet file that Hugging Face datasets wrote with an Image feature (bytes or paths per
// row) and a ClassLabel, as the same Examples a folder gives; its row 2's bytes are not an
// image, which SkipBad leaves out and the loader counts instead of ending the run
// (--skip_bad_images).
func ExampleOpenTable() {
	train, err := image.OpenTable(table.Spec{ImageColumn: "image", LabelColumn: "label"},
		image.TableOptions{SkipBad: true}, "../table/testdata/images/bad_bytes.parquet")
	if err != nil {
		fmt.Println(err)
		return
	}
	ex, _ := train.Get(3) // this row names img/gray.png beside the file
	fmt.Println(train.Len(), train.Classes, train.Problem, ex.Image.Width, ex.Image.Height, ex.Label)
	loader, err := data.NewLoader[image.Example](train, data.LoaderConfig[image.Example]{BatchSize: 2, Workers: 2,
		Collate: func(b []image.Example) ([]*tensors.Tensor, *tensors.Tensor, error) {
			labels := make([]int32, len(b))
			for i, ex := range b {
				labels[i] = int32(ex.Label)
			}
			return nil, tensors.FromValue(labels), nil
		},
		OnSkip: func(index int, err error) { fmt.Println("skipped:", err) }})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, err := range loader.Epoch() {
		if err != nil {
			fmt.Println(err)
		}
	}
	fmt.Println(loader.Skipped(), "skipped")
	// Output:
	// 4 [0 1 2] single_label_classification 6 3 0
	// skipped: replica 0: example 1: image: ../table/testdata/images/bad_bytes.parquet: row group 0, row 2, column "image": not an image in a known format (PNG, JPEG, GIF, BMP, TIFF, WebP, PPM/PGM/PBM)
	// 1 skipped
}
