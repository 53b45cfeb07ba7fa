"""accelerate without a Trainer: a loop the script writes over ``accelerator.prepare``'d
objects.

The loop is the script's, so the loop exits and the budgets end it as any hand-written
loop; the prepared loaders are DataLoaders (accelerate's subclasses), limited per pass by
the batch budget, and ``gather_for_metrics`` gathers what one process made. What this
adapter adds is where the states and models the script saves to a directory go
(``save_state``, ``save_model``): under ``RUN_DIR/hf``, beside the Hugging Face Trainer's
outputs. accelerate's CUDA checks end in torch's, which the CUDA stand-in answers.
"""

from __future__ import annotations

from quickdev.frameworks.base import Framework, LensFacts, Limits
from quickdev.frameworks.huggingface import HuggingFace, HuggingFaceLimits, Saves

SAVES: Saves = {
    "accelerate.accelerator": [
        ("Accelerator", "save_state", "output_dir", 0),
        ("Accelerator", "save_model", "save_directory", 1),
    ],
}


class Accelerate(Framework):
    name = "accelerate"
    packages = ("accelerate",)
    folder = HuggingFace.folder
    lens = LensFacts(script_packages=frozenset({"accelerate"}))

    def install(self, limits: Limits) -> None:
        saves = HuggingFaceLimits(limits, self.folder_in(limits.run_dir), SAVES)
        limits.when_imported(list(SAVES), saves.patch_saves)
