"""Resume from a checkpoint a multi-GPU run saved on cuda:1 (path in argv[1])."""

import sys

import torch
from torch import nn

model = nn.Linear(4, 2).to("cuda:1")
state = torch.load(sys.argv[1], map_location="cuda:1")
model.load_state_dict(state["model"])
nested = torch.load(sys.argv[1], map_location={"cuda:1": "cuda:0"})
unmapped = torch.load(sys.argv[1])
where = {
    next(model.parameters()).device.type,
    nested["model"]["weight"].device.type,
    unmapped["model"]["weight"].device.type,
}
print("LOADED", sorted(where), float(state["model"]["weight"].sum()))
