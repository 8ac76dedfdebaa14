package main

import (
	"strings"
	"testing"
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
	want := options{DataDir: "d", ModelDir: "m", MixedPrecision: "no", Epochs: 2, MaxSteps: 30, BatchSize: 8, MaxLen: 32,
		Workers: 2, LearningRate: 3e-5, TestSize: 0.2, WeightDecay: 0.01, Seed: 7, ReportTo: "none", LoggingSteps: 1,
		TrainFile: "t.parquet", ValidationFile: "v.csv", TextColumnNames: "a,b", LabelColumnName: "y", TextColumnDelimiter: " [SEP] ",
		GradAccum: 4, MaxGradNorm: 1, WarmupRatio: 0.1, WarmupSteps: 3, Schedule: "linear", Patience: 2, EvalSteps: 6,
		SaveSteps: 5, SaveTotalLimit: 2, AsyncSave: true, GradientCheckpointing: true,
		UsePEFT: true, LoraR: 16, LoraAlpha: 32, LoraDropout: 0.05, LoraTargetModules: "query,key,value"}
	if o != want {
		t.Errorf("flags:\n got %+v\nwant %+v", o, want)
	}
	o = defaultOptions()
	if err := newFlagSet(&o).Parse([]string{"--lr", "0.5", "--num_train_epochs", "5", "--max-seq-length", "48"}); err != nil ||
		o.LearningRate != 0.5 || o.Epochs != 5 || o.MaxLen != 48 {
		t.Errorf("--lr 0.5 --num_train_epochs 5 --max-seq-length 48: %v, learning rate %g, epochs %d, max_len %d", err,
			o.LearningRate, o.Epochs, o.MaxLen)
	}
	o = defaultOptions()
	if err := newFlagSet(&o).Parse([]string{"--batchsize", "1"}); err == nil || !strings.Contains(err.Error(), "batchsize") {
		t.Errorf("--batchsize: %v, want pflag's unknown-flag error", err)
	}
}
