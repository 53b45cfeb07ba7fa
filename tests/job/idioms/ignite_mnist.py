"""pytorch-ignite's mnist_save_resume_engine.py, on synthetic images: a supervised trainer
and evaluator, the evaluator run on both loaders at each epoch's end, a Checkpoint of the
trainer's objects each epoch (DiskSaver into --log_dir), ``trainer.run(train_loader,
max_epochs=epochs)`` with --epochs 10 by default. The copy prints a FINAL line after run()."""

import argparse

import torch
from ignite.engine import Events, create_supervised_evaluator, create_supervised_trainer
from ignite.handlers import Checkpoint, DiskSaver
from ignite.metrics import Accuracy, Loss
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, kernel_size=5)
        self.fc = nn.Linear(4 * 12 * 12, 10)

    def forward(self, x):
        x = torch.relu(nn.functional.max_pool2d(self.conv(x), 2))
        return nn.functional.log_softmax(self.fc(x.flatten(1)), dim=-1)


def get_data_loaders(train_batch_size, val_batch_size):
    images, labels = torch.randn(512, 1, 28, 28), torch.randint(0, 10, (512,))
    train = DataLoader(TensorDataset(images, labels), batch_size=train_batch_size, shuffle=True)
    val = DataLoader(TensorDataset(images[:128], labels[:128]), batch_size=val_batch_size)
    return train, val


def run(train_batch_size, val_batch_size, epochs, lr, momentum, log_dir):
    train_loader, val_loader = get_data_loaders(train_batch_size, val_batch_size)
    model = Net()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model.to(device)
    criterion = nn.NLLLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
    trainer = create_supervised_trainer(model, optimizer, criterion, device=device)
    metrics = {"accuracy": Accuracy(), "nll": Loss(criterion)}
    evaluator = create_supervised_evaluator(model, metrics=metrics, device=device)

    @trainer.on(Events.EPOCH_COMPLETED)
    def log_validation_results(engine):
        evaluator.run(val_loader)
        print(f"Validation Results - Epoch: {engine.state.epoch} {evaluator.state.metrics}")

    objects_to_checkpoint = {"trainer": trainer, "model": model, "optimizer": optimizer}
    training_checkpoint = Checkpoint(
        to_save=objects_to_checkpoint,
        save_handler=DiskSaver(log_dir, require_empty=False),
        n_saved=None,
        global_step_transform=lambda *_: trainer.state.epoch,
    )
    trainer.add_event_handler(Events.EPOCH_COMPLETED(every=1), training_checkpoint)
    trainer.run(train_loader, max_epochs=epochs)
    return trainer, evaluator


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--val_batch_size", type=int, default=1000)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--momentum", type=float, default=0.5)
    # The original's default is /tmp/mnist_save_resume; here the script's own folder.
    parser.add_argument("--log_dir", type=str, default="mnist_save_resume")
    args = parser.parse_args()
    trainer, evaluator = run(
        args.batch_size, args.val_batch_size, args.epochs, args.lr, args.momentum, args.log_dir
    )
    accuracy = evaluator.state.metrics["accuracy"]
    epochs, iterations = trainer.state.epoch, trainer.state.iteration
    print(f"FINAL: {epochs} epochs, {iterations} iterations, accuracy {accuracy:.2f}")
