"""A Hugging Face model built from its configuration (no download), fine-tuned as
transformers' run_glue_no_trainer.py does: BERT-base for sequence classification,
batch 32 of 128 tokens, AdamW at 2e-5 with no decay on biases and LayerNorm weights, a
linear schedule, the loss from ``labels=``. ``--mixed-precision bf16`` is autocast, as
accelerate's ``mixed_precision="bf16"`` applies it.

    python benchmarks/gpu_models/hf_bert.py --mixed-precision bf16
"""

from __future__ import annotations

import argparse

import torch
from transformers import AutoModelForSequenceClassification, BertConfig


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--per_device_train_batch_size", type=int, default=32)
    parser.add_argument("--max_length", type=int, default=128)
    parser.add_argument("--learning_rate", type=float, default=2e-5)
    parser.add_argument("--weight_decay", type=float, default=0.0)
    parser.add_argument("--mixed-precision", choices=["no", "bf16", "fp16"], default="no")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tiny", action="store_true")
    args = parser.parse_args()

    config = BertConfig(num_labels=2)  # bert-base-uncased's shape
    if args.tiny:
        config = BertConfig(
            num_labels=2, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
            intermediate_size=128, vocab_size=1000,
        )  # fmt: skip
    torch.manual_seed(42)
    device = torch.device(args.device)
    model = AutoModelForSequenceClassification.from_config(config).to(device)

    no_decay = ["bias", "LayerNorm.weight"]
    groups = [
        {
            "params": [p for n, p in model.named_parameters() if not any(d in n for d in no_decay)],
            "weight_decay": args.weight_decay,
        },
        {
            "params": [p for n, p in model.named_parameters() if any(d in n for d in no_decay)],
            "weight_decay": 0.0,
        },
    ]
    optimizer = torch.optim.AdamW(groups, lr=args.learning_rate)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: 1 - s / 1000)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(args.mixed_precision)
    scaler = torch.amp.GradScaler("cuda", enabled=args.mixed_precision == "fp16")

    batch_size, length = args.per_device_train_batch_size, args.max_length
    model.train()
    for step in range(args.steps):
        batch = {
            "input_ids": torch.randint(0, config.vocab_size, (batch_size, length)),
            "attention_mask": torch.ones(batch_size, length, dtype=torch.long),
            "token_type_ids": torch.zeros(batch_size, length, dtype=torch.long),
            "labels": torch.randint(0, 2, (batch_size,)),
        }
        batch = {k: v.to(device) for k, v in batch.items()}
        with torch.autocast("cuda", dtype=dtype or torch.float16, enabled=dtype is not None):
            outputs = model(**batch)
        loss = outputs.loss
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
        optimizer.zero_grad()
        print(f"step {step}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
