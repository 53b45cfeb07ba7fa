"""A Hugging Face Trainer script as people write them: a tiny GPT-2 built from its config
(no download), TrainingArguments, trainer.train(), the model saved at the end.

``--max-steps 2`` limits it by hand (the cold baseline of benchmarks/warm.py); without it,
three epochs, as a quick-dev run would limit them.
"""

import argparse

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n):
        self.ids = torch.randint(0, 64, (n, 16))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max-steps", type=int, default=-1)
    parser.add_argument("--output-dir", default="out")
    args = parser.parse_args()
    config = GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=2)
    model = GPT2LMHeadModel(config)
    training = TrainingArguments(
        output_dir=args.output_dir,
        num_train_epochs=3,
        max_steps=args.max_steps,
        per_device_train_batch_size=4,
        save_strategy="no",
        report_to=[],
    )
    trainer = Trainer(model=model, args=training, train_dataset=Tokens(200))
    trainer.train()
    trainer.save_model(f"{args.output_dir}/final")


if __name__ == "__main__":
    main()
