// Package data feeds a goaccel Accelerator: datasets, the distributed sampler and the loader
// that collates batches for every replica. Reading text files (line files, TSV, the sentiment
// dataset's pair of files, encodings) is package data/text's job; reading files with named
// columns (CSV, JSON Lines, Parquet) as text-classification datasets is data/table's.
//
// Words: an example is one item of a dataset; a batch is what one device (replica) processes,
// BatchSize examples; a global batch (GlobalBatch) is the batches of all local devices that are
// processed together, collated at once (over all processes: BatchSize x replicas examples, or a
// fixed LoaderConfig.GlobalBatchSize shared out over the replicas, the same on any topology); a step is one optimizer update, made of one global
// batch (or several, with gradient accumulation): this package never counts steps.
//
// It plays the part of PyTorch's Dataset, IterableDataset, DistributedSampler and DataLoader,
// with three differences that remove common mistakes:
//
//   - every example slot of a Batch carries a real/padding bit (Batch.Real and Batch.Mask), so
//     metrics never count the duplicates the sampler adds to even out the replicas;
//   - the epoch advances by itself at the end of each pass (no forgotten set_epoch);
//   - the loader's position (epoch, global batches consumed, the place in the epoch's global
//     example order, seed) is saved with State and restored with Restore, on any replica
//     count: a restored loader yields the rest of the epoch, each remaining example exactly
//     once, and, on the same count or with GlobalBatchSize, exactly the global batches an
//     uninterrupted run would have.
//
// Two kinds of datasets exist: indexed ones (Dataset: Len and Get, such as Slice and Subset),
// which can be shuffled, and streaming ones (Stream: an iterator, such as text.LineFile, which reads
// a text file line by line and never holds it whole in memory). NewLoader serves the first kind
// through a DistributedSampler; NewStreamLoader serves the second, dealing example i to replica
// i mod R.
//
// The package builds host tensors only (github.com/gomlx/gomlx/core/tensors); it never builds
// graphs nor talks to backends: moving batches to the devices is the Accelerator's job.
//
// A typical program:
//
//	all, err := text.LoadPolarity(dir+"/rt-polarity.pos", dir+"/rt-polarity.neg")
//	train, test, err := data.Split(all, 0.1, seed)
//	loader, err := data.NewLoader(train, data.LoaderConfig[text.Labeled]{
//		BatchSize: 32, Shuffle: true, Seed: seed, Workers: 2, Collate: tok.Collate})
//	job, err := acc.Prepare(store, opt, loader) // calls loader.Distribute
package data
