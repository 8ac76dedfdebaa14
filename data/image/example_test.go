package image_test

import (
	"fmt"

	"github.com/goaccel/goaccel/data"
	"github.com/goaccel/goaccel/data/image"
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
