"""A Hugging Face Trainer: 3 epochs, evaluation and saving every epoch, TensorBoard logs,
then the final model saved by hand. A tiny GPT-2 built from its config (no download)."""

import torch
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments


class Tokens(torch.utils.data.Dataset):
    def __init__(self, n):
        self.ids = torch.randint(0, 64, (n, 16))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


config = GPT2Config(vocab_size=64, n_positions=16, n_embd=32, n_layer=2, n_head=2)
model = GPT2LMHeadModel(config)
args = TrainingArguments(
    output_dir="out",
    num_train_epochs=3,
    per_device_train_batch_size=4,
    per_device_eval_batch_size=4,
    eval_strategy="epoch",
    save_strategy="epoch",
    logging_strategy="epoch",
    report_to="tensorboard",
    dataloader_num_workers=4,
)
trainer = Trainer(model=model, args=args, train_dataset=Tokens(400), eval_dataset=Tokens(80))
trainer.train()
print(trainer.evaluate())
trainer.save_model("out/final")
model.save_pretrained("out/pretrained")
