// Package image reads images as data: files decoded to 8-bit RGB the way transformers'
// load_image does with Pillow, and image datasets (folders as torchvision's ImageFolder and
// Hugging Face's imagefolder read them, Parquet and JSON Lines tables with an image column as
// Hugging Face datasets writes them, CIFAR-10 and CIFAR-100 in both their formats).
//
// # Datasets
//
// Folder (OpenFolder), Table (OpenTable) and CIFAR (LoadCIFAR) are each a
// data.Dataset[Example]: the same example type, served by data.NewLoader, which calls Get on
// its workers, so decoding runs in parallel, LoaderConfig.Workers global batches ahead at
// most twice over. Folder and Table hold a list (the files, or the rows' places), never the
// images: a folder of 1.3 million JPEGs costs its paths. CIFAR holds its 60,000 images' bytes,
// as torchvision does. With FolderOptions.SkipBad or TableOptions.SkipBad an image that does
// not decode is left out of training and counted (see data.Skip), as --skip_bad_images asks;
// without it, it ends the pass with an error naming the file (and, for a table, the row).
//
// # Decoding
//
// Decoder.Decode and Load read PNG, JPEG (baseline and progressive, any subsampling, gray,
// CMYK and YCCK), GIF (its first frame), BMP, TIFF, WebP and Netpbm (PPM, PGM, PBM), found
// from the file's bytes. The result is what Pillow gives for ImageOps.exif_transpose(Image.open(f)).convert("RGB"):
//
//   - the EXIF orientation (1 to 8) is applied, read from JPEG's APP1 segment, PNG's eXIf
//     chunk, WebP's EXIF chunk or the TIFF file's first IFD;
//   - gray is replicated into the three channels; alpha is dropped, not composited (an
//     RGBA pixel (10, 20, 30, 0) is (10, 20, 30)); a palette is looked up, the transparent
//     entry keeping its own colour; 16-bit colour keeps its high byte, 16-bit gray (Pillow's
//     I;16) is clipped to 255; CMYK becomes (255-C)(255-K)/255 per channel with Pillow's
//     rounding, after the Adobe inversion that libjpeg and Go's decoder both undo.
//
// PNG, GIF, BMP, TIFF, WebP (lossless and lossy) and Netpbm pixels equal Pillow 13.0.0's byte for
// byte (the tests compare with fixtures Pillow decoded). JPEG chroma is upsampled and
// converted to RGB exactly as libjpeg-turbo does (its "fancy" triangle filter and fixed-point
// tables); the inverse DCT is Go's image/jpeg's, not libjpeg's, which leaves pixels within 3
// of Pillow's (a mean difference under 0.05 on photos; docs/images.md has the figures).
//
// The header is read first: an image of more than Decoder.MaxPixels pixels (by default
// DefaultMaxPixels, Pillow's DecompressionBombError limit) is refused before its pixels are
// decoded. Every error names the file.
//
// # The image layout
//
// goaccel lays images out channels last: an image is HWC (row, column, channel) and a batch
// NHWC. It is the layout GoMLX's layers use by default (layers.Convolution,
// images.ChannelsLast) and the one XLA's CPU backend runs convolutions in natively (its
// Eigen kernels are NHWC; other layouts are transposed around them), and it is the decoded
// file's own order, so no transpose is needed between the file and the tensor. Models
// converted from PyTorch, which is NCHW, transpose their convolution kernels once at load,
// not every batch at run time.
package image
