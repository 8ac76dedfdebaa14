// Package metrics computes evaluation metrics on the host from gathered predictions: accuracy,
// precision, recall and F1 (per class, binary and macro-averaged), the confusion matrix, and
// means (of losses, say). They are plain Go values, accumulated batch by batch, that print
// (String) and log (Values) easily.
//
// One type per task shape, each exact over the whole evaluation set:
//   - Confusion: single-label classification (scikit-learn's figures);
//   - MultiLabel: multi-label classification, from logits (scikit-learn's micro and macro
//     precision, recall and F1, and subset accuracy);
//   - Regression: MSE, MAE, and Pearson's and Spearman's correlations (scikit-learn's and
//     scipy's);
//   - Entities: token classification (NER), entity-level precision, recall and F1 per type
//     and averaged, and token accuracy (seqeval's, in its default or strict IOB2 mode), from
//     tag strings or from gathered tag ids with -100 at the positions that have no tag;
//   - Mean: a mean loss.
//
// scripts/make_metrics_fixtures.py records the reference libraries' figures on random cases
// in testdata; the tests match them to 1e-12.
//
// Every Add takes the real/padding mask that comes with a batch (data.Batch.Real, or the mask
// of gathered results): slots marked false are the duplicates a distributed sampler adds so that
// every device gets the same number of examples, or the fillers that complete a short last batch.
// They are skipped, so each real example counts exactly once, whatever the number of devices.
//
//	clf := metrics.NewConfusion(2)
//	loss := &metrics.Mean{}
//	for _, b := range evalBatches { // preds, labels, per-example losses and the real mask of each
//		if err := clf.Add(b.Preds, b.Labels, b.Real); err != nil {
//			return err
//		}
//		if err := loss.AddMasked(b.Losses, b.Real); err != nil {
//			return err
//		}
//	}
//	fmt.Println(clf, "loss", loss) // n=1066 accuracy=0.8124 f1=0.8133 ... loss 0.4211
package metrics
