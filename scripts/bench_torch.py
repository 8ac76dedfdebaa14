"""PyTorch side of `goaccel bench`: one work (MLP or a classifier) trained on a fixed batch.

`goaccel bench` starts this script once per work and drives it over stdin/stdout with the same
line protocol as its own Go worker, so that both frameworks run alternating rounds in one
invocation:

  worker -> {"event": "first_step", "prepare_to_first_s": ..., "cpu_s": ...}   after the first update
  worker -> {"event": "ready"}                                              after the warm-up steps
  bench  -> "run N"      worker -> {"event": "round", "steps": N, "seconds": ..., "loss": ...}
  bench  -> "quit"       worker -> {"event": "done", "peak_rss_mb": ..., "device_peak_mb": ...}

Errors are reported as {"event": "error", "error": "..."}. The model, batch and optimizer match
cmd/goaccel/internal/bench/work.go: the MLP is 512 -> layers x hidden (ReLU) -> 10 with Adam; BERT is
transformers' BertForSequenceClassification (2 labels) at the requested shape with AdamW
(weight decay 0.01, as goaccel's Adam with WeightDecay). Learning rate 1e-4 for both. The model
families' works, modernbert and deberta, are transformers' ModernBertForSequenceClassification and
DebertaV2ForSequenceClassification built from the config.json that goaccel's family package writes
for the work (--config, the JSON text; bench passes it), trained the same way, on input ids and an
attention mask (no token types: ModernBERT has none, DeBERTa-v3's type_vocab_size is 0); an image
family's work (--work image: vit, resnet, convnext...) is transformers' AutoModelForImageClassification
of its config.json's model_type, on random pixels of --seq pixels a side (--channels_last: PyTorch's
channels_last memory format).

It can also be run by hand for a one-off figure:

  python3 scripts/bench_torch.py --work bert --batch 64 --seq 64 --bert_hidden 384 --bert_layers 6 --once 5
  python3 scripts/bench_torch.py --work deberta --batch 8 --seq 128 --config "$(cat config.json)" --once 2
"""
import argparse
import json
import os
import sys
import time

T0 = time.perf_counter()


def emit(**kv):
    sys.stdout.write(json.dumps(kv) + "\n")
    sys.stdout.flush()


def peak_rss_mb():
    # VmHWM: the process's peak resident set size.
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def build(args, torch, dev):
    g = torch.Generator(device="cpu").manual_seed(1)
    if args.work == "mlp":
        layers, d = [], 512
        for _ in range(args.layers):
            layers += [torch.nn.Linear(d, args.hidden), torch.nn.ReLU()]
            d = args.hidden
        layers.append(torch.nn.Linear(d, 10))
        model = torch.nn.Sequential(*layers).to(dev)
        x = (torch.rand(args.batch, 512, generator=g) - 0.5).to(dev)
        y = torch.randint(0, 10, (args.batch,), generator=g).to(dev)
        lossf = torch.nn.CrossEntropyLoss()
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)
        return model, (lambda m: lossf(m(x), y)), opt
    # transformers' default attention (SDPA) unless --attn names another: what a user gets.
    kw = {"attn_implementation": args.attn} if args.attn else {}
    if args.work in ("modernbert", "deberta"):
        return build_family(args, torch, dev, g, kw)
    if args.work == "image":
        return build_image_family(args, torch, dev, g, kw)
    from transformers import BertConfig, BertForSequenceClassification
    cfg = BertConfig(**kw, vocab_size=args.vocab, hidden_size=args.bert_hidden, num_hidden_layers=args.bert_layers,
                     num_attention_heads=args.bert_heads, intermediate_size=args.bert_ff,
                     max_position_embeddings=max(512, args.seq), num_labels=2)
    model = BertForSequenceClassification(cfg).to(dev)
    model.train()
    ids = torch.randint(0, args.vocab, (args.batch, args.seq), generator=g).to(dev)
    mask = torch.ones(args.batch, args.seq, dtype=torch.long, device=dev)
    types = torch.zeros(args.batch, args.seq, dtype=torch.long, device=dev)
    y = torch.randint(0, 2, (args.batch,), generator=g).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    return model, (lambda m: m(input_ids=ids, attention_mask=mask, token_type_ids=types, labels=y).loss), opt


def build_family(args, torch, dev, g, kw):
    """The modernbert or deberta work: the family's classifier from --config, random ids, no padding."""
    import transformers
    if not args.config:
        raise SystemExit("--work %s needs --config (the config.json goaccel's family package writes)" % args.work)
    if args.work == "modernbert":
        config_class, model_class = transformers.ModernBertConfig, transformers.ModernBertForSequenceClassification
    else:
        config_class, model_class = transformers.DebertaV2Config, transformers.DebertaV2ForSequenceClassification
    cfg = config_class.from_dict(json.loads(args.config), **kw)
    model = model_class(cfg).to(dev)
    model.train()
    ids = torch.randint(0, cfg.vocab_size, (args.batch, args.seq), generator=g).to(dev)
    mask = torch.ones(args.batch, args.seq, dtype=torch.long, device=dev)
    y = torch.randint(0, 2, (args.batch,), generator=g).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    return model, (lambda m: m(input_ids=ids, attention_mask=mask, labels=y).loss), opt


def build_image_family(args, torch, dev, g, kw):
    """An image family's work (--work image): transformers' AutoModelForImageClassification for
    the model_type of --config (the config.json goaccel's family package writes), random pixels
    uniform in [-1, 1) of --seq pixels a side, NCHW as transformers takes them, 2 labels; with
    --channels_last the model and pixels in torch.channels_last (PyTorch's faster layout for
    convolutions on CPU; a ViT's one convolution is its patch embedding)."""
    import transformers
    if not args.config:
        raise SystemExit("--work image needs --config (the config.json goaccel's family package writes)")
    keys = json.loads(args.config)
    if "model_type" not in keys:
        raise SystemExit("--work image: --config has no model_type")
    cfg = transformers.AutoConfig.for_model(**keys, **kw)
    model = transformers.AutoModelForImageClassification.from_config(cfg).to(dev)
    model.train()
    x = (torch.rand(args.batch, cfg.num_channels, args.seq, args.seq, generator=g) * 2 - 1).to(dev)
    if args.channels_last:
        model = model.to(memory_format=torch.channels_last)
        x = x.contiguous(memory_format=torch.channels_last)
    y = torch.randint(0, 2, (args.batch,), generator=g).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    return model, (lambda m: m(pixel_values=x, labels=y).loss), opt


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--work", choices=["mlp", "bert", "modernbert", "deberta", "image"], required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--vocab", type=int, default=30522)
    p.add_argument("--bert_hidden", type=int, default=384)
    p.add_argument("--bert_layers", type=int, default=6)
    p.add_argument("--bert_heads", type=int, default=12)
    p.add_argument("--bert_ff", type=int, default=1536)
    p.add_argument("--precision", choices=["fp32", "tf32", "bf16", "fp16"], default="fp32")
    p.add_argument("--devices", type=int, default=1)
    p.add_argument("--device", default="", help="cpu or cuda (default: cuda when available)")
    p.add_argument("--threads", type=int, default=0, help="intra-op threads on CPU (0: leave torch's default)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--config", default="", help="modernbert, deberta, image: the model's config.json, as JSON text")
    p.add_argument("--channels_last", action="store_true", help="image: model and pixels in torch.channels_last")
    p.add_argument("--attn", default="", help="transformers attention implementation (eager, sdpa); default: its own")
    p.add_argument("--once", type=int, default=0, help="run this many timed steps, print one line and exit")
    args = p.parse_args()
    try:
        import torch
    except Exception as e:  # noqa: BLE001
        emit(event="error", error="import torch: %s" % e)
        return 1
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    dev = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if args.devices != 1:
        emit(event="error", error="the PyTorch worker drives one device (multi-device DDP is not implemented)")
        return 1
    if dev == "cpu" and args.precision == "tf32":
        emit(event="error", error="tf32 needs a CUDA device")
        return 1
    torch.manual_seed(1)
    torch.backends.cuda.matmul.allow_tf32 = args.precision == "tf32"
    torch.backends.cudnn.allow_tf32 = args.precision == "tf32"
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    t_setup = time.perf_counter()
    model, loss_of, opt = build(args, torch, dev)
    autocast = args.precision in ("bf16", "fp16")
    half = torch.float16 if args.precision == "fp16" else torch.bfloat16
    # fp16 scales the loss, as goaccel's fp16 does (torch.amp.GradScaler, its default settings).
    scaler = torch.amp.GradScaler(dev, enabled=args.precision == "fp16")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev, dtype=half, enabled=autocast):
            loss = loss_of(model)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        return loss

    loss = step()
    loss.item()
    sync()
    now = time.perf_counter()
    emit(event="first_step", prepare_to_first_s=round(now - t_setup, 4), import_s=round(t_setup - T0, 4),
         cpu_s=round(time.process_time(), 4),
         info=dict(torch=torch.__version__, device=dev, threads=torch.get_num_threads(),
                   attn=getattr(getattr(model, "config", None), "_attn_implementation", None),
                   glibc_tunables=os.environ.get("GLIBC_TUNABLES", ""),
                   channels_last=bool(getattr(args, "channels_last", False))))
    for _ in range(args.warmup):
        step()
    sync()
    emit(event="ready", cpu_s=round(time.process_time(), 4))

    def run(n):
        t = time.perf_counter()
        for _ in range(n):
            loss = step()
        value = loss.item()
        sync()
        return time.perf_counter() - t, value

    if args.once:
        el, value = run(args.once)
        emit(event="round", steps=args.once, seconds=round(el, 6), loss=value, cpu_s=round(time.process_time(), 4))
        return 0
    for line in sys.stdin:
        cmd = line.split()
        if not cmd:
            continue
        if cmd[0] == "run":
            el, value = run(int(cmd[1]))
            emit(event="round", steps=int(cmd[1]), seconds=round(el, 6), loss=value, cpu_s=round(time.process_time(), 4))
        elif cmd[0] == "quit":
            break
    dpeak = torch.cuda.max_memory_allocated() / 2**20 if dev == "cuda" else None
    emit(event="done", peak_rss_mb=round(peak_rss_mb(), 1), device_peak_mb=dpeak)
    return 0


if __name__ == "__main__":
    sys.exit(main())
