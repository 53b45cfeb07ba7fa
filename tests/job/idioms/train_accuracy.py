"""Train for a fixed number of epochs, then measure accuracy on the training set: the
training loader is iterated again after training, under no_grad and in eval mode (the
classic tutorial's ``evaluate(model, train_loader)``), taking no step there. Each epoch
first peeks at one batch for its size, as the DDP tutorial's ``_run_epoch`` does."""

import torch
from torch.utils.data import DataLoader, TensorDataset

num_epochs = 5
x = torch.randn(128, 8)
train_loader = DataLoader(TensorDataset(x, (x.sum(1) > 0).long()), batch_size=16, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)


def accuracy(loader: DataLoader) -> float:
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for inputs, labels in loader:
            correct += int((model(inputs).argmax(1) == labels).sum())
            total += len(labels)
    model.train()
    return correct / total


for epoch in range(num_epochs):
    batch_size = len(next(iter(train_loader))[0])
    for inputs, labels in train_loader:
        loss = torch.nn.functional.cross_entropy(model(inputs), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    print(f"epoch {epoch} (batch {batch_size}): train accuracy {accuracy(train_loader):.2f}")
print("TRAINED")
