"""A small copy of denoising-diffusion-pytorch's GaussianDiffusion, installed as a library
would be (outside the script's folder: the job does not rewrite it). Training calls the
diffusion's forward; ``sample()`` calls the denoiser itself, once per timestep, in its own
``for t in tqdm(reversed(range(...)))`` loop, a thousand times."""

import torch
from torch import nn
from tqdm.auto import tqdm


class Unet(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim + 1, 32), nn.SiLU(), nn.Linear(32, dim))

    def forward(self, x, time):
        return self.net(torch.cat([x, time.float()[:, None] / 1000], dim=1))


class GaussianDiffusion(nn.Module):
    def __init__(self, model, image_size, timesteps=1000):
        super().__init__()
        self.model, self.image_size, self.num_timesteps = model, image_size, timesteps
        self.register_buffer("betas", torch.linspace(1e-4, 0.02, timesteps))

    def forward(self, img):
        t = torch.randint(0, self.num_timesteps, (img.shape[0],))
        noise = torch.randn_like(img)
        alpha = (1 - self.betas[t])[:, None]
        model_out = self.model(alpha.sqrt() * img + (1 - alpha).sqrt() * noise, t)
        return nn.functional.mse_loss(model_out, noise)

    @torch.inference_mode()
    def p_sample(self, x, t):
        batched_times = torch.full((x.shape[0],), t, dtype=torch.long)
        return x - self.betas[t] * self.model(x, batched_times)

    @torch.inference_mode()
    def p_sample_loop(self, shape):
        img = torch.randn(shape)
        imgs = [img]
        for t in tqdm(reversed(range(0, self.num_timesteps)), total=self.num_timesteps):
            img = self.p_sample(img, t)
            imgs.append(img)

        ret = img.clamp(-1.0, 1.0)
        return ret

    @torch.inference_mode()
    def sample(self, batch_size=16):
        return self.p_sample_loop((batch_size, self.image_size))
