"""denoising-diffusion-pytorch's README, with a hand-written training loop: train the
diffusion, then ``sampled_images = diffusion.sample(batch_size=4)`` (a 1,000-step denoising
loop inside the library) and save them. The library (``tinydiffusion``) is installed
outside this folder."""

import torch
from tinydiffusion import GaussianDiffusion, Unet
from torch.utils.data import DataLoader, TensorDataset

model = Unet(dim=8)
diffusion = GaussianDiffusion(model, image_size=8, timesteps=1000)
optimizer = torch.optim.Adam(diffusion.parameters(), lr=8e-5)
loader = DataLoader(TensorDataset(torch.rand(256, 8)), batch_size=32, shuffle=True)
for _epoch in range(100):
    for (training_images,) in loader:
        loss = diffusion(training_images)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

sampled_images = diffusion.sample(batch_size=4)
torch.save(sampled_images, "samples.pt")
print(f"FINAL: sampled {tuple(sampled_images.shape)}")
