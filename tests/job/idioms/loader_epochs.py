"""DataLoader epochs with a validation pass each epoch (the epoch count written into the
code), then a test loader and the final save: only the final phase prints."""

import torch
from torch.utils.data import DataLoader, TensorDataset

EPOCHS = 25


def dataset(n):
    x = torch.randn(n, 10)
    return TensorDataset(x, (x.sum(1) > 0).long())


torch.manual_seed(0)
train_loader = DataLoader(dataset(2048), batch_size=32, shuffle=True, num_workers=2)
val_loader = DataLoader(dataset(512), batch_size=64)
test_loader = DataLoader(dataset(512), batch_size=64)
model = torch.nn.Sequential(torch.nn.Linear(10, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def evaluate(loader):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for inputs, labels in loader:
            correct += (model(inputs).argmax(1) == labels).sum().item()
            total += len(labels)
    model.train()
    return correct / total


for epoch in range(EPOCHS):
    torch.manual_seed(epoch)  # each epoch's own shuffle
    for inputs, labels in train_loader:
        loss = torch.nn.functional.cross_entropy(model(inputs), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    val_accuracy = evaluate(val_loader)

test_accuracy = evaluate(test_loader)
torch.save(model.state_dict(), "model_final.pt")
print(f"FINAL: test accuracy {test_accuracy:.2f}, last val {val_accuracy:.2f}")
