"""torchvision.datasets.FakeData: a random image and label per index, made the same way."""

from __future__ import annotations

import torch
from torch.utils.data import Dataset


class FakeData(Dataset):
    def __init__(
        self,
        size=1000,
        image_size=(3, 224, 224),
        num_classes=10,
        transform=None,
        target_transform=None,
        random_offset=0,
    ):
        self.size = size
        self.image_size = image_size
        self.num_classes = num_classes
        self.transform = transform
        self.target_transform = target_transform
        self.random_offset = random_offset

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        if index >= len(self):
            raise IndexError(f"{type(self).__name__} index out of range")
        # As torchvision: the sample's own seed, the global generator left as it was.
        rng_state = torch.get_rng_state()
        torch.manual_seed(index + self.random_offset)
        img = torch.randn(*self.image_size)
        target = torch.randint(0, self.num_classes, size=(1,), dtype=torch.long)[0]
        torch.set_rng_state(rng_state)
        # ToPILImage of a float image: scaled to bytes (the PIL image's 8 bits).
        img = img.mul(255).byte()
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target.item()
