// Package text reads text datasets for package data's loaders: files of one example per line
// (LineFile, a data.Stream that never holds the file in memory), tab-separated columns
// (ParseTSV, LabeledTSV), the sentiment dataset's pair of files with one class each
// (LoadPolarity, ReadLabeledFiles, into a data.Slice[Labeled]) and the encodings such files come
// in (UTF-8, Windows-1252/Latin-1, detected with EncodingAuto). Bad lines are errors naming
// file:line, or are skipped and counted (LineOptions, Skips).
//
//	all, err := text.LoadPolarity(dir+"/rt-polarity.pos", dir+"/rt-polarity.neg")
//	train, test, err := data.Split(all, 0.1, seed)
//	loader, err := data.NewLoader(train, data.LoaderConfig[text.Labeled]{BatchSize: 32, Collate: tok.Collate})
package text
