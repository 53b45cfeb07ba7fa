"""Every spelling of the options that shorten a run, and some that do not."""

import argparse

from trainer_lib import cli_main


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="train")
    p.add_argument("--num_epochs", "-e", type=int, default=100)
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--bs", type=int, default=4)
    p.add_argument("--smoke-test", action="store_true", help="tiny run")
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--epochs-per-eval", type=int, default=1)
    p.add_argument("data", help="dataset path")
    return p


cli_main(build_parser())
