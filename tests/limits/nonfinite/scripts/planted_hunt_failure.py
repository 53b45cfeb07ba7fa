"""A small regression fit, with a fault planted in the NaN hunt itself, not in this script's
arithmetic: no real failure of the hunt is known once writes to views under no_grad are
followed, so the hunt's check of one call is made to raise from here (the hunt runs in this
process). It fails for tensors of one shape: the hidden activations, (16, 7).

``--nan-at N``: step N's loss takes the log of a zero, a real fault the hunt must still find.
"""

import sys

import torch
from torch import nn


def plant_a_failure_in_the_hunt():
    checks = sys.modules.get("quickdev.limits.nonfinite.forward")
    if checks is None:  # not under the hunt
        return
    real = checks.all_finite

    def failing(t):
        if tuple(t.shape) == (16, 7):
            raise RuntimeError("planted failure of the NaN hunt's check")
        return real(t)

    checks.all_finite = failing


def main():
    nan_at = int(sys.argv[sys.argv.index("--nan-at") + 1]) if "--nan-at" in sys.argv else None
    plant_a_failure_in_the_hunt()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 7), nn.Tanh(), nn.Linear(7, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(1, 21):
        x = torch.randn(16, 3)
        y = x.sum(dim=1, keepdim=True)
        error = (model(x) - y) ** 2
        if step == nan_at:
            error = error * torch.log(torch.zeros(16, 1))
        loss = error.mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(loss.item())


if __name__ == "__main__":
    main()
