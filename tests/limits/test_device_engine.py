"""The device engine in process: the mapping itself, and the Patcher contract (undo)."""

from __future__ import annotations

import pickle

import torch
import torch.distributed as dist
from quickdev.limits import device
from quickdev.limits.device.engine import DeviceEngine
from quickdev.limits.device.functions import _OWN_HANDLER, device_functions
from quickdev.limits.patching import Patcher
from torch.nn.parallel import DistributedDataParallel
from torch.overrides import _get_current_function_mode_stack


def test_every_device_form_maps_to_the_cpu() -> None:
    engine = DeviceEngine("cpu", "cpu")
    cpu = torch.device("cpu")
    for asked in ("cuda", "cuda:3", torch.device("cuda", 1), 0, 2, "mps"):
        assert engine.target(asked) == cpu, asked
    for kept in ("cpu", "meta", None, torch.float16, True):
        assert engine.target(kept) is None, kept


def test_missing_gpu_indices_land_on_one_the_machine_has() -> None:
    auto = DeviceEngine("auto", "cuda:0", cuda_count=1)
    assert auto.target("cuda:3") == torch.device("cuda:0")
    assert auto.target(5) == torch.device("cuda:0")
    assert auto.target("cuda:0") is None and auto.target("cuda") is None
    two = DeviceEngine("auto", "cuda:0", cuda_count=2)
    assert two.target("cuda:1") is None  # a GPU the machine has stays
    pinned = DeviceEngine("cuda:1", "cuda:1", cuda_count=2)
    assert pinned.target("cuda:0") == torch.device("cuda:1")


def test_install_then_undo_leaves_torch_as_it_was() -> None:
    before = {
        "device": torch.device,
        "Generator": torch.Generator,
        "load": torch.load,
        "set_device": torch.cuda.set_device,
        "init": dist.init_process_group,
        "ddp": DistributedDataParallel.__init__,
        "autocast": torch.amp.autocast_mode.autocast.__init__,
        "autocast enter": torch.amp.autocast_mode.autocast.__enter__,
        "autocast exit": torch.amp.autocast_mode.autocast.__exit__,
    }
    modes = len(_get_current_function_mode_stack())
    patcher = Patcher()
    engine = device.install(patcher, "cpu", "cpu")
    try:
        assert torch.zeros(2, device="cuda").device.type == "cpu"
        assert torch.ones(2).to(1).pin_memory().device.type == "cpu"
        assert isinstance(torch.device(0), torch.device)
        torch.cuda.set_device(3)
        with torch.autocast("cuda", dtype=torch.float16):
            computed = (torch.ones(2, 2) @ torch.ones(2, 2)).dtype
        # What is fast on this CPU (limits/device/autocast.py), as the result says.
        (choice,) = engine.report().autocast
        assert str(computed) == f"torch.{choice['ran']}"
        assert engine.report().remaps["torch.cuda.set_device"] == 1
    finally:
        patcher.undo_all()
    after = {
        "device": torch.device,
        "Generator": torch.Generator,
        "load": torch.load,
        "set_device": torch.cuda.set_device,
        "init": dist.init_process_group,
        "ddp": DistributedDataParallel.__init__,
        "autocast": torch.amp.autocast_mode.autocast.__init__,
        "autocast enter": torch.amp.autocast_mode.autocast.__enter__,
        "autocast exit": torch.amp.autocast_mode.autocast.__exit__,
    }
    assert after == before
    assert len(_get_current_function_mode_stack()) == modes


def test_scripted_code_still_compiles_the_wrapped_factories() -> None:
    patcher = Patcher()
    device.install(patcher, "cpu", "cpu")
    try:

        def make(n: int) -> torch.Tensor:
            return torch.zeros(n) + torch.arange(n)

        assert torch.jit.script(make)(3).tolist() == [0.0, 1.0, 2.0]
    finally:
        patcher.undo_all()


def test_devices_still_pickle_while_the_engine_stands_in_for_torch_device() -> None:
    """Trainer states and optimizer checkpoints hold torch.device objects; saving them
    must not trip over the stand-in (it did, inside Hugging Face's Trainer)."""
    patcher = Patcher()
    device.install(patcher, "cpu", "cpu")
    try:
        blob = pickle.dumps({"where": torch.device("cpu"), "gpu": torch.device(0)})
    finally:
        patcher.undo_all()
    loaded = pickle.loads(blob)
    assert type(loaded["where"]) is torch.device and loaded["where"].type == "cpu"
    assert loaded["gpu"] == torch.device("cuda", 0)


def test_every_function_with_a_device_argument_is_found() -> None:
    """The scan asks only for the schemas of torch's own names; the whole registry, read
    schema by schema, names the same functions (torch.tensor, zeros_like, fft.fftfreq...)."""
    in_registry = set()
    for schema in torch._C._jit_get_all_schemas():
        namespace, _, name = schema.name.partition("::")
        public = namespace == "aten" and not name.startswith("_") and name not in _OWN_HANDLER
        if public and any(argument.name == "device" for argument in schema.arguments):
            in_registry.add(name)
    expected = []
    for name in sorted(in_registry):
        for owner, attribute in ((torch, name), (torch.Tensor, name), (torch.fft, name[4:])):
            if attribute and callable(getattr(owner, attribute, None)):
                expected.append((owner, attribute, name))
                break
    found = list(device_functions())
    assert found == expected
    assert {"tensor", "zeros_like", "fft_fftfreq", "new_empty"} <= {name for *_, name in found}
