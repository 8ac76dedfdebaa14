package trainer

// fp16's dynamic loss scaling in the run's records and on its progress line.

// lossScaleRecord adds, under MixedPrecision "fp16", the loss scale and the skipped updates
// to a training record.
func (f *fit) lossScaleRecord(r *Record) {
	if f.t.acc.Info().Precision != "fp16" {
		return
	}
	if scale, skipped, err := f.job.LossScale(); err == nil {
		r.LossScale, r.SkippedUpdates = scale, skipped
	}
}

// showSkippedUpdates hands the skipped updates to a display that shows them (progress.Bar
// does), under MixedPrecision "fp16".
func (f *fit) showSkippedUpdates() {
	d, ok := f.prog.(interface{ SetSkippedUpdates(int64) })
	if !ok || f.t.acc.Info().Precision != "fp16" {
		return
	}
	if _, skipped, err := f.job.LossScale(); err == nil {
		d.SetSkippedUpdates(skipped)
	}
}
