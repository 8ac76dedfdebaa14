package main

import (
	"strings"
	"testing"

	"github.com/goaccel/goaccel/trainer/args"
)

// TestFlags: run_classification.py's and the Trainer's names, kebab-case spellings, the
// aliases (--num_train_epochs, --max_seq_length, the earlier --lr); an unknown flag is
// pflag's error (main adds "--help lists the flags").
func TestFlags(t *testing.T) {
	o := defaultOptions()
	err := newFlagSet(&o).Parse([]string{"--batch-size", "8", "--max-steps", "30", "--learning_rate", "3e-5",
		"--weight-decay", "0.01", "--model_dir", "m", "--data-dir", "d", "--epochs", "2", "--max_len", "32", "--dropout", "0",
		"--seed", "7", "--test_size", "0.2", "--logging-steps", "1", "--train_file", "t.parquet", "--validation-file", "v.csv",
		"--text_column_names", "a,b", "--label_column_name", "y", "--text_column_delimiter", " [SEP] ",
		"--gradient-accumulation-steps", "4", "--max_grad_norm", "1", "--warmup_ratio", "0.1", "--warmup_steps", "3",
		"--lr_scheduler_type", "linear", "--patience", "2", "--eval_steps", "6", "--save_steps", "5",
		"--save_total_limit", "2", "--async_save", "--gradient-checkpointing", "--report_to", "none",
		"--use-peft", "--lora_r", "16", "--lora-alpha", "32", "--lora_dropout", "0.05", "--lora_target_modules", "query,key,value"})
	if err != nil {
		t.Fatal(err)
	}
	tr := args.Defaults()
	tr.ModelDir, tr.Epochs, tr.MaxSteps, tr.BatchSize, tr.LearningRate, tr.WeightDecay = "m", 2, 30, 8, 3e-5, 0.01
	tr.Seed, tr.ReportTo, tr.LoggingSteps, tr.Dropout, tr.GradAccum, tr.MaxGradNorm = 7, "none", 1, 0, 4, 1
	tr.WarmupRatio, tr.WarmupSteps, tr.Schedule, tr.Patience, tr.EvalSteps = 0.1, 3, "linear", 2, 6
	tr.SaveSteps, tr.SaveTotalLimit, tr.AsyncSave, tr.GradientCheckpointing = 5, 2, true, true
	tr.UsePEFT, tr.LoraR, tr.LoraAlpha, tr.LoraDropout, tr.LoraTargetModules = true, 16, 32, 0.05, "query,key,value"
	want := options{Training: tr, DataDir: "d", MaxLen: 32, TestSize: 0.2,
		TrainFile: "t.parquet", ValidationFile: "v.csv", TextColumnNames: "a,b", LabelColumnName: "y", TextColumnDelimiter: " [SEP] "}
	if o != want {
		t.Errorf("flags:\n got %+v\nwant %+v", o, want)
	}
	o = defaultOptions()
	if err := newFlagSet(&o).Parse([]string{"--lr", "0.5", "--num_train_epochs", "5", "--max-seq-length", "48",
		"--per_device_train_batch_size", "4", "--model_name_or_path", "org/name"}); err != nil ||
		o.LearningRate != 0.5 || o.Epochs != 5 || o.MaxLen != 48 || o.BatchSize != 4 || o.ModelDir != "org/name" {
		t.Errorf("--lr 0.5 --num_train_epochs 5 --max-seq-length 48 --per_device_train_batch_size 4 --model_name_or_path org/name: "+
			"%v, learning rate %g, epochs %d, max_len %d, batch size %d, model %q", err, o.LearningRate, o.Epochs, o.MaxLen,
			o.BatchSize, o.ModelDir)
	}
	o = defaultOptions()
	if err := newFlagSet(&o).Parse([]string{"--batchsize", "1"}); err == nil || !strings.Contains(err.Error(), "batchsize") {
		t.Errorf("--batchsize: %v, want pflag's unknown-flag error", err)
	}
}
