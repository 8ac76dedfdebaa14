// Package trainer is an optional training loop on top of the Accelerator — Keras' fit, the
// Hugging Face Trainer — for programs that do not want to write the epoch loop by hand. The
// hand-written loop over accelerator.Job stays fully supported; Fit is built from the same
// public pieces (Prepare, Job.TrainStep, Backward, Job.Evaluate, checkpoint.Manager).
//
//	acc, err := accelerator.New(accelerator.Config{Seed: 42})
//	opt, err := optim.Adam(optim.AdamConfig{}) // torch.optim.Adam's defaults; the rate is Config's
//	tr, err := trainer.New(acc, store, opt, trainer.SingleLabelClassification(2, clf.Logits))
//	res, err := tr.Fit(trainLoader, testLoader, trainer.Config{
//	    OutputDir:    "runs/sst",
//	    Epochs:       3,
//	    LearningRate: 2e-5, Schedule: "linear", WarmupSteps: 100,
//	    ClipGradNorm: 1, GradientAccumulation: 2,
//	    BestMetric:   "accuracy", Patience: 2,
//	})
//	fmt.Println("best accuracy", res.Best, "at step", res.BestStep, "saved in", res.BestCheckpoint)
//
// What Fit does:
//
//   - Steps count optimizer updates; with GradientAccumulation = k an update takes k batches.
//   - The learning rate is given once, as Config.LearningRate, the peak of the named schedule;
//     the optimizer is built without one (optim.AdamConfig{}), and a rate it has is replaced.
//   - The learning rate follows the named schedule (constant, linear or cosine, with linear
//     warm-up; see Config.Schedule), computed in the training graph; the rate actually used
//     is read back from the Store variable /optimizers/learning_rate for the logs.
//   - It evaluates at the end of every epoch and every EvalEvery updates through
//     Job.Evaluate (gathered over all devices, padding dropped), keeps the best model by
//     BestMetric under best/, stops early after Patience evaluations without improvement, and
//     saves the last checkpoint every SaveEvery updates and at each epoch end.
//   - On the main process it tells a Display what happens: by default a progress.Bar, one
//     progress bar per epoch on a terminal (steps, smoothed loss, examples/s, ETA) and one line
//     per evaluation; elsewhere (a file, CI) a plain line every PlainInterval, without escape
//     codes. Config.Display attaches another.
//   - The run directory holds config.json (hyperparameters, backend, devices, versions),
//     metrics.jsonl (Record lines; Config.Loggers get the same records), the checkpoints and,
//     at the end, curves.png and curves.svg (Plot; `goaccel plot RUN_DIR`).
//   - Giving Fit the directory of an interrupted run resumes it from its latest intact
//     checkpoint: same weights, optimizer state, random state and data position, so the run
//     ends as an uninterrupted one would (the tests find it bit-identical on XLA CPU), and
//     metrics.jsonl goes on without gaps or repeats.
//   - Bad input (unknown schedule or metric, a directory that holds something else, another
//     configuration or a checkpoint of another model shape) is an error before any training
//     step, and leaves an existing directory untouched.
//
// A hand-written loop gets the same run directory from Run (OpenRun: config, resume, records,
// best/, curves), the run directory of the same command after a Ctrl-C from ChooseRunDir, and
// the clean stop from NotifyInterrupt. examples/bert_classify is a program on Fit.
//
// Mixed precision is the Accelerator's business (accelerator.Config.MixedPrecision); the run's
// precision is recorded in config.json with the Accelerator's plan. Under "fp16" the training
// records carry the loss scale and the updates skipped so far ("loss_scale",
// "skipped_updates"), and the progress line shows "N skipped" once there are any.
package trainer
