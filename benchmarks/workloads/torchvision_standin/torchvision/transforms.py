"""The transforms imagenet/main.py names, on 8-bit CHW tensors (where torchvision takes PIL
images); only ToTensor and Normalize run with --dummy."""

from __future__ import annotations

import torch


class ToTensor:
    def __call__(self, pic: torch.Tensor) -> torch.Tensor:
        return pic.float().div(255)


class Normalize:
    def __init__(self, mean, std):
        self.mean = torch.tensor(mean).view(-1, 1, 1)
        self.std = torch.tensor(std).view(-1, 1, 1)

    def __call__(self, tensor: torch.Tensor) -> torch.Tensor:
        return (tensor - self.mean) / self.std


class Compose:
    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for transform in self.transforms:
            img = transform(img)
        return img


def _unsupported(name: str) -> type:
    class Unsupported:
        def __init__(self, *args, **kwargs):
            raise NotImplementedError(f"{name} needs real torchvision (run with --dummy)")

    return Unsupported


RandomResizedCrop = _unsupported("RandomResizedCrop")
RandomHorizontalFlip = _unsupported("RandomHorizontalFlip")
Resize = _unsupported("Resize")
CenterCrop = _unsupported("CenterCrop")
