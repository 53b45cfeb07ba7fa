"""Epochs over hand-made minibatches (a permutation sliced into batches, no DataLoader),
hand-written SGD, then a test pass over held-out data: only the final phase prints."""

import torch

torch.manual_seed(0)
x_train, x_test = torch.randn(10_000, 4), torch.randn(2_000, 4)
w_true = torch.tensor([[1.0], [-2.0], [0.5], [3.0]])
y_train, y_test = x_train @ w_true, x_test @ w_true
model = torch.nn.Linear(4, 1)
epochs, batch_size, lr = 30, 16, 0.05

for epoch in range(epochs):
    perm = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(epoch))
    for i in range(0, len(x_train), batch_size):
        idx = perm[i : i + batch_size]
        loss = torch.nn.functional.mse_loss(model(x_train[idx]), y_train[idx])
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= lr * p.grad

with torch.no_grad():
    test_loss = sum(
        torch.nn.functional.mse_loss(model(x_test[i : i + 100]), y_test[i : i + 100]).item()
        for i in range(0, len(x_test), 100)
    )
print(f"FINAL: test loss {test_loss:.3f}")
