"""What pytorch/examples' imagenet/main.py uses of torchvision, for machines where torchvision
does not install beside the project's torch (the CPU build). ``models`` holds faithful copies
of torchvision's ResNet-18 and ResNet-50 (same layers, same initialisation); ``datasets``
FakeData makes the same kind of random images (a normal sample per index, quantised to 8 bits
as a PIL image would be, then ``ToTensor``). The benchmark puts this folder first on the
script's path, so the script runs unmodified."""

from torchvision import datasets, models, transforms

__all__ = ["datasets", "models", "transforms"]
